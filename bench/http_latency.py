"""HTTP latency of the real `planledger serve`, beside the same service calls made in-process and
a raw INSERT+COMMIT, all measured in the same run (one client).

    python bench/http_latency.py [--database postgres|sqlite|URL] [--rounds 5] [--seconds 3]
        [--steps 50] [--output bench/results/http_latency.json]

The server is the installed command (`planledger --database URL serve --port P`, a free
loopback port, PLANLEDGER_HOME in a temporary folder, no token) on a fresh store of its own;
its /healthz is awaited and it is stopped at the end. Requests go over one keep-alive
connection of the standard library's `http.client`, whose own cost per call is small, so the
figures are the server's; `httpx_healthz` shows what httpx would add. The in-process side is
the service every client uses (`open_planledger`, its plan.json files following in the
background as the server's do) on another fresh store: nothing of the server is re-built here.
While one side is measured the other is paused (the server with SIGSTOP: on PostgreSQL every
commit NOTIFYs one channel per database, which would wake it).

  raw_commit     one raw INSERT+COMMIT of a 500-byte row (psycopg or sqlite3): the floor.
  direct_submit  PlanLedger.submit() of the POST's payload.
  direct_post    what the POST route calls: submit(), then plan_after() (the view it left).
  http_post      POST /sessions/{id}/plan: must answer 200 with the new revision.
  direct_get     PlanLedger.plan(session).
  http_get       GET /sessions/{id}/plan.
  http_healthz   GET /healthz: the floor of one request through uvicorn and FastAPI.
  httpx_healthz  the same through an httpx.Client (keep-alive): the client library's share.

Timed: from the call (an HTTP request's body already encoded) to its answer (an HTTP response's
body read); checking the answer (status, revision) follows, untimed.

POST workload: plans of `--steps` steps in the strict form with expected_revision; each call
advances one session by one step (round-robin over 8 sessions; a finished session is replaced
by a new one, opened untimed). GET workload: 16 sessions at revision 3. Variants run
`--seconds` each per round, in a rotated order; reported: medians over rounds of each round's
p50 and p99, and ratios to raw_commit.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import httpx

from planledger.service import PlanLedger, open_planledger

ROW = b"x" * 500
RING = 8
GET_SESSIONS = 16


class BenchFailure(Exception):
    pass


def plan_payload(steps: int, revision: int) -> dict[str, Any]:
    """Revision `revision` (0-based) of a plan of `steps` steps: those before it completed."""
    rows = []
    for index in range(steps):
        status = (
            "completed" if index < revision else "in_progress" if index == revision else "pending"
        )
        rows.append({"id": f"step-{index}", "title": f"Change module {index}", "status": status})
    return {"title": "Refactor the storage layer", "expected_revision": revision, "steps": rows}


class Sessions:
    """Session ids advancing one revision per call; a finished one is replaced (opened
    untimed through `open_session`)."""

    def __init__(self, prefix: str, steps: int, open_session: Callable[[str], object]) -> None:
        self.prefix, self.steps, self.open_session = prefix, steps, open_session
        self.count = 0
        self.ring: list[tuple[str, int]] = [self._new() for _ in range(RING)]
        self.turn = 0

    def _new(self) -> tuple[str, int]:
        self.count += 1
        session_id = f"{self.prefix}-{self.count}"
        self.open_session(session_id)
        return session_id, 0

    def next(self) -> tuple[str, dict[str, Any], int]:
        """(session, payload, the revision a commit gives); untimed work happens here."""
        slot = self.turn % RING
        self.turn += 1
        session_id, revision = self.ring[slot]
        if revision >= self.steps:
            session_id, revision = self.ring[slot] = self._new()
        self.ring[slot] = (session_id, revision + 1)
        return session_id, plan_payload(self.steps, revision), revision + 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Http:
    """One keep-alive HTTP/1.1 connection to the server."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def get(self, path: str) -> tuple[int, bytes]:
        return self._request("GET", path, None)

    def post(self, path: str, body: Any) -> tuple[int, bytes]:
        return self.post_encoded(path, json.dumps(body).encode())

    def post_encoded(self, path: str, data: bytes) -> tuple[int, bytes]:
        return self._request("POST", path, data)

    def _request(self, method: str, path: str, data: bytes | None) -> tuple[int, bytes]:
        headers = {"Content-Type": "application/json"} if data is not None else {}
        self.connection.request(method, path, body=data, headers=headers)
        response = self.connection.getresponse()
        return response.status, response.read()

    def close(self) -> None:
        self.connection.close()


