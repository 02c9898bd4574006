"""Helpers of the fault suite: real `planledger` processes, servers with their own environment,
and PostgreSQL connections found (and killed) by the application name a server carries."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import psycopg
import pytest

from tests.conftest import POSTGRES_URL
from tests.e2e.test_cli import planledger_command
from tests.e2e.test_server import Server, free_port, stop

T = TypeVar("T")

STARTUP_TIMEOUT = 30.0  # a server on a loaded 2-core machine, racing others for the schema
UNAVAILABLE_WITHIN = 3.0  # the spec: exit 5 "within 3 s"
EXIT_UNAVAILABLE = 5

STRICT_1: dict[str, Any] = {
    "title": "Ship the export",
    "steps": [
        {"id": "inspect", "title": "Inspect durable state", "status": "in_progress"},
        {"id": "write", "title": "Write the archive", "status": "pending"},
    ],
}
STRICT_2: dict[str, Any] = {
    "title": "Ship the export",
    "steps": [
        {"id": "inspect", "title": "Inspect durable state", "status": "completed"},
        {"id": "write", "title": "Write the archive", "status": "in_progress"},
    ],
}


def codex(n: int) -> dict[str, Any]:
    """A Codex-form plan, different for every `n` (so every proposal is a distinct commit)."""
    return {"plan": [{"step": f"Step {n}", "status": "in_progress"}]}


def environment(home: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "PLANLEDGER_HOME": str(home), "COLUMNS": "120", **extra}
    for name in ("PLANLEDGER_DATABASE_URL", "PLANLEDGER_TOKEN", "PLANLEDGER_DEBUG"):
        env.pop(name, None)
    return env


@dataclass
class Run:
    """One finished `planledger` process."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def __str__(self) -> str:
        return (
            f"planledger {' '.join(self.args)} -> exit {self.returncode} in {self.seconds:.2f}s\n"
            f"stdout: {self.stdout[-2000:]}\nstderr: {self.stderr[-2000:]}"
        )

    def json(self) -> Any:
        return json.loads(self.stdout)


def spawn(
    home: Path, database: str, *args: str, stdin: str | None = None, **env: str
) -> subprocess.Popen[str]:
    """Start `planledger --database DATABASE ARGS...` (stdin written and closed at once)."""
    process = subprocess.Popen(
        [planledger_command(), "--database", database, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(home, **env),
    )
    assert process.stdin is not None
    with suppress(BrokenPipeError):
        process.stdin.write(stdin or "")
        process.stdin.close()
    process.stdin = None  # written: communicate() must not flush it again
    return process


def finish(
    process: subprocess.Popen[str], args: Sequence[str], started: float, timeout: float = 60.0
) -> Run:
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        pytest.fail(f"planledger {' '.join(args)} still ran after {timeout}s: {stderr[-2000:]}")
    return Run(tuple(args), process.returncode, stdout, stderr, time.monotonic() - started)


def run(
    home: Path, database: str, *args: str, stdin: str | None = None, timeout: float = 60.0
) -> Run:
    started = time.monotonic()
    return finish(spawn(home, database, *args, stdin=stdin), args, started, timeout)


def run_together(
    home: Path, database: str, commands: Sequence[tuple[Sequence[str], str | None]]
) -> list[Run]:
    """Start every command at once (args, stdin), then wait for all of them."""
    started = time.monotonic()
    processes = [spawn(home, database, *args, stdin=stdin) for args, stdin in commands]
    return [
        finish(process, args, started)
        for process, (args, _) in zip(processes, commands, strict=True)
    ]


def quickest(attempt: Callable[[], Run], bound: float, tries: int = 3) -> Run:
    """The first run of `attempt` within `bound` seconds, else the quickest of `tries`. The
    machine is shared: one run's time is noisy, while a slow product is slow every time."""
    runs = [attempt()]
    while runs[-1].seconds > bound and len(runs) < tries:
        runs.append(attempt())
    return min(runs, key=lambda done: done.seconds)


def one_line_error(run: Run) -> str:
    """The single stderr line of a failed command (asserted to be one line, no traceback)."""
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line on stderr:\n{run}"
    assert "Traceback" not in run.stderr, str(run)
    return lines[0]


def wait_until(
    probe: Callable[[], T | None], timeout: float, what: str, interval: float = 0.1
) -> T:
    """Poll `probe` until it returns something other than None, or fail after `timeout`."""
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            found = probe()
        except (httpx.TransportError, OSError) as error:
            found, last_error = None, error
        if found is not None:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout}s (last error: {last_error})")
        time.sleep(interval)


