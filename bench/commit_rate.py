"""Commit rate on PostgreSQL, one client: a plan commit through the ledger in-process and over
HTTP, against raw psycopg INSERT+COMMIT measured in the same run.

    python bench/commit_rate.py [--rounds 10] [--seconds 2] [--database postgres|URL]
        [--output bench/results/commit_rate.json]

  raw     one single-row INSERT (bigserial id, 300-byte bytea, prepared) + COMMIT;
  python  `open_planledger(url).submit()` of a 5-step strict-form plan: a session's revisions
          1-6 (expected_revision set), then a new session, opened untimed;
  http    the same through the installed `planledger serve` on a store of its own: POST
          /sessions/{id}/plan over one keep-alive connection (`http.client`), answered 200;
  handwritten  the same POSTs to bench/handwritten.py on a store of its own: what a user
          would write instead (FastAPI, a pydantic model of the body, a psycopg pool, one
          JSONB row per plan).

Plans have --steps steps (50 by default). Each round runs every variant for --seconds, in a
rotated order; the servers are stopped (SIGSTOP) while the others run (every commit in the
database NOTIFYs, which would wake the ledger's). Reported: the medians over rounds of
commits / (time inside the timed calls) and of each round's p50 latency, their ratios to raw,
and http's to handwritten. Targets: python >= 0.3x raw's commits/s; http >= 0.7x handwritten.
"""

from __future__ import annotations

import contextlib
import http.client
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import common
import psycopg

from planledger.service import PlanLedger, open_planledger

PAYLOAD = os.urandom(300)
WARMUP_SECONDS = 0.5
Op = Callable[[], None]
Served = tuple["Http", subprocess.Popen[bytes]]


class Http:
    """One keep-alive HTTP/1.1 connection to a server on loopback."""

    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        self.connection.request(method, path, body=body, headers=headers)
        response = self.connection.getresponse()
        return response.status, response.read()

    def healthy(self) -> bool:
        """Whether /healthz answers 200 (on a new connection when the last one was dropped)."""
        try:
            return self.request("GET", "/healthz")[0] == 200
        except (OSError, http.client.HTTPException):
            self.connection.close()
            return False


@contextlib.contextmanager
def server(url: str, home: Path, handwritten: bool = False) -> Iterator[Served]:
    """The installed `planledger serve` (or bench/handwritten.py) on `url` (a free loopback
    port, PLANLEDGER_HOME `home`), once it answers /healthz, and a client of it; stopped at
    the end."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLANLEDGER_")}
    env["PLANLEDGER_HOME"] = str(home)
    log = home / f"server{'-handwritten' if handwritten else ''}.log"
    command = [common.planledger(), "--database", url, "serve", "--port", str(port)]
    if handwritten:
        script = Path(__file__).with_name("handwritten.py")
        command = [sys.executable, str(script), "--database", url, "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    client = Http(port)
    try:
        deadline = time.monotonic() + 30
        while not client.healthy():
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the server did not answer /healthz:\n{log.read_text()[-2000:]}")
            time.sleep(0.05)
        yield client, process
    finally:
        client.connection.close()
        process.send_signal(signal.SIGCONT)
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def sessions(
    open_session: Callable[[str], object], steps: int
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(session, payload) of revisions 1-6 of one session after another, each session opened
    when its first revision is drawn (outside the timed call)."""
    prefix = uuid.uuid4().hex[:8]
    for n in itertools.count():
        session_id = f"c{prefix}-{n}"
        open_session(session_id)
        for revision in range(1, 7):
            yield session_id, common.plan(revision, steps)


def raw(conn: psycopg.Connection[Any]) -> Iterator[Op]:
    conn.execute("CREATE TABLE bench_raw (id bigserial PRIMARY KEY, payload bytea NOT NULL)")
    conn.commit()
    cursor = conn.cursor(binary=True)

    def op() -> None:
        cursor.execute("INSERT INTO bench_raw (payload) VALUES (%b)", (PAYLOAD,), prepare=True)
        conn.commit()

    while True:
        yield op


def in_process(service: PlanLedger, steps: int) -> Iterator[Op]:
    for session_id, payload in sessions(service.open_session, steps):

        def op(session_id: str = session_id, payload: dict[str, Any] = payload) -> None:
            decision = service.submit(session_id, payload)
            if decision.status != "committed":
                raise SystemExit(f"python: a submit was not committed: {decision!r}")

        yield op


