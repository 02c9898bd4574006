"""A warm process for the commands agents run on every tool call (`plan update`, `hook`).

A `planledger` process spends most of its time importing the domain (pydantic, eventsourcing)
before it does ~10 ms of work. So `session open`, or else the first such command, on a SQLite
store starts, in the background, one warm process per (store, home, installed code) that keeps
the service open and serves later commands over a UNIX socket (owner-only, under the temporary
folder); each command then costs an interpreter start and a round trip. The warm process
serves one command at a time, runs exactly the code a cold process would (the fast path), and
exits after PLANLEDGER_WARM_IDLE seconds (default 600) without a command.

Nothing depends on it: when no warm process answers, the command runs in its own process as
before (and starts one for next time). PLANLEDGER_NO_WARM=1 turns it off.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

OFF_ENV = "PLANLEDGER_NO_WARM"
IDLE_ENV = "PLANLEDGER_WARM_IDLE"
IDLE_SECONDS = 600.0
ANSWER_TIMEOUT = 60.0
PACKAGES = ("domain", "projections", "planledger")
# The caller's variables a command run here reads (a hook's shared task list, its deadline):
# set for that command only, as the caller had them.
FORWARDED_ENV = ("CLAUDE_CODE_TASK_LIST_ID", "PLANLEDGER_HOOK_DEADLINE")


def enabled(database: str | None) -> bool:
    """Only for SQLite stores (the embedded default, where start-up is what a call costs)."""
    if os.environ.get(OFF_ENV):
        return False
    url = database or os.environ.get("PLANLEDGER_DATABASE_URL") or ""
    return not url.startswith(("postgresql:", "postgres:"))


def socket_path(database: str | None) -> Path:
    """One socket per store, home and installed code (a code change starts a new process)."""
    from planledger.storage.settings import database_settings, home_dir

    settings = database_settings(database)
    store = str(Path(settings.env["SQLITE_DBNAME"]).resolve())
    root = Path(__file__).resolve().parents[2]
    stamps = [str(os.stat(root / package).st_mtime_ns) for package in PACKAGES]
    key = "|".join([store, str(home_dir().resolve()), sys.prefix, *stamps])
    folder = Path(tempfile.gettempdir()) / f"planledger-{os.getuid()}"
    return folder / f"{hashlib.sha256(key.encode()).hexdigest()[:20]}.sock"


# -- the calling side ----------------------------------------------------------------------------


def read_stdin() -> bytes:
    """Standard input as the command would read it (at most what a proposal may hold)."""
    from domain.limits import MAX_PAYLOAD_BYTES

    if sys.stdin is None or sys.stdin.isatty():
        return b""
    return sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)


def text_stream(data: bytes) -> io.TextIOWrapper:
    """`data` as a standard input (with its bytes under `.buffer`, as the real one)."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")


def call(args: list[str], database: str | None, stdin: bytes) -> int | None:
    """Run `args` in the warm process; None when none answers (it is then started for next
    time, and the caller runs the command itself)."""
    path = socket_path(database)
    if not private_folder(path.parent):
        return None  # someone else's folder: never talk to (or start) a process there
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(ANSWER_TIMEOUT)
    try:
        client.connect(str(path))
    except OSError:
        client.close()
        start(path, database)
        return None
    request = {
        "args": args,
        "stdin": base64.b64encode(stdin).decode(),
        "cwd": os.getcwd(),
        "env": {name: os.environ[name] for name in FORWARDED_ENV if name in os.environ},
    }
    with client:
        try:
            client.sendall(json.dumps(request).encode() + b"\n")
            client.shutdown(socket.SHUT_WR)
            answer = json.loads(read_all(client))
        except (OSError, ValueError):
            # Sent but not answered: the command may have run, so never run it again here.
            sys.stderr.write(
                "planledger: error: the warm process stopped before answering; the command may "
                "or may not have been recorded (retry with the same --proposal-id)\n"
            )
            return 5
    sys.stdout.write(answer["stdout"])
    sys.stderr.write(answer["stderr"])
    return int(answer["code"])


def prepare(database: str | None) -> None:
    """Start the warm process for `database` unless one answers (or it is off): a command
    that opens a session calls this, so the agent's first plan update is already warm."""
    if not enabled(database):
        return
    path = socket_path(database)
    if not private_folder(path.parent):
        return
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        start(path, database)
    finally:
        probe.close()


