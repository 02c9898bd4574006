"""What the fault campaign (bench/fault_campaign.py) shares: a sandbox of its own (TMPDIR, so
its warm processes are its own), `planledger` processes run, killed and timed, the warm
processes and their children, the recorded decisions of a session read back cold, an SQLite
store held locked, and a TCP proxy that takes PostgreSQL away from the processes behind it."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import struct
import subprocess
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import planledger

LINGER_RESET = struct.pack("ii", 1, 0)  # close with a RST, as a crashed host does
SCRUBBED = (
    "PLANLEDGER_DATABASE_URL",
    "PLANLEDGER_TOKEN",
    "PLANLEDGER_DEBUG",
    "PLANLEDGER_NO_WARM",
    "PLANLEDGER_HOOK_DEADLINE",
    "CLAUDE_CODE_TASK_LIST_ID",
)
HUMAN_COMMITTED = re.compile(r"^committed revision (\d+)", re.M)
HUMAN_REJECTED = re.compile(r"^rejected \(plan stays at revision (\d+)\)", re.M)


def codex_plan(text: str, valid: bool = True) -> str:
    """A Codex-form plan naming `text` (unique text: every valid one is a distinct commit);
    invalid: two steps in progress (rejected with multiple_in_progress)."""
    steps = [{"step": f"{text}", "status": "in_progress"}]
    steps.append({"step": f"{text} next", "status": "in_progress" if not valid else "pending"})
    return json.dumps({"plan": steps})


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


# -- the sandbox -------------------------------------------------------------------------------


class Sandbox:
    """A short folder under /tmp that is this campaign's TMPDIR (set for this process too, so
    that the warm processes it starts, finds and stops are its own), with homes inside it."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="fc", dir="/tmp"))
        os.environ["TMPDIR"] = str(self.root)
        tempfile.tempdir = str(self.root)
        for name in SCRUBBED:
            os.environ.pop(name, None)
        self.command = planledger()

    def home(self, name: str) -> Path:
        home = self.root / f"{name}-{uuid.uuid4().hex[:6]}"
        home.mkdir()
        return home

    def env(self, home: Path, warm: bool, **extra: str) -> dict[str, str]:
        env = {**os.environ, "PLANLEDGER_HOME": str(home), "COLUMNS": "120"}
        env["PLANLEDGER_WARM_IDLE"] = "300"
        env["PLANLEDGER_NO_WARM"] = "" if warm else "1"
        return {**env, **extra}

    def close(self) -> None:
        stop_warm()
        shutil.rmtree(self.root, ignore_errors=True)


# -- processes ---------------------------------------------------------------------------------


@dataclass
class Done:
    """One finished `planledger` process (code None: it hung and was killed)."""

    args: tuple[str, ...]
    code: int | None
    stdout: str
    stderr: str
    seconds: float

    def brief(self) -> str:
        err = self.stderr.strip().splitlines()[-3:]
        return (
            f"planledger {' '.join(self.args)[:160]} -> exit {self.code} in "
            f"{self.seconds:.2f}s; stdout {self.stdout.strip()[:300]!r}; stderr {err!r}"
        )


def spawn(
    sandbox: Sandbox, args: list[str], stdin: str, env: dict[str, str]
) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sandbox.command, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdin is not None
    with contextlib.suppress(BrokenPipeError, OSError):
        process.stdin.write(stdin)
        process.stdin.close()
    process.stdin = None
    return process


def finish(
    process: subprocess.Popen[str], args: list[str], started: float, timeout: float = 90.0
) -> Done:
    try:
        stdout, stderr = process.communicate(timeout=timeout)
        code: int | None = process.returncode
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        code = None
    return Done(tuple(args), code, stdout, stderr, time.monotonic() - started)


def run(
    sandbox: Sandbox, args: list[str], env: dict[str, str], stdin: str = "", timeout: float = 90.0
) -> Done:
    started = time.monotonic()
    return finish(spawn(sandbox, args, stdin, env), args, started, timeout)