# -- servers ---------------------------------------------------------------------------------


def spawn_server(
    database: str,
    home: Path,
    logs: Path | None = None,
    env: dict[str, str] | None = None,
    preexec_fn: Callable[[], None] | None = None,
) -> Server:
    """`planledger --database URL serve --port P` on a free loopback port (not waited for);
    its output goes to a file in `logs` (default: `home`, created if need be); `preexec_fn`
    runs in the server's process before it starts (a resource limit, say)."""
    if logs is None:
        home.mkdir(parents=True, exist_ok=True)
    logs = logs or home
    port = free_port()
    log = logs / f"serve-{port}-{uuid.uuid4().hex[:6]}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [planledger_command(), "--database", database, "serve", "--port", str(port)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=environment(home, **(env or {})),
            preexec_fn=preexec_fn,
        )
    return Server(f"http://127.0.0.1:{port}", process, log)


def healthy_within(server: Server, timeout: float = STARTUP_TIMEOUT) -> str | None:
    """None once /healthz answers 200; else why not (the process died, or the time ran out)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            return f"exited with {server.process.returncode}:\n{server.output()[-3000:]}"
        with suppress(httpx.TransportError):
            if httpx.get(f"{server.url}/healthz", timeout=2.0).status_code == 200:
                return None
        time.sleep(0.05)
    return f"no 200 from /healthz in {timeout}s:\n{server.output()[-3000:]}"


@contextmanager
def servers(
    database: str, home: Path, count: int = 1, env: dict[str, str] | None = None
) -> Iterator[list[Server]]:
    """`count` servers started together, each healthy (or the test fails), stopped on exit."""
    with ExitStack() as stack:
        started: list[Server] = []
        for index in range(count):
            server = spawn_server(database, home / f"server-{index}", env=env)
            stack.callback(stop, server.process)
            started.append(server)
        problems = [
            f"server {index}: {problem}"
            for index, server in enumerate(started)
            if (problem := healthy_within(server)) is not None
        ]
        assert not problems, "\n".join(problems)
        yield started


def restart(server: Server, database: str, home: Path) -> Server:
    """The same server started again on the same port (after it was killed)."""
    port = server.url.rsplit(":", 1)[1]
    log = home / f"serve-{port}-{uuid.uuid4().hex[:6]}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [planledger_command(), "--database", database, "serve", "--port", port],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=environment(home),
        )
    return Server(server.url, process, log)


# -- PostgreSQL --------------------------------------------------------------------------------


def admin() -> psycopg.Connection[Any]:
    """A connection of the test itself, named so it is never mistaken for a server's."""
    return psycopg.connect(
        POSTGRES_URL, autocommit=True, connect_timeout=5, application_name="faults-admin"
    )


def app_name() -> str:
    """A unique PGAPPNAME: libpq gives it to every connection of a process started with it."""
    return f"faults-{uuid.uuid4().hex[:12]}"


def connections_of(application_name: str) -> int:
    with admin() as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND application_name = %s",
            (application_name,),
        ).fetchone()
    assert row is not None
    return int(row[0])


def terminate_connections_of(application_name: str) -> int:
    """pg_terminate_backend on the connections named `application_name` only (other tests
    share this PostgreSQL); returns how many were terminated."""
    with admin() as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND application_name = %s",
            (application_name,),
        ).fetchall()
    return sum(1 for (done,) in rows if done)


def schema_tables(url: str) -> set[str]:
    schema = url.rsplit("schema=", 1)[1]
    with admin() as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
        ).fetchall()
    return {str(name) for (name,) in rows}
