"""The warm side: one process per key, holding a lock for its whole life, that forks a child
per command. The parent never reads a request (a slow caller cannot hold it), never opens a
store and never runs a command; it only accepts, forks and reaps.

    python -m planledger.clients.warm.server KEY
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import sys
import time
import traceback
from pathlib import Path
from types import FrameType
from typing import Any

from planledger.clients.warm import IDLE_ENV, IDLE_SECONDS
from planledger.clients.warm.identity import code_key, private_folder, socket_path
from planledger.clients.warm.protocol import receive_request, send_line

REQUEST_SECONDS = 5.0  # a caller sends its request at once
TICK_SECONDS = 2.0  # how often an idle process checks its socket and its idle time


class Stop(Exception):
    """SIGTERM (from `planledger warm stop`): leave cleanly."""


def serve(key: str) -> None:
    """Answer commands on the socket of `key` until idle or stopped."""
    path = socket_path(key)
    if not private_folder(path.parent):
        return
    lock = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another warm process holds this key
    if not warm_up() or code_key() != key:
        return  # threads left behind, or the code changed while this one started
    with contextlib.suppress(OSError):
        path.unlink()  # we hold the lock: a socket left here belongs to a dead process
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    os.chmod(path, 0o600)
    ours = os.stat(path)
    server.listen(128)
    server.settimeout(min(TICK_SECONDS, idle_seconds()))
    status: dict[str, Any] = {"pid": os.getpid(), "key": key, "started": time.time()}
    status |= {"python": sys.executable, "idle_seconds": idle_seconds(), "served": 0}
    signal.signal(signal.SIGCHLD, reap)
    signal.signal(signal.SIGTERM, stop)
    last_call = time.monotonic()
    try:
        while True:
            try:
                connection, _ = server.accept()
            except TimeoutError:
                if time.monotonic() - last_call >= idle_seconds() or not still_ours(path, ours):
                    return
                continue
            except OSError:  # out of descriptors, say: callers meanwhile run cold
                time.sleep(0.1)
                continue
            last_call = time.monotonic()
            with connection:
                try:
                    forked = os.fork()
                except OSError:
                    continue  # the caller sees the connection end untaken and runs cold
                if forked == 0:
                    try:  # a forked child never returns into this loop, whatever happens
                        server.close()
                        child(connection, status)
                    finally:
                        os._exit(0)
            status["served"] += 1
    except Stop:
        return
    finally:
        if still_ours(path, ours):
            with contextlib.suppress(OSError):
                path.unlink()  # only the socket this process made
        server.close()


def still_ours(path: Path, ours: os.stat_result) -> bool:
    """The socket at `path` is the one this process bound (not removed, not replaced): when it
    is gone, callers can no longer reach this process, so it leaves and lets another start."""
    try:
        now = os.stat(path)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (ours.st_dev, ours.st_ino)


def idle_seconds() -> float:
    try:
        return float(os.environ.get(IDLE_ENV) or IDLE_SECONDS)
    except ValueError:
        return IDLE_SECONDS


def reap(signum: int, frame: FrameType | None) -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def stop(signum: int, frame: FrameType | None) -> None:
    raise Stop


def warm_up() -> bool:
    """Import what the commands use and build every model's validators (pydantic builds them
    on first use), so each child starts with them; true when no thread was left running (a
    process with threads must not fork)."""
    import threading

    import rich.console
    import rich.table  # noqa: F401
    import typer  # noqa: F401

    import planledger.clients.entry
    import planledger.clients.fastpath
    import planledger.clients.hooks.claude_code
    import planledger.clients.hooks.codex
    import planledger.clients.hooks.gemini
    import planledger.clients.render
    import planledger.service
    import planledger.storage.sqlite_recorder  # noqa: F401
    from domain.models import Model

    pending: list[type[Model]] = [Model]
    while pending:
        model = pending.pop()
        pending += model.__subclasses__()
        with contextlib.suppress(Exception):
            model.model_rebuild()
    return threading.active_count() == 1


def child(connection: socket.socket, status: dict[str, Any]) -> None:
    """One command, in a forked child: the caller's descriptors, folder and environment, the
    command run as a cold process runs it, its exit code sent back."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    connection.settimeout(REQUEST_SECONDS)
    try:
        request, fds = receive_request(connection)
    except (OSError, ValueError):
        return  # a probe, or not a caller
    connection.settimeout(None)
    operation = request.get("op")
    with contextlib.suppress(OSError):
        if operation == "status":
            send_line(connection, {**status, "pid": os.getppid()})
        elif operation == "stop":
            os.kill(os.getppid(), signal.SIGTERM)
            send_line(connection, {"stopped": os.getppid()})
        elif operation == "run" and len(fds) == 3:
            run(connection, request, fds)


def run(connection: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    from planledger.clients.hooks import guard

    try:
        args = [str(arg) for arg in request["args"]]
        os.chdir(str(request["cwd"]))
        os.environ.clear()
        os.environ.update({str(name): str(value) for name, value in request["env"].items()})
        started = float(request["started"])
        os.umask(int(request["umask"]))
    except (KeyError, TypeError, ValueError, AttributeError, OSError):
        return  # not taken: the caller runs it itself
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
    send_line(connection, {"accepted": True, "pid": os.getpid()})

    def answer(code: int) -> None:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        with contextlib.suppress(OSError):
            send_line(connection, {"code": code})

    guard.before_exit.append(answer)  # a hook that gives up at its deadline still answers
    from planledger.clients.entry import run_here

    try:
        code = run_here(args, started=started)  # a hook's deadline counts from the caller's
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except KeyboardInterrupt:  # the caller's Ctrl-C, passed on
        sys.stderr.write("planledger: error: interrupted\n")
        code = 130
    except BaseException:  # as a cold process would: the traceback, exit 1
        traceback.print_exc()
        code = 1
    answer(code)


def main() -> None:
    if len(sys.argv) == 2:
        serve(sys.argv[1])


if __name__ == "__main__":
    main()