@contextlib.contextmanager
def server(url: str, home: Path) -> Iterator[tuple[Http, subprocess.Popen[bytes]]]:
    """The installed `planledger serve` on `url`, and a keep-alive client of it."""
    beside = Path(sys.executable).parent / "planledger"
    program = str(beside) if beside.exists() else (shutil.which("planledger") or "planledger")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLANLEDGER_")}
    env["PLANLEDGER_HOME"] = str(home)
    log = (home / "server.log").open("wb")
    process = subprocess.Popen(
        [program, "--database", url, "serve", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    client = Http(port)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise BenchFailure(f"the server exited: {(home / 'server.log').read_text()}")
            try:
                if client.get("/healthz")[0] == 200:
                    break
            except (OSError, http.client.HTTPException):
                client.close()  # connects again on the next request
            if time.monotonic() > deadline:
                raise BenchFailure("the server did not answer /healthz within 30 s")
            time.sleep(0.05)
        yield client, process
    finally:
        client.close()
        process.send_signal(signal.SIGCONT)
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        log.close()


def raw_commit(url: str) -> Callable[[], None]:
    """One raw INSERT+COMMIT per call."""
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        conn.execute("CREATE TABLE IF NOT EXISTS bench_raw (id INTEGER PRIMARY KEY, v BLOB)")

        def insert() -> None:
            conn.execute("BEGIN")
            conn.execute("INSERT INTO bench_raw (v) VALUES (?)", (ROW,))
            conn.execute("COMMIT")

        return insert
    import psycopg

    base, schema = url.split("?schema=")
    pg = psycopg.connect(base, options=f"-c search_path={schema}")
    pg.execute("CREATE TABLE IF NOT EXISTS bench_raw (id BIGSERIAL PRIMARY KEY, v BYTEA)")
    pg.commit()

    def insert_pg() -> None:
        pg.execute("INSERT INTO bench_raw (v) VALUES (%s)", (ROW,), prepare=True)
        pg.commit()

    return insert_pg


Check = Callable[[], None]
Action = Callable[[], Check]  # the timed call; it returns the untimed check of its answer


def timed(call: Callable[[], Action], seconds: float) -> list[float]:
    """Latencies (s) of `call()`'s returned action, for about `seconds` (set-up and the check
    of each answer untimed)."""
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        action = call()
        started = time.perf_counter()
        check_answer = action()
        latencies.append(time.perf_counter() - started)
        check_answer()
    return latencies


def variants(
    service: PlanLedger,
    client: Http,
    httpx_client: httpx.Client,
    raw: Callable[[], None],
    steps: int,
) -> dict[str, tuple[str, Callable[[], Action]]]:
    """name: (side, a maker of one timed action)."""
    direct = Sessions("d", steps, lambda sid: service.open_session(sid))
    direct_post = Sessions("dp", steps, lambda sid: service.open_session(sid))
    over_http = Sessions(
        "h", steps, lambda sid: check(client.post("/sessions", {"session_id": sid}), 201)
    )
    direct_reads = [f"dg-{n}" for n in range(GET_SESSIONS)]
    http_reads = [f"hg-{n}" for n in range(GET_SESSIONS)]
    for session_id in direct_reads:
        service.open_session(session_id)
        for revision in range(3):
            service.submit(session_id, plan_payload(steps, revision))
    for session_id in http_reads:
        check(client.post("/sessions", {"session_id": session_id}), 201)
        for revision in range(3):
            check(client.post(f"/sessions/{session_id}/plan", plan_payload(steps, revision)))
    turn = iter(range(10**9))

    def submit() -> Action:
        session_id, payload, revision = direct.next()

        def act() -> Check:
            decision = service.submit(session_id, payload)
            return lambda: expect(decision.revision, revision)

        return act

    def post_route() -> Action:
        session_id, payload, revision = direct_post.next()

        def act() -> Check:
            decision = service.submit(session_id, payload, client="http")
            view = service.plan_after(session_id, decision)

            def check() -> None:
                expect(decision.revision, revision)
                expect(view.revision, revision)

            return check

        return act

    def http_post() -> Action:
        session_id, payload, revision = over_http.next()
        path, data = f"/sessions/{session_id}/plan", json.dumps(payload).encode()

        def act() -> Check:
            response = client.post_encoded(path, data)
            return lambda: expect(check(response)["revision"], revision)

        return act

    def direct_get() -> Action:
        session_id = direct_reads[next(turn) % GET_SESSIONS]

        def act() -> Check:
            view = service.plan(session_id)
            return lambda: expect(view.revision, 3)

        return act

    def http_get() -> Action:
        path = f"/sessions/{http_reads[next(turn) % GET_SESSIONS]}/plan"

        def act() -> Check:
            response = client.get(path)
            return lambda: expect(check(response)["revision"], 3)

        return act

    def healthz() -> Check:
        response = client.get("/healthz")
        return lambda: check(response)

    def httpx_healthz() -> Check:
        response = httpx_client.get("/healthz")
        return lambda: check_httpx(response)

    def raw_insert() -> Check:
        raw()
        return lambda: None

    return {
        "raw_commit": ("direct", lambda: raw_insert),
        "direct_submit": ("direct", submit),
        "direct_post": ("direct", post_route),
        "http_post": ("server", http_post),
        "direct_get": ("direct", direct_get),
        "http_get": ("server", http_get),
        "http_healthz": ("server", lambda: healthz),
        "httpx_healthz": ("server", lambda: httpx_healthz),
    }


def check(response: tuple[int, bytes], wanted: int = 200) -> Any:
    status, body = response
    if status != wanted:
        raise BenchFailure(f"answered {status}: {body[:300]!r}")
    return json.loads(body)


def check_httpx(response: httpx.Response) -> Any:
    return check((response.status_code, response.content))


def expect(found: Any, wanted: Any) -> None:
    if found != wanted:
        raise BenchFailure(f"expected {wanted!r}, got {found!r}")


def main(argv: list[str] | None = None) -> None:
    p = common.parser("http_latency", __doc__ or "")
    p.add_argument("--seconds", type=float, default=3.0, help="per variant per round")
    p.add_argument("--steps", type=int, default=50, help="steps of each plan")
    args = common.parse(p, argv)
    rounds: dict[str, list[dict[str, float]]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="bench_http_") as folder,
        common.fresh_store(args.database, "bench_http_s") as server_url,
        common.fresh_store(args.database, "bench_http_d") as direct_url,
        server(server_url, Path(folder)) as (client, process),
        httpx.Client(
            base_url=f"http://127.0.0.1:{client.port}", timeout=30.0, trust_env=False
        ) as httpx_client,
    ):
        service = open_planledger(direct_url, home=Path(folder) / "direct")
        service.follow_files()  # as the server does: plan.json files off the request path
        raw = raw_commit(direct_url)
        try:
            measured = variants(service, client, httpx_client, raw, args.steps)
            names = list(measured)
            rounds = {name: [] for name in names}
            for r in range(args.rounds):
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    side, make = measured[name]
                    process.send_signal(signal.SIGSTOP if side == "direct" else signal.SIGCONT)
                    if side == "server":
                        client.close()  # the server drops connections idle for 5 s
                        check(client.get("/healthz"))  # answering again before timing
                    latencies = timed(make, args.seconds)
                    rounds[name].append(
                        {
                            "p50_ms": 1000 * common.percentile(latencies, 0.5),
                            "p99_ms": 1000 * common.percentile(latencies, 0.99),
                            "requests": len(latencies),
                        }
                    )
                print(
                    f"round {r + 1}/{args.rounds}: "
                    + "  ".join(f"{n} {rounds[n][-1]['p50_ms']:.3f}" for n in names)
                    + " (p50 ms)",
                    flush=True,
                )
        finally:
            process.send_signal(signal.SIGCONT)
            service.close()
    medians = {
        name: {
            key: round(common.median([x[key] for x in values]), 4) for key in ("p50_ms", "p99_ms")
        }
        for name, values in rounds.items()
    }
    floor = medians["raw_commit"]["p50_ms"]
    print(f"\n{'variant':<14} {'p50 ms':>8} {'p99 ms':>8} {'p50 x raw':>10}")
    for name, m in medians.items():
        print(
            f"{name:<14} {m['p50_ms']:>8.3f} {m['p99_ms']:>8.3f} "
            f"{common.ratio(m['p50_ms'], floor) or 0:>10.2f}"
        )
    document = common.result(
        args,
        config={"seconds": args.seconds, "steps": args.steps, "clients": 1},
        rounds=rounds,
        medians=medians,
        ratios_to_raw_commit={n: common.ratio(m["p50_ms"], floor) for n, m in medians.items()},
    )
    common.write_result(args.output, document)


if __name__ == "__main__":
    main()