def children_of(pids: set[int]) -> list[int]:
    """The processes whose parent is one of `pids` (from /proc)."""
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = Path(f"/proc/{entry}/stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid in pids:
                found.append(int(entry))
    return found


def kill(pids: list[int]) -> int:
    """SIGKILL each of `pids` that still exists; how many were hit."""
    hit = 0
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            hit += 1
    return hit


# -- warm processes (those of this sandbox's TMPDIR only) --------------------------------------


STATUS_MISSES = {"count": 0}  # status requests that found no warm process, then one on retry


def warm_statuses(expect: bool = True) -> list[dict[str, Any]]:
    """The statuses of the sandbox's warm processes. A status request sometimes fails while
    the process runs (seen with commands running at once), so an empty answer is asked again
    when one is expected; the misses are counted."""
    from planledger.clients.warm import control

    found = control.statuses()
    for _ in range(4 if expect else 0):
        if found:
            break
        time.sleep(0.05)
        found = control.statuses()
        if found:
            STATUS_MISSES["count"] += 1
    return found


def warm_pids() -> set[int]:
    return {int(status["pid"]) for status in warm_statuses() if "pid" in status}


def start_warm(timeout: float = 30.0) -> set[int]:
    """The warm process of the installed code, started if need be, and waited for."""
    from planledger.clients.warm import client
    from planledger.clients.warm.identity import code_key

    if found := warm_pids():
        return found
    client.start(code_key())
    deadline = time.monotonic() + timeout
    while not (found := warm_pids()):
        if time.monotonic() > deadline:
            raise RuntimeError("the warm process did not start")
        time.sleep(0.1)
    return found


def stop_warm() -> None:
    """Stop the sandbox's warm processes (asked again while any still answers)."""
    from planledger.clients.warm import control

    for _ in range(5):
        with contextlib.suppress(Exception):
            control.stop_all()
        time.sleep(0.2)
        if not warm_statuses(expect=False):
            return


class ChildKiller:
    """While running, SIGKILLs one random child of the sandbox's warm processes every
    `low`..`high` seconds; counts the kills that hit."""

    def __init__(self, low: float = 0.1, high: float = 0.4) -> None:
        self.low, self.high = low, high
        self.kills = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> ChildKiller:
        self._parents = warm_pids()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _loop(self) -> None:
        while not self._stop.wait(random.uniform(self.low, self.high)):
            victims = children_of(self._parents)
            if victims:
                self.kills += kill([random.choice(victims)])


# -- what a session recorded, read back cold ---------------------------------------------------


@dataclass
class Recorded:
    """The proposals of one session's history: how often each was proposed and decided, and
    each decision as (status, revision) (a rejection's revision: the one it left in place)."""

    proposed: Counter[str] = field(default_factory=Counter)
    decisions: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    revisions: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, history: dict[str, Any]) -> Recorded:
        recorded = cls()
        revision = 0
        for entry in history.get("entries", []):
            pid = str(entry.get("proposal_id"))
            if entry["kind"] == "proposed":
                recorded.proposed[pid] += 1
            elif entry["kind"] == "committed":
                revision = int(entry["revision"])
                recorded.revisions.append(revision)
                recorded.decisions.setdefault(pid, []).append(("committed", revision))
            elif entry["kind"] == "rejected":
                recorded.decisions.setdefault(pid, []).append(("rejected", revision))
        return recorded

    def decision(self, pid: str) -> tuple[str, int] | None:
        found = self.decisions.get(pid)
        return found[0] if found else None

    def committed(self, pid: str) -> bool:
        return any(kind == "committed" for kind, _ in self.decisions.get(pid, []))

    def doubled(self) -> list[str]:
        pids = set(self.proposed) | set(self.decisions)
        return sorted(p for p in pids if self.proposed[p] > 1 or len(self.decisions.get(p, [])) > 1)

    def undecided(self) -> list[str]:
        return sorted(p for p in self.proposed if p not in self.decisions)

    def gaps(self) -> bool:
        return self.revisions != list(range(1, len(self.revisions) + 1))


def cold_history(
    sandbox: Sandbox, home: Path, session: str, database: str | None = None
) -> tuple[Recorded | None, Done]:
    """`PLANLEDGER_NO_WARM=1 planledger plan history SESSION --json`, parsed."""
    args = ["plan", "history", session, "--json"]
    if database:
        args = ["--database", database, *args]
    done = run(sandbox, args, sandbox.env(home, warm=False))
    if done.code != 0:
        return None, done
    try:
        return Recorded.of(json.loads(done.stdout)), done
    except (ValueError, KeyError, TypeError):
        return None, done


