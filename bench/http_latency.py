"""HTTP latency of `planledger serve` on PostgreSQL, against the same operations made directly
on the ledger in the same run.

    python bench/http_latency.py [--seconds S] [--rounds N] [--out bench/results/http_latency.json]
                                 [--only k1,k2,...] [--database URL] [--server-command TEMPLATE]

A real server is started as a subprocess (`planledger --database URL?schema=... serve --port P`
on a free loopback port, PLANLEDGER_HOME in a temporary directory, no token), its /healthz is
awaited, and it is terminated at the end. The in-process ("direct") side rebuilds what the
server's lifespan builds: one Ledger, one ProjectionRunner following the event store in a
thread (LISTEN/NOTIFY, plan.json files under a temporary home). Server and direct side each
get their own fresh schema, dropped at the end; every Ledger and runner is closed. Only the
side being measured runs: the library NOTIFYs one channel per database whatever the schema,
so an idle runner would wake (and query) on every commit of the other side; the server is
SIGSTOPped while the direct side is measured, and the direct runner stopped while the server
is measured.

Variants (suffix _1: one client; _8: eight concurrent clients, each a thread; HTTP clients
each have their own keep-alive httpx.Client):

  http_post_N        POST /sessions/{id}/plan, strict form, must answer 200 "committed" with
                     the new revision in its plan (the server waits for its views).
  direct_submit_N    Ledger.submit() of the same payloads: the baseline of http_post_N.
  direct_handler_N   the POST handler's own work in-process, without HTTP: submit, then
                     runner.wait_for(position), store.plan_view(), CommittedBody(...); so
                     http_post - direct_handler is what HTTP and the framework add, and
                     direct_handler - direct_submit is the wait for the views.
  http_get_N         GET /sessions/{id}/plan (served from the projection).
  direct_view_N      ProjectionRunner.store.plan_view(session), the read the GET makes.
  direct_plan_N      Ledger.plan(session), the write-side read (events replayed).
  http_healthz_N     GET /healthz: no database; the floor of one request through httpx,
                     uvicorn and FastAPI as the server is built (a sync endpoint).

POST workload: every client rotates over a ring of 8 sessions; each call advances the next
session of its ring by one step of a 5-step plan (step 1 in_progress, then step k completed
and k+1 in_progress, ..., then all completed: 6 revisions, expected_revision set, the payloads
of bench/commit_rate.py); a finished session is replaced by a fresh one. Sessions are opened
in bulk before each timed run (untimed) and the views are caught up before timing starts.
GET workload: 64 sessions whose plan stands at revision 3; each client rotates over them.

Variants are interleaved: each round runs every variant for S seconds, in a rotated order.
Per round: p50/p99 of the per-request latency (timer around the call only; checks and
preparation are outside it) and requests/s = requests / wall time of the round (all clients).
Reported: medians over rounds (p99 also pooled over every request of every round), ratios
server/direct, and the CPU time per request of this process, the server process and all
PostgreSQL processes (from /proc), since client, server and database share the machine (and
how busy other processes kept the CPUs), and how far the views lagged at the end of a round.

--server-command measures another build of the server against the same direct side, e.g. a
patched copy: any command that serves the API on {port} for the database URL {database}.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import os
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for entry in (str(ROOT), str(ROOT / "bench")):
    if entry not in sys.path:
        sys.path.insert(0, entry)

import httpx  # noqa: E402
from commit_rate import (  # noqa: E402
    STRICT_SCRIPT,
    conninfo,
    create_schema,
    drop_schema,
    json_size,
    machine_info,
    version_of,
)

from domain.ids import plan_aggregate_id, session_aggregate_id  # noqa: E402
from domain.plan import Plan  # noqa: E402
from domain.session import Mode, Session  # noqa: E402
from planledger.clients import http as server_module  # noqa: E402
from planledger.clients.http import CommittedBody  # noqa: E402
from planledger.service.ledger import Ledger  # noqa: E402
from projections.runner import ProjectionRunner  # noqa: E402

DEFAULT_DATABASE = "postgresql://postgres@127.0.0.1:5432/test"
DEFAULT_OUT = ROOT / "bench" / "results" / "http_latency.json"
DEFAULT_BUDGET_SECONDS = 64.0  # measured time in total, when --seconds is not given
WARMUP_SECONDS = 0.3
CONCURRENCY = 8
RING = 8  # sessions each POST client rotates over
GET_SESSIONS = 64
GET_REVISION = 3  # the revision the GET sessions' plans stand at
TARGETS = {"post_p50_ms": 5.0, "get_p99_ms": 3.0}
JSON_HEADERS = {"content-type": "application/json"}
ENCODED_SCRIPT = [json.dumps(p, separators=(",", ":")).encode() for p in STRICT_SCRIPT]
REVISIONS_PER_SESSION = len(STRICT_SCRIPT)
CLK_TCK = os.sysconf("SC_CLK_TCK")
# The server's own walk over a POST body, where it has one (the direct handler does it too).
BODY_CHECK: Callable[[Any], None] | None = getattr(server_module, "reject_unstorable_text", None)


class BenchFailure(Exception):
    """A request that did not answer as the workload requires: the run stops."""


# -- CPU accounting (client, server and database share the machine) -------------------------


def proc_ticks(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = stat[stat.rindex(")") + 2 :].split()
    return int(rest[11]) + int(rest[12])  # utime + stime


def postgres_ticks() -> dict[int, int]:
    ticks: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != "postgres":
                continue
        except OSError:
            continue
        value = proc_ticks(int(entry.name))
        if value is not None:
            ticks[int(entry.name)] = value
    return ticks


def machine_busy_ticks() -> int:
    """Busy time of all CPUs (/proc/stat: user nice system irq softirq steal)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7]


