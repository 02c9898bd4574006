"""The calling side: hand a command to the warm process, or say that none ran it."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
from types import FrameType
from typing import Any

from planledger.clients.exits import EXIT_UNAVAILABLE
from planledger.clients.hooks.guard import deadline_seconds
from planledger.clients.warm.identity import code_key, private_folder, socket_path
from planledger.clients.warm.protocol import Lines, send_request

ACCEPT_SECONDS = 5.0  # a warm process forks at once: this only bounds a wedged one
HOOK_DEADLINE_SECONDS = 25.0  # the longest default of the hook handlers
HOOK_MARGIN_SECONDS = 2.0


def call(args: list[str], started: float) -> int | None:
    """Run `args` in the warm process and return its exit code; None when it did not run
    them (then it is started for next time, and the caller runs the command itself).
    `started` is when this caller began (time.monotonic()): a hook's deadline counts from it."""
    try:
        cwd = os.getcwd()
    except OSError:
        return None  # a folder that is gone: the command says so itself
    key = code_key()
    path = socket_path(key)
    if not private_folder(path.parent):
        return None  # someone else's folder: never talk to (or start) a process there
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(ACCEPT_SECONDS)
    try:
        connection.connect(str(path))
    except OSError:
        connection.close()
        start(key)
        return None
    args = with_proposal_id(args)
    hook = is_hook(args)
    with connection, standard_fds() as fds:
        request = {
            "op": "run",
            "args": args,
            "cwd": cwd,
            "env": dict(os.environ),
            "umask": current_umask(),
            "started": started,
        }
        lines = Lines(connection)
        try:
            send_request(connection, request, fds)
            connection.shutdown(socket.SHUT_WR)
        except OSError:
            return None  # it closed before reading the command: nothing was done
        try:
            accepted = lines.next()
        except OSError:  # no word within the time: it may yet have taken the command
            return unanswered(args, hook)
        if accepted is None:
            return None  # it ended before taking the command: nothing was done
        forward_signals(accepted.get("pid"))
        connection.settimeout(hook_seconds() if hook else None)
        try:
            answer = lines.next()
        except OSError:
            answer = None
    if answer is not None and isinstance(answer.get("code"), int):
        code: int = answer["code"]
        return code
    return unanswered(args, hook)


def unanswered(args: list[str], hook: bool) -> int:
    """The command was taken but no exit code came back: say so, never run it again."""
    if hook:
        sys.stderr.write(
            f"planledger hook {args[-1]}: the warm process gave no answer in time; the agent "
            "goes on\n"
        )
        return 0
    retry = ""
    if "--proposal-id" in args:
        retry = f" (retry with --proposal-id {args[args.index('--proposal-id') + 1]})"
    sys.stderr.write(
        "planledger: error: the warm process stopped before answering; the command may or may "
        f"not have taken effect{retry}\n"
    )
    return EXIT_UNAVAILABLE


def forward_signals(pid: object) -> None:
    """Ctrl-C, a hang-up or a termination of this caller reaches the child running the
    command, as it would reach a cold process."""
    if not isinstance(pid, int) or pid <= 1:
        return

    def forward(signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)


def current_umask() -> int:
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def command_of(args: list[str]) -> list[str]:
    index = 0
    while index < len(args) and args[index].startswith("--database"):
        index += 1 if "=" in args[index] else 2
    return args[index:]


def is_hook(args: list[str]) -> bool:
    return command_of(args)[:1] == ["hook"]


def with_proposal_id(args: list[str]) -> list[str]:
    """A `plan update` gets its proposal id here when it names none, so that a caller left
    without an answer can say which id to retry with."""
    command = command_of(args)
    if command[:2] != ["plan", "update"] or "--" in command:
        return args
    if any(arg == "--proposal-id" or arg.startswith("--proposal-id=") for arg in command):
        return args
    if any(arg in ("-h", "--help") for arg in command):
        return args
    return [*args, "--proposal-id", os.urandom(16).hex()]


def hook_seconds() -> float:
    """How long a hook's caller waits for the warm process: past the hook's own deadline (the
    warm process gives up by then) by a margin."""
    return deadline_seconds(HOOK_DEADLINE_SECONDS) + HOOK_MARGIN_SECONDS


@contextlib.contextmanager
def standard_fds() -> Any:
    """Descriptors 0, 1 and 2 to hand over; /dev/null for any that is closed."""
    opened: list[int] = []
    fds: list[int] = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            fds.append(fd)
        except OSError:
            opened.append(os.open(os.devnull, os.O_RDWR))
            fds.append(opened[-1])
    try:
        yield fds
    finally:
        for fd in opened:
            os.close(fd)


def start(key: str) -> None:
    """The warm process for `key`, detached (it exits at once if one is running)."""
    import subprocess

    with contextlib.suppress(OSError):
        subprocess.Popen(
            # -P: never import from the caller's folder (a project's own `domain` package)
            [sys.executable, "-P", "-m", "planledger.clients.warm.server", key],
            cwd="/",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