def private_folder(folder: Path) -> bool:
    """The socket folder exists (made now if need be), is ours and nobody else's."""
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700)
    try:
        status = folder.lstat()
    except OSError:
        return False
    return (
        stat.S_ISDIR(status.st_mode)
        and status.st_uid == os.getuid()
        and not (status.st_mode & 0o077)
    )


def read_all(connection: socket.socket) -> bytes:
    chunks = []
    while chunk := connection.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def start(path: Path, database: str | None) -> None:
    """The warm process, detached, unless one is being started already."""
    path.parent.mkdir(mode=0o700, exist_ok=True)
    starting = path.with_suffix(".starting")
    try:
        if time.time() - starting.stat().st_mtime < 10:
            return
    except OSError:
        pass
    with contextlib.suppress(OSError):
        starting.touch()
        argv = [sys.executable, "-m", "planledger.clients.warm", str(path)]
        subprocess.Popen(
            [*argv, *(["--database", database] if database else [])],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )


# -- the warm side -------------------------------------------------------------------------------


def serve(path: Path, database: str | None) -> None:
    """Answer commands on `path` until idle; the service stays open between them."""
    from planledger.clients import services

    os.environ[OFF_ENV] = "1"  # commands run here never call a warm process themselves
    if not private_folder(path.parent):
        return
    server = bind(path)
    if server is None:
        return
    idle = float(os.environ.get(IDLE_ENV) or IDLE_SECONDS)
    server.settimeout(idle)
    services.keep_open()
    warm_up(database)
    try:
        while True:
            try:
                connection, _ = server.accept()
            except TimeoutError:
                return
            with connection:
                answer_one(connection, database)
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
        server.close()
        services.close_all()


def warm_up(database: str | None) -> None:
    """Open the service and build every model's validators now (they are built on first use),
    so the first command, which follows `session open` within seconds, finds them ready. A
    command arriving meanwhile waits in the socket's backlog."""
    from planledger.clients import fastpath, services  # noqa: F401 (imported to be ready)

    try:
        services.acquire(database)
    except Exception:  # the first command runs into it again and says what is wrong
        return
    from domain.models import Model

    pending: list[type[Model]] = [Model]
    while pending:
        model = pending.pop()
        pending += model.__subclasses__()
        with contextlib.suppress(Exception):
            model.model_rebuild()


def bind(path: Path) -> socket.socket | None:
    """Listen on `path`; None when another warm process already does."""
    path.parent.mkdir(mode=0o700, exist_ok=True)
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
        return None  # one is serving
    except OSError:
        with contextlib.suppress(OSError):
            path.unlink()
    finally:
        probe.close()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
    except OSError:
        server.close()
        return None  # another one won the race
    os.chmod(path, 0o600)
    server.listen(16)
    with contextlib.suppress(OSError):
        path.with_suffix(".starting").unlink()
    return server


def answer_one(connection: socket.socket, database: str | None) -> None:
    from planledger.clients.fastpath import run_local

    try:
        request: dict[str, Any] = json.loads(read_all(connection))
    except (OSError, ValueError):
        return  # a probe (`prepare`, `bind`) that only checked this process answers
    stdout, stderr = io.StringIO(), io.StringIO()
    code: int | None = 1
    saved = sys.stdin, os.getcwd()
    given: dict[str, Any] = request["env"] if isinstance(request.get("env"), dict) else {}
    saved_env = {name: os.environ.get(name) for name in FORWARDED_ENV}
    try:
        for name in FORWARDED_ENV:
            value = given.get(name)
            if isinstance(value, str):
                os.environ[name] = value
            else:
                os.environ.pop(name, None)
        os.chdir(request["cwd"])
        sys.stdin = text_stream(base64.b64decode(request["stdin"]))
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                code = run_local(list(request["args"]))
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 1
            except Exception as error:  # a bug: say it, keep serving
                stderr.write(f"planledger: error: {type(error).__name__}: {error}\n")
                code = 1
    except OSError as error:  # the caller's folder is gone
        stderr.write(f"planledger: error: {error}\n")
    finally:
        sys.stdin = saved[0]
        with contextlib.suppress(OSError):
            os.chdir(saved[1])
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    answer = {"code": 1 if code is None else code, "stdout": stdout.getvalue()}
    answer["stderr"] = stderr.getvalue()
    with contextlib.suppress(OSError):
        connection.sendall(json.dumps(answer).encode())


if __name__ == "__main__":
    arguments = sys.argv[1:]
    where = Path(arguments[0])
    given = arguments[2] if len(arguments) == 3 and arguments[1] == "--database" else None
    serve(where, given)