@dataclass
class CpuSnapshot:
    bench: int
    server: int
    postgres: dict[int, int]
    machine: int

    @classmethod
    def take(cls, server_pid: int | None) -> CpuSnapshot:
        server = proc_ticks(server_pid) if server_pid else None
        return cls(
            proc_ticks(os.getpid()) or 0, server or 0, postgres_ticks(), machine_busy_ticks()
        )

    def seconds_since(self, before: CpuSnapshot) -> dict[str, float]:
        pg = sum(t - before.postgres.get(pid, 0) for pid, t in self.postgres.items())
        bench = (self.bench - before.bench) / CLK_TCK
        server = (self.server - before.server) / CLK_TCK
        machine = (self.machine - before.machine) / CLK_TCK
        return {
            "bench": bench,
            "server": server,
            "postgres": pg / CLK_TCK,  # every backend, also those of other clients
            "machine": machine,
            "others": max(0.0, machine - bench - server - pg / CLK_TCK),
        }


# -- results --------------------------------------------------------------------------------


def pct(sorted_values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile of sorted seconds, in ms."""
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, math.ceil(p * len(sorted_values)) - 1))
    return 1000 * sorted_values[index]


@dataclass
class RoundResult:
    requests: int
    wall_seconds: float
    latencies: list[float] = field(repr=False)
    cpu_seconds: dict[str, float]
    inline_opens: int = 0
    views_behind: int = 0  # events committed but not yet in the views when the round ended

    @property
    def rate(self) -> float:
        return self.requests / self.wall_seconds if self.wall_seconds else 0.0

    def percentile(self, p: float) -> float:
        return pct(sorted(self.latencies), p)

    def as_json(self) -> dict[str, Any]:
        lat = sorted(self.latencies)
        n = max(1, self.requests)
        return {
            "requests": self.requests,
            "wall_seconds": round(self.wall_seconds, 4),
            "requests_per_s": round(self.rate, 1),
            "latency_ms": {
                "p50": round(pct(lat, 0.50), 4),
                "p90": round(pct(lat, 0.90), 4),
                "p99": round(pct(lat, 0.99), 4),
                "max": round(pct(lat, 1.0), 4),
                "mean": round(1000 * statistics.fmean(lat), 4) if lat else 0.0,
            },
            "cpu_seconds": {k: round(v, 3) for k, v in self.cpu_seconds.items()},
            "cpu_ms_per_request": {k: round(1000 * v / n, 4) for k, v in self.cpu_seconds.items()},
            "machine_cpus_busy": round(self.cpu_seconds["machine"] / self.wall_seconds, 3),
            "other_processes_cpus_busy": round(self.cpu_seconds["others"] / self.wall_seconds, 3),
            "sessions_opened_inside_the_round": self.inline_opens,
            "views_behind_at_end_events": self.views_behind,
        }


# -- sessions -------------------------------------------------------------------------------


class SessionSupply:
    """Fresh sessions (session + empty plan, the events of open_session), opened in bulk."""

    def __init__(self, ledger: Ledger, prefix: str) -> None:
        self.ledger = ledger
        self.prefix = prefix
        self.lock = threading.Lock()
        self.ready: deque[str] = deque()
        self.opened = 0
        self.inline_opens = 0

    def open_batch(self, count: int) -> tuple[list[str], int]:
        ids: list[str] = []
        last = 0
        batch: list[Any] = []
        for _ in range(count):
            with self.lock:
                session_id = f"{self.prefix}-{self.opened}"
                self.opened += 1
            ids.append(session_id)
            batch += [
                Session.open(session_aggregate_id(session_id), session_id, Mode.WORK),
                Plan.create(plan_aggregate_id(session_id), session_id),
            ]
            if len(batch) >= 400:
                last = max(last, self._save(batch))
                batch = []
        if batch:
            last = max(last, self._save(batch))
        return ids, last

    def _save(self, batch: list[Any]) -> int:
        recordings = self.ledger.save(*batch)
        return max(r.notification.id for r in recordings)

    def ensure(self, count: int) -> int:
        """At least `count` unused sessions; returns the position of the last event written."""
        missing = count - len(self.ready)
        if missing <= 0:
            return 0
        ids, last = self.open_batch(missing)
        with self.lock:
            self.ready.extend(ids)
        return last

    def take(self) -> str:
        with self.lock:
            if self.ready:
                return self.ready.popleft()
        # Ran dry inside a round: open a few now (untimed, but inside the round's wall time).
        ids, _ = self.open_batch(20)
        with self.lock:
            self.inline_opens += len(ids)
            self.ready.extend(ids[1:])
        return ids[0]


# -- the two sides --------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def default_server_command() -> str:
    beside = Path(sys.executable).parent / "planledger"
    program = str(beside) if beside.exists() else (shutil.which("planledger") or "planledger")
    return f"{shlex.quote(program)} --database {{database}} serve --port {{port}}"


def prepare_get_sessions(ledger: Ledger, supply: SessionSupply) -> tuple[list[str], int]:
    """GET_SESSIONS sessions whose plans stand at GET_REVISION (written by `ledger`)."""
    ids, last = supply.open_batch(GET_SESSIONS)
    for session_id in ids:
        for payload in STRICT_SCRIPT[:GET_REVISION]:
            decision = ledger.submit(session_id, payload, client="bench")
            if decision.status != "committed" or decision.store_position is None:
                raise BenchFailure(f"set-up submit not committed: {decision!r}")
            last = max(last, decision.store_position)
    return ids, last


class ServerSide:
    """`planledger serve` as a subprocess on its own schema, and a bench-side ledger on that
    schema to open sessions for it (untimed)."""

    def __init__(self, database: str, schema: str, command: str, workdir: Path) -> None:
        self.url = f"{conninfo(database)}?schema={schema}"
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.home = workdir / "server_home"
        self.home.mkdir()
        self.log_path = workdir / "server.log"
        self.argv = shlex.split(command.format(database=self.url, port=self.port))
        self.process: subprocess.Popen[bytes] | None = None
        self.ledger: Ledger | None = None
        self.control: httpx.Client | None = None

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PLANLEDGER_")}
        env["PLANLEDGER_HOME"] = str(self.home)
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                self.argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT
            )
        self.control = new_client(self.base_url)
        deadline = time.monotonic() + 30
        while True:
            if self.process.poll() is not None:
                raise BenchFailure(f"the server exited ({self.process.returncode}): {self.log()}")
            with contextlib.suppress(httpx.HTTPError):
                if self.control.get("/healthz").status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise BenchFailure(f"the server did not answer /healthz in 30 s: {self.log()}")
            time.sleep(0.05)
        self.ledger = Ledger(self.url)
        self.supply = SessionSupply(self.ledger, f"h{uuid.uuid4().hex[:6]}")

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text()[-2000:]
        return ""

    def position(self) -> int:
        assert self.control is not None
        return int(self.control.get("/healthz").json()["position"])

    def views_behind(self) -> int:
        assert self.ledger is not None
        return max(0, (self.ledger.recorder.max_notification_id() or 0) - self.position())

    def wait_views(self, position: int, timeout: float = 60.0) -> None:
        """Until the server's runner has applied `position` (polling /healthz)."""
        deadline = time.monotonic() + timeout
        while self.position() < position:
            if time.monotonic() > deadline:
                raise BenchFailure(f"the server's views did not reach {position}")
            time.sleep(0.02)

    def prepare(self) -> None:
        assert self.ledger is not None
        self.get_sessions, last = prepare_get_sessions(self.ledger, self.supply)
        self.wait_views(last)

    paused = False

    def pause(self) -> None:
        """SIGSTOP: while the direct side is measured, the server's runner (woken by every
        NOTIFY on the database's one channel, whatever the schema) takes no CPU."""
        if not self.paused and self.process is not None:
            self.process.send_signal(signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        if self.paused and self.process is not None:
            self.process.send_signal(signal.SIGCONT)
            self.paused = False
            self.position()  # answering again

    def close(self) -> None:
        if self.control is not None:
            self.control.close()
        if self.process is not None and self.process.poll() is None:
            if self.paused:
                self.process.send_signal(signal.SIGCONT)
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        if self.ledger is not None:
            self.ledger.close()


class DirectSide:
    """What the server's lifespan builds, in this process: a Ledger and a following runner."""

    def __init__(self, database: str, schema: str, workdir: Path) -> None:
        self.url = f"{conninfo(database)}?schema={schema}"
        self.home = workdir / "direct_home"
        self.home.mkdir()
        self.ledger: Ledger | None = None
        self.runner: ProjectionRunner | None = None
        self.stop = threading.Event()
        self.follower: threading.Thread | None = None

    def start(self) -> None:
        self.ledger = Ledger(self.url)
        self.runner = ProjectionRunner(self.ledger.database, self.ledger.mapper, home=self.home)
        self.runner.catch_up()
        self.resume()
        self.supply = SessionSupply(self.ledger, f"d{uuid.uuid4().hex[:6]}")

    def resume(self) -> None:
        if self.follower is not None:
            return
        assert self.runner is not None
        self.stop = threading.Event()
        self.follower = threading.Thread(
            target=self.runner.run,
            args=(self.stop,),
            kwargs={"idle_timeout": 0.5},
            name="projection-runner",
            daemon=True,
        )
        self.follower.start()

    def pause(self) -> None:
        """Stop following while the server is measured (its commits would wake this runner)."""
        if self.follower is not None:
            self.stop.set()
            self.follower.join(5)
            self.follower = None

    def views_behind(self) -> int:
        assert self.ledger is not None and self.runner is not None
        return max(0, (self.ledger.recorder.max_notification_id() or 0) - self.runner.position)

    def wait_views(self, position: int, timeout: float = 60.0) -> None:
        assert self.runner is not None
        if position and not self.runner.wait_for(position, timeout):
            raise BenchFailure(f"the direct runner's views did not reach {position}")

    def prepare(self) -> None:
        assert self.ledger is not None
        self.get_sessions, last = prepare_get_sessions(self.ledger, self.supply)
        self.wait_views(last)

    def handler(self, session_id: str, payload: dict[str, Any]) -> CommittedBody:
        """The body of server.propose_plan for a committed decision, without HTTP."""
        ledger, runner = self.ledger, self.runner
        assert ledger is not None and runner is not None
        if BODY_CHECK is not None:
            BODY_CHECK(payload)
        decision = ledger.submit(session_id, payload, client="http")
        if decision.status != "committed":
            raise BenchFailure(f"direct handler: not committed: {decision!r}")
        visible = decision.store_position is None or runner.wait_for(decision.store_position, 2.0)
        view = runner.store.plan_view(session_id) if visible else None
        if view is None or view.revision != decision.revision:
            view = ledger.plan(session_id, decision.revision)
        return CommittedBody(**decision.model_dump(), plan=view)

    def close(self) -> None:
        self.pause()
        if self.runner is not None:
            self.runner.close()
        if self.ledger is not None:
            self.ledger.close()


def new_client(base_url: str) -> httpx.Client:
    return httpx.Client(base_url=base_url, timeout=30.0, trust_env=False)


# -- clients: each yields (timed call, untimed check) ---------------------------------------

Op = Callable[[], Any]
Check = Callable[[Any], None]


class PostClient:
    """Rotates over a ring of sessions, advancing one step per call; refills from the supply."""

    def __init__(self, supply: SessionSupply, call: Callable[[str, int], Any], kind: str) -> None:
        self.supply = supply
        self.call = call
        self.kind = kind
        self.ring: list[list[Any]] = []  # [session_id, next revision index]
        self.turn = 0

    def next(self) -> tuple[Op, Check]:
        if len(self.ring) < RING:
            self.ring.append([self.supply.take(), 0])
        slot = self.ring[self.turn % len(self.ring)]
        self.turn += 1
        if slot[1] >= REVISIONS_PER_SESSION:
            slot[:] = [self.supply.take(), 0]
        session_id, rev = slot
        slot[1] += 1
        call = self.call

        def op() -> Any:
            return call(session_id, rev)

        def check(result: Any) -> None:
            check_post(self.kind, session_id, rev + 1, result)

        return op, check


def check_post(kind: str, session_id: str, revision: int, result: Any) -> None:
    if kind == "http":
        if result.status_code != 200:
            raise BenchFailure(f"POST {session_id}: {result.status_code} {result.text[:300]}")
        body = result.json()
        status, got, plan_rev = body["status"], body["revision"], body["plan"]["revision"]
    elif kind == "submit":
        status, got, plan_rev = result.status, result.revision, result.revision
    else:  # handler
        status, got, plan_rev = result.status, result.revision, result.plan.revision
    if status != "committed" or got != revision or plan_rev != revision:
        raise BenchFailure(
            f"POST {session_id}: expected committed revision {revision} with its plan, got "
            f"status={status} revision={got} plan.revision={plan_rev}"
        )


class ReadClient:
    """Rotates over the prepared sessions."""

    def __init__(self, sessions: list[str], start: int, call: Callable[[str], Any], kind: str):
        self.sessions = sessions
        self.turn = start
        self.call = call
        self.kind = kind

    def next(self) -> tuple[Op, Check]:
        session_id = self.sessions[self.turn % len(self.sessions)]
        self.turn += 1
        call = self.call

        def op() -> Any:
            return call(session_id)

        def check(result: Any) -> None:
            if self.kind == "http":
                ok = result.status_code == 200 and b'"revision":%d' % GET_REVISION in (
                    result.content
                )
            elif self.kind == "healthz":
                ok = result.status_code == 200
            else:
                ok = result is not None and result.revision == GET_REVISION
            if not ok:
                raise BenchFailure(f"GET {session_id}: unexpected answer {result!r}")

        return op, check


# -- variants -------------------------------------------------------------------------------


@dataclass
class Spec:
    key: str
    side: str  # "http" or "direct"
    operation: str  # post, get, healthz
    label: str
    description: str


SPECS = [
    Spec("http_post", "http", "post", "POST /sessions/{id}/plan", "HTTP, committed, 200"),
    Spec("direct_submit", "direct", "post", "Ledger.submit()", "in-process submit"),
    Spec(
        "direct_handler",
        "direct",
        "post",
        "POST handler body, no HTTP",
        "submit + runner.wait_for(position) + store.plan_view + CommittedBody",
    ),
    Spec("http_get", "http", "get", "GET /sessions/{id}/plan", "HTTP, 200"),
    Spec("direct_view", "direct", "get", "runner.store.plan_view()", "the projection read of GET"),
    Spec("direct_plan", "direct", "get", "Ledger.plan()", "write-side read (events replayed)"),
    Spec("http_healthz", "http", "healthz", "GET /healthz", "HTTP floor: no database"),
]
ALL_KEYS = [f"{s.key}_{n}" for s in SPECS for n in (1, CONCURRENCY)]


class Variant:
    def __init__(self, spec: Spec, clients: int, side: ServerSide | DirectSide) -> None:
        self.spec = spec
        self.key = f"{spec.key}_{clients}"
        self.clients = clients
        self.side = side
        self.http: list[httpx.Client] = []
        self.workers = [self._client(i) for i in range(clients)]
        self.last_requests = 0

    def _client(self, index: int) -> PostClient | ReadClient:
        spec, side = self.spec, self.side
        if isinstance(side, ServerSide):
            client = new_client(side.base_url)
            self.http.append(client)
            if spec.operation == "post":

                def post(session_id: str, rev: int, client: httpx.Client = client) -> Any:
                    return client.post(
                        f"/sessions/{session_id}/plan",
                        content=ENCODED_SCRIPT[rev],
                        headers=JSON_HEADERS,
                    )

                return PostClient(side.supply, post, "http")
            if spec.operation == "get":

                def get(session_id: str, client: httpx.Client = client) -> Any:
                    return client.get(f"/sessions/{session_id}/plan")

                return ReadClient(side.get_sessions, index * 7, get, "http")

            def healthz(_: str, client: httpx.Client = client) -> Any:
                return client.get("/healthz")

            return ReadClient(["-"], 0, healthz, "healthz")
        ledger, runner = side.ledger, side.runner
        assert ledger is not None and runner is not None
        if spec.key == "direct_submit":

            def submit(session_id: str, rev: int) -> Any:
                return ledger.submit(session_id, STRICT_SCRIPT[rev], client="http")

            return PostClient(side.supply, submit, "submit")
        if spec.key == "direct_handler":

            def handle(session_id: str, rev: int) -> Any:
                return side.handler(session_id, STRICT_SCRIPT[rev])

            return PostClient(side.supply, handle, "handler")
        if spec.key == "direct_view":
            return ReadClient(side.get_sessions, index * 7, runner.store.plan_view, "direct")
        return ReadClient(side.get_sessions, index * 7, ledger.plan, "direct")

    def before(self, seconds: float) -> None:
        """Untimed: enough fresh sessions for this run, and the views caught up with every
        event written so far (direct_submit does not wait for the views, so its backlog
        would otherwise be paid by the next variant)."""
        if self.spec.operation == "post":
            guess = (2500 if self.spec.side == "direct" else 1000) * seconds
            expected = self.last_requests or guess
            need = int(1.5 * expected / REVISIONS_PER_SESSION) + RING * self.clients
            self.side.supply.ensure(need)
        self.side.wait_views(self.side.supply.ledger.recorder.max_notification_id() or 0)

    def run(
        self, seconds: float, server_pid: int | None, focus: Callable[[Any], None]
    ) -> RoundResult:
        focus(self.side)
        self.before(seconds)
        supply = self.side.supply
        inline_before = supply.inline_opens
        n = self.clients
        latencies: list[list[float]] = [[] for _ in range(n)]
        errors: list[BaseException] = []
        barrier = threading.Barrier(n + 1)
        deadline = [0.0]

        def work(index: int) -> None:
            worker, out = self.workers[index], latencies[index]
            clock = time.perf_counter
            barrier.wait()
            end = deadline[0]
            try:
                while clock() < end and not errors:
                    op, check = worker.next()
                    start = clock()
                    result = op()
                    out.append(clock() - start)
                    check(result)
            except BaseException as error:
                errors.append(error)

        threads = [
            threading.Thread(target=work, args=(i,), name=f"client-{i}", daemon=True)
            for i in range(n)
        ]
        for t in threads:
            t.start()
        cpu_before = CpuSnapshot.take(server_pid)
        started = time.perf_counter()
        deadline[0] = started + seconds
        barrier.wait()
        for t in threads:
            t.join()
        wall = time.perf_counter() - started
        cpu = CpuSnapshot.take(server_pid).seconds_since(cpu_before)
        if errors:
            raise BenchFailure(f"{self.key}: {errors[0]}") from errors[0]
        merged = [x for part in latencies for x in part]
        self.last_requests = len(merged)
        opened = supply.inline_opens - inline_before
        return RoundResult(len(merged), wall, merged, cpu, opened, self.side.views_behind())

    def close(self) -> None:
        for client in self.http:
            client.close()


# -- the run --------------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0


def summarise(rounds: list[RoundResult]) -> dict[str, Any]:
    pooled = sorted(x for r in rounds for x in r.latencies)
    per_round = [r.as_json() for r in rounds]
    total = sum(r.requests for r in rounds) or 1
    cpu = {
        k: round(1000 * sum(r.cpu_seconds[k] for r in rounds) / total, 4)
        for k in ("bench", "server", "postgres")
    }
    wall = sum(r.wall_seconds for r in rounds) or 1.0
    busy = sum(r.cpu_seconds["machine"] for r in rounds) / wall
    others = sum(r.cpu_seconds["others"] for r in rounds) / wall
    return {
        "p50_ms": round(median([r["latency_ms"]["p50"] for r in per_round]), 4),
        "p99_ms": round(median([r["latency_ms"]["p99"] for r in per_round]), 4),
        "requests_per_s": round(median([r["requests_per_s"] for r in per_round]), 1),
        "pooled": {
            "requests": len(pooled),
            "p50_ms": round(pct(pooled, 0.50), 4),
            "p90_ms": round(pct(pooled, 0.90), 4),
            "p99_ms": round(pct(pooled, 0.99), 4),
            "p999_ms": round(pct(pooled, 0.999), 4),
            "max_ms": round(pct(pooled, 1.0), 4),
        },
        "cpu_ms_per_request": cpu,
        "machine_cpus_busy": round(busy, 3),
        "other_processes_cpus_busy": round(others, 3),
    }


def ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


def comparisons(medians: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """server / direct for each pair measured in this run."""
    pairs = [
        ("http_post", "direct_submit"),
        ("http_post", "direct_handler"),
        ("direct_handler", "direct_submit"),
        ("http_get", "direct_view"),
        ("http_get", "direct_plan"),
    ]
    out: dict[str, Any] = {}
    for n in (1, CONCURRENCY):
        for a, b in pairs:
            ka, kb = f"{a}_{n}", f"{b}_{n}"
            if ka in medians and kb in medians:
                ma, mb = medians[ka], medians[kb]
                out[f"{ka}/{kb}"] = {
                    "p50": ratio(ma["p50_ms"], mb["p50_ms"]),
                    "p99": ratio(ma["p99_ms"], mb["p99_ms"]),
                    "requests_per_s": ratio(ma["requests_per_s"], mb["requests_per_s"]),
                    "p50_difference_ms": round(ma["p50_ms"] - mb["p50_ms"], 4),
                }
    return out


def breakdown(medians: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Where the p50 of a POST and a GET goes (differences of medians, so approximate)."""
    out: dict[str, Any] = {}
    for n in (1, CONCURRENCY):
        m = {k.removesuffix(f"_{n}"): v for k, v in medians.items() if k.endswith(f"_{n}")}
        post: dict[str, float] = {}
        if {"http_post", "direct_handler", "direct_submit"} <= m.keys():
            post = {
                "submit_ms": m["direct_submit"]["p50_ms"],
                "wait_for_views_and_view_read_ms": m["direct_handler"]["p50_ms"]
                - m["direct_submit"]["p50_ms"],
                "http_and_framework_ms": m["http_post"]["p50_ms"] - m["direct_handler"]["p50_ms"],
                "total_http_post_p50_ms": m["http_post"]["p50_ms"],
            }
        get: dict[str, float] = {}
        if {"http_get", "direct_view"} <= m.keys():
            get = {
                "view_read_ms": m["direct_view"]["p50_ms"],
                "http_and_framework_ms": m["http_get"]["p50_ms"] - m["direct_view"]["p50_ms"],
                "total_http_get_p50_ms": m["http_get"]["p50_ms"],
            }
        if "http_healthz" in m:
            for figures in (post, get):
                if figures:
                    figures["healthz_floor_ms"] = m["http_healthz"]["p50_ms"]
        if post or get:
            out[f"{n}_client{'s' if n > 1 else ''}"] = {
                "post": {k: round(v, 4) for k, v in post.items()},
                "get": {k: round(v, 4) for k, v in get.items()},
            }
    return out


def targets(medians: dict[str, dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for n in (1, CONCURRENCY):
        post, get = medians.get(f"http_post_{n}"), medians.get(f"http_get_{n}")
        if post:
            out[f"post_p50_le_5ms_{n}"] = {
                "value_ms": post["p50_ms"],
                "met": post["p50_ms"] <= TARGETS["post_p50_ms"],
            }
        if get:
            out[f"get_p99_le_3ms_{n}"] = {
                "value_ms": get["p99_ms"],
                "pooled_ms": get["pooled"]["p99_ms"],
                "met": get["p99_ms"] <= TARGETS["get_p99_ms"],
                "met_pooled": get["pooled"]["p99_ms"] <= TARGETS["get_p99_ms"],
            }
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    keys: list[str] = args.only
    need_http = any(k.startswith("http_") for k in keys)
    need_direct = any(k.startswith("direct_") for k in keys)
    tag = f"{os.getpid()}_{uuid.uuid4().hex[:6]}"
    machine = machine_info(args.database)
    workdir = Path(tempfile.mkdtemp(prefix="bench_http_latency_"))
    schemas: list[str] = []
    server: ServerSide | None = None
    direct: DirectSide | None = None
    variants: list[Variant] = []
    rounds: dict[str, list[RoundResult]] = {k: [] for k in keys}
    started = dt.datetime.now(dt.UTC)
    try:
        if need_http:
            schema = f"bench_http_server_{tag}".lower()
            create_schema(args.database, schema)
            schemas.append(schema)
            server = ServerSide(args.database, schema, args.server_command, workdir)
            server.start()
            print(f"server pid {server.pid} on {server.base_url}: {shlex.join(server.argv)}")
            server.prepare()
        if need_direct:
            schema = f"bench_http_direct_{tag}".lower()
            create_schema(args.database, schema)
            schemas.append(schema)
            direct = DirectSide(args.database, schema, workdir)
            direct.start()
            direct.prepare()
        specs = {s.key: s for s in SPECS}
        for key in keys:
            base, _, n = key.rpartition("_")
            spec = specs[base]
            side = server if spec.side == "http" else direct
            assert side is not None
            variants.append(Variant(spec, int(n), side))
        server_pid = server.pid if server else None

        def focus(active: Any) -> None:
            """Only the side being measured runs (see ServerSide.pause, DirectSide.pause)."""
            for side in (server, direct):
                if side is not None and side is not active:
                    side.pause()
            active.resume()

        for variant in variants:
            variant.run(WARMUP_SECONDS, server_pid, focus)
        for r in range(args.rounds):
            shift = r % len(variants)
            for variant in variants[shift:] + variants[:shift]:
                rounds[variant.key].append(variant.run(args.seconds, server_pid, focus))
            line = " ".join(
                f"{v.key}={rounds[v.key][-1].percentile(0.5):.2f}ms/{rounds[v.key][-1].rate:.0f}/s"
                for v in variants
            )
            print(f"round {r + 1}/{args.rounds}: {line}", flush=True)
        server_log = server.log() if server else ""
    finally:
        for variant in variants:
            with contextlib.suppress(Exception):
                variant.close()
        for side in (server, direct):
            if side is not None:
                with contextlib.suppress(Exception):
                    side.close()
        for schema in schemas:
            drop_schema(args.database, schema)
        shutil.rmtree(workdir, ignore_errors=True)

    machine["loadavg_at_end"] = list(os.getloadavg())
    machine["http_stack"] = {
        p: version_of(p)
        for p in ("fastapi", "starlette", "uvicorn", "uvloop", "httptools", "httpx", "anyio")
    }
    machine["python_switch_interval_s"] = sys.getswitchinterval()
    medians = {k: summarise(v) for k, v in rounds.items()}
    specs = {s.key: s for s in SPECS}
    return {
        "benchmark": "http_latency",
        "command": " ".join(["python", *sys.argv]),
        "started_at": started.isoformat(timespec="seconds"),
        "config": {
            "rounds": args.rounds,
            "seconds_per_variant_per_round": args.seconds,
            "warmup_seconds": WARMUP_SECONDS,
            "database": conninfo(args.database),
            "server_command": args.server_command,
            "concurrency": [1, CONCURRENCY],
            "order": "rotated each round",
            "latency": "per request, timer around the call only (client side for HTTP)",
            "requests_per_s": "requests of all clients / wall time of the round",
            "post_workload": (
                f"strict form, ring of {RING} sessions per client, one step per call, "
                f"{REVISIONS_PER_SESSION} revisions per session, payload bytes "
                f"{[json_size(p) for p in STRICT_SCRIPT]}"
            ),
            "get_workload": f"{GET_SESSIONS} sessions at revision {GET_REVISION}, rotating",
            "targets": {"post_p50_ms_max": 5.0, "get_p99_ms_max": 3.0},
        },
        "summary": {
            "targets": targets(medians),
            "ratios_server_over_direct": comparisons(medians),
            "p50_breakdown": breakdown(medians),
        },
        "machine": machine,
        "server_log_tail": server_log[-1000:],
        "variants": {
            key: {
                "label": specs[key.rpartition("_")[0]].label,
                "description": specs[key.rpartition("_")[0]].description,
                "clients": int(key.rpartition("_")[2]),
                **medians[key],
                "rounds": [x.as_json() for x in rounds[key]],
            }
            for key in keys
        },
    }


def print_table(result: dict[str, Any]) -> None:
    print()
    print(
        f"{'variant':<17} {'what':<27} {'p50 ms':>7} {'p99 ms':>7} {'p99 all':>8} "
        f"{'req/s':>7}  {'cpu ms/req bench/server/pg':>27} {'others':>6}"
    )
    for key, v in result["variants"].items():
        cpu = v["cpu_ms_per_request"]
        cpu_text = f"{cpu['bench']:.2f}/{cpu['server']:.2f}/{cpu['postgres']:.2f}"
        print(
            f"{key:<17} {v['label'][:27]:<27} {v['p50_ms']:>7.3f} {v['p99_ms']:>7.3f} "
            f"{v['pooled']['p99_ms']:>8.3f} {v['requests_per_s']:>7.0f}  {cpu_text:>27} "
            f"{v['other_processes_cpus_busy']:>6.2f}"
        )
    print(
        "(cpu: per request, this process / the server / every PostgreSQL process; others: "
        "CPUs kept busy by processes outside this benchmark)"
    )
    summary = result["summary"]
    if summary["ratios_server_over_direct"]:
        print("\nratios (first / second): p50, p99, req/s; p50 difference")
        for name, r in summary["ratios_server_over_direct"].items():
            print(
                f"  {name:<34} p50 x{r['p50']}  p99 x{r['p99']}  req/s x{r['requests_per_s']}"
                f"  (+{r['p50_difference_ms']:.3f} ms)"
            )
    for name, parts in summary["p50_breakdown"].items():
        for op, figures in parts.items():
            if figures:
                text = ", ".join(f"{k} {v:.3f}" for k, v in figures.items())
                print(f"p50 breakdown {op} {name}: {text}")
    print()
    for name, t in summary["targets"].items():
        extra = f" (pooled p99 {t['pooled_ms']:.3f} ms)" if "pooled_ms" in t else ""
        print(f"target {name}: {'met' if t['met'] else 'NOT met'} ({t['value_ms']:.3f} ms){extra}")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--seconds",
        type=float,
        default=None,
        help=f"seconds per variant per round (default: ~{DEFAULT_BUDGET_SECONDS:.0f} s "
        "measured in total, plus set-up)",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--database", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE)
    )
    parser.add_argument(
        "--only", default=",".join(ALL_KEYS), help=f"comma list from: {', '.join(ALL_KEYS)}"
    )
    parser.add_argument(
        "--server-command",
        default=default_server_command(),
        help="how to start the server; {database} and {port} are filled in",
    )
    args = parser.parse_args(argv)
    keys = [k.strip() for k in args.only.split(",") if k.strip()]
    unknown = [k for k in keys if k not in ALL_KEYS]
    if unknown or not keys:
        parser.error(f"unknown variants {unknown}; choose from {', '.join(ALL_KEYS)}")
    args.only = list(dict.fromkeys(keys))
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    if args.seconds is None:
        args.seconds = max(0.5, DEFAULT_BUDGET_SECONDS / (args.rounds * len(args.only)))
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    total = args.rounds * args.seconds * len(args.only)
    print(
        f"http_latency: {len(args.only)} variants; {args.rounds} rounds x {args.seconds:g} s "
        f"each (~{total:.0f} s measured)",
        flush=True,
    )
    try:
        result = run(args)
    except BenchFailure as failure:
        raise SystemExit(f"http_latency: {failure}") from None
    print_table(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