def over_http(client: Http, steps: int) -> Iterator[Op]:
    def open_session(session_id: str) -> None:
        body = json.dumps({"session_id": session_id}).encode()
        status, answer = client.request("POST", "/sessions", body)
        if status != 201:
            raise SystemExit(f"http: POST /sessions answered {status}: {answer[:300]!r}")

    for session_id, payload in sessions(open_session, steps):
        path, body = f"/sessions/{session_id}/plan", json.dumps(payload).encode()

        def op(path: str = path, body: bytes = body) -> None:
            status, answer = client.request("POST", path, body)
            if status != 200:
                raise SystemExit(f"http: POST {path} answered {status}: {answer[:300]!r}")

        yield op


def run(ops: Iterator[Op], seconds: float) -> tuple[float, float]:
    """Commits per second inside the timed calls, and their p50 latency in seconds."""
    latencies: list[float] = []
    clock = time.perf_counter
    end = clock() + seconds
    while clock() < end:
        op = next(ops)  # untimed: the next payload, maybe a new session
        started = clock()
        op()
        latencies.append(clock() - started)
    return len(latencies) / sum(latencies), common.percentile(latencies, 0.5)


def main(argv: list[str] | None = None) -> None:
    p = common.parser("commit_rate", __doc__ or "", rounds=10)
    p.add_argument("--seconds", type=float, default=2.0, help="per variant per round")
    p.add_argument("--steps", type=int, default=50, help="steps in each plan")
    args = common.parse(p, argv)
    common.require_postgres(p, args)
    names = ["raw", "python", "http", "handwritten"]
    rates: dict[str, list[float]] = {name: [] for name in names}
    p50s: dict[str, list[float]] = {name: [] for name in names}
    with (
        tempfile.TemporaryDirectory(prefix="bench_cr_") as home,
        common.fresh_store(args.database, "bench_cr") as url,
        common.fresh_store(args.database, "bench_cr_http") as server_url,
        common.fresh_store(args.database, "bench_cr_hand") as hand_url,
        server(server_url, Path(home)) as (client, process),
        server(hand_url, Path(home), handwritten=True) as (hand_client, hand_process),
        psycopg.connect(common.search_path(url)) as conn,
        open_planledger(url, home=None) as service,
    ):
        variants = {
            "raw": raw(conn),
            "python": in_process(service, args.steps),
            "http": over_http(client, args.steps),
            "handwritten": over_http(hand_client, args.steps),
        }
        servers = {"http": (client, process), "handwritten": (hand_client, hand_process)}
        for r in range(-1, args.rounds):  # round -1 warms every variant up, unreported
            for name in names[r % 4 :] + names[: r % 4]:
                for other, (_, running) in servers.items():
                    running.send_signal(signal.SIGCONT if other == name else signal.SIGSTOP)
                if name in servers:
                    served = servers[name][0]
                    served.connection.close()  # a server drops connections idle for 5 s
                    assert served.healthy(), f"{name}: the server stopped answering"
                rate, p50 = run(variants[name], WARMUP_SECONDS if r < 0 else args.seconds)
                if r >= 0:
                    rates[name].append(rate)
                    p50s[name].append(p50 * 1000)
            if r >= 0:
                line = "  ".join(f"{name} {rates[name][-1]:8,.0f}/s" for name in names)
                print(f"round {r + 1}/{args.rounds}: {line}", flush=True)
        for _, running in servers.values():
            running.send_signal(signal.SIGCONT)
    base, hand = common.median(rates["raw"]), common.median(rates["handwritten"])
    figures: dict[str, dict[str, Any]] = {
        name: {
            "commits_per_s": common.spread(rates[name]),
            "p50_ms": round(common.median(p50s[name]), 4),
            "ratio_to_raw": common.ratio(common.median(rates[name]), base),
            "ratio_to_handwritten": common.ratio(common.median(rates[name]), hand),
        }
        for name in names
    }
    print(f"\n{'variant':<12} {'commits/s':>10} {'p50 ms':>8} {'x raw':>7} {'x hand':>7}")
    for name, f in figures.items():
        rate = f["commits_per_s"]["median"]
        print(
            f"{name:<12} {rate:>10,.1f} {f['p50_ms']:>8.3f} {f['ratio_to_raw'] or 0:>7.3f} "
            f"{f['ratio_to_handwritten'] or 0:>7.3f}"
        )
    targets = {
        "python_at_least_0.3x_raw": (figures["python"]["ratio_to_raw"] or 0) >= 0.3,
        "http_at_least_0.7x_handwritten": (figures["http"]["ratio_to_handwritten"] or 0) >= 0.7,
    }
    print("  ".join(f"{k}: {'met' if met else 'NOT met'}" for k, met in targets.items()))
    document = common.result(
        args, seconds=args.seconds, steps=args.steps, variants=figures, targets=targets
    )
    common.write_result(args.output, document)


if __name__ == "__main__":
    main()