def answer_of(done: Done, as_json: bool) -> tuple[str, int] | None:
    """(status, revision) that a `plan update` answered; None when it answered no decision."""
    if done.code not in (0, 3, 4):
        return None
    if as_json:
        try:
            decided = json.loads(done.stdout)
            return str(decided["status"]), int(decided["revision"])
        except (ValueError, KeyError, TypeError):
            return None
    if match := HUMAN_COMMITTED.search(done.stdout):
        return "committed", int(match.group(1))
    if match := HUMAN_REJECTED.search(done.stdout):
        return "rejected", int(match.group(1))
    return None


def stored_topics(store: Path, proposal_id: str) -> list[str]:
    """The event types an SQLite store holds for `proposal_id` (read directly, in-process)."""
    connection = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)
    try:
        rows = connection.execute(
            "SELECT topic FROM stored_events WHERE CAST(state AS TEXT) LIKE ? ORDER BY rowid",
            (f'%"proposal_id":"{proposal_id}"%',),
        ).fetchall()
    except sqlite3.Error as error:
        return [f"unreadable: {error}"]
    finally:
        connection.close()
    return [str(topic).rsplit(".", 1)[-1] for (topic,) in rows]


# -- an SQLite store held locked ---------------------------------------------------------------


class StoreLock:
    """An exclusive transaction on an SQLite store from `after` seconds on, for `hold` seconds,
    in a thread of this process."""

    def __init__(self, store: Path, after: float, hold: float) -> None:
        self.store, self.after, self.hold = store, after, hold
        self.held_seconds = 0.0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> StoreLock:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._thread.join(30)

    def _run(self) -> None:
        time.sleep(self.after)
        connection = sqlite3.connect(self.store, isolation_level=None, timeout=10)
        try:
            connection.execute("BEGIN EXCLUSIVE")
            started = time.monotonic()
            time.sleep(self.hold)
            self.held_seconds = time.monotonic() - started
            connection.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        finally:
            connection.close()


def sqlite_backup(store: Path, target: Path) -> None:
    """A copy of `store` made with SQLite's online backup API."""
    source = sqlite3.connect(store)
    copy = sqlite3.connect(target)
    try:
        source.backup(copy)
    finally:
        copy.close()
        source.close()


# -- a TCP proxy in front of PostgreSQL --------------------------------------------------------


def reset(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RESET)
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


class TcpProxy:
    """Relays 127.0.0.1:`port` to `target` while up. `cut()` resets every relayed connection
    and, until `restore()`, resets every new one as soon as it is accepted."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.up = True
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, database_url: str) -> str:
        """`database_url` with its host and port replaced by this proxy's."""
        scheme, rest = database_url.split("://", 1)
        auth, _, tail = rest.rpartition("@")
        path = tail.split("/", 1)[1] if "/" in tail else ""
        return f"{scheme}://{auth}@127.0.0.1:{self.port}/{path}"

    def cut(self) -> None:
        with self._lock:
            self.up = False
            relayed, self._open = list(self._open), set()
        for sock in relayed:
            reset(sock)

    def restore(self) -> None:
        with self._lock:
            self.up = True

    def close(self) -> None:
        self.cut()
        with contextlib.suppress(OSError):
            self.listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.up:
                reset(client)
                continue
            try:
                server = socket.create_connection(self.target, timeout=5)
                server.settimeout(None)
            except OSError:
                reset(client)
                continue
            with self._lock:
                if not self.up:
                    reset(client)
                    reset(server)
                    continue
                self._open |= {client, server}
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with self._lock:
            mine = source in self._open
            self._open -= {source, sink}
        if mine:
            reset(source)
            reset(sink)


@contextlib.contextmanager
def proxy_to(database_url: str) -> Iterator[TcpProxy]:
    host_port = database_url.split("://", 1)[1].rpartition("@")[2].split("/", 1)[0]
    host, _, port = host_port.partition(":")
    proxy = TcpProxy((host or "127.0.0.1", int(port or 5432)))
    try:
        yield proxy
    finally:
        proxy.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
