"""Many writers on one PostgreSQL store (issue 24): N processes, each submitting strict-form
revisions to sessions of its own through `open_planledger().submit`, beside N processes doing
single-row INSERT + COMMIT into a plain table, and N HTTP clients posting the same revisions to
two `planledger serve` processes on the store, in the same run.

    python bench/writers.py [--writers 1,2,4,8,16] [--seconds 5] [--rounds 3]
        [--database postgres|URL] [--output bench/results/writers.json]

Each round runs, for every N in turn, the raw baseline, the ledger and the HTTP clients (the
two servers started for the HTTP row and stopped after it: idle, they would still follow
every commit, and their pools keep the connections a row opened), each for
`--seconds` seconds with all N processes started together (a barrier) and counted over the
same window. Reported: the median over rounds of commits per second (all processes summed),
and the ledger's and the HTTP clients' ratios to raw. The HTTP clients (one keep-alive
connection to each server) open their sessions on one server, in turn, and read each one's plan
back from the other. Issue 24's bars: ledger submits/s grow from 1 to 8 writers and
reach at least 0.5x raw at 8 writers; one writer at least 0.3x raw.

A writing ledger process holds about 4 connections (its event store pool, opened one at a
time, and the views' writer and reader), so 16 writers fit in a server's default 100.
"""

from __future__ import annotations

import json
import multiprocessing
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import common
from http_latency import Http, server

from planledger.service import open_planledger

RAW_TABLE = "writers_raw"


def plan(revision: int) -> dict[str, Any]:
    """Revision `revision` (1-6) of a 5-step plan: step k completed, k+1 in progress."""
    steps = []
    for k in range(1, 6):
        done = k < revision
        status = "completed" if done else "in_progress" if k == revision else "pending"
        steps.append({"id": f"s{k}", "title": f"Step {k} of the work", "status": status})
    return {"title": "Bench plan", "expected_revision": revision - 1, "steps": steps}


def write_sessions(
    seconds: float,
    barrier: Barrier,
    open_session: Callable[[str], object],
    submit: Callable[[str, int], None],
    closed: Callable[[str], None] = lambda sid: None,
) -> int:
    """After the barrier, for `seconds`: open a session, submit its revisions 1-6 (each
    checked by `submit`), `closed(session)`, and again; returns how many were submitted."""
    prefix = uuid.uuid4().hex[:8]
    sessions = done = 0
    barrier.wait()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sid = f"w{prefix}-{sessions}"
        sessions += 1
        open_session(sid)
        for revision in range(1, 7):
            submit(sid, revision)
            done += 1
            if time.monotonic() >= deadline:
                break
        closed(sid)
    return done


def ledger_writer(url: str, seconds: float, barrier: Barrier, counts: Any, slot: int) -> None:
    service = open_planledger(url, home=None)

    def submit(sid: str, revision: int) -> None:
        decision = service.submit(sid, plan(revision))
        assert decision.status == "committed", decision

    counts[slot] = write_sessions(seconds, barrier, service.open_session, submit)
    service.close()


def http_writer(ports: str, seconds: float, barrier: Barrier, counts: Any, slot: int) -> None:
    """Writer `slot` posts to one of the two servers, its sessions alternating between them;
    each session's plan is then read from the other server (a writer reads its write on any
    server)."""
    servers = [Http(int(port)) for port in ports.split(",")]
    turn = [slot]  # the session's server: servers[turn % 2]; the other reads it back

    def open_session(sid: str) -> None:
        turn[0] += 1
        status, body = servers[turn[0] % 2].post("/sessions", {"session_id": sid})
        assert status == 201, (status, body)

    def submit(sid: str, revision: int) -> None:
        status, body = servers[turn[0] % 2].post(f"/sessions/{sid}/plan", plan(revision))
        assert status == 200 and json.loads(body)["status"] == "committed", (status, body)

    def closed(sid: str) -> None:
        status, body = servers[(turn[0] + 1) % 2].get(f"/sessions/{sid}/plan")
        assert status == 200 and json.loads(body)["revision"] >= 1, (status, body)

    counts[slot] = write_sessions(seconds, barrier, open_session, submit, closed)
    for client in servers:
        client.close()


def raw_writer(conninfo: str, seconds: float, barrier: Barrier, counts: Any, slot: int) -> None:
    import psycopg

    payload = b"x" * 300
    with psycopg.connect(conninfo) as conn:
        barrier.wait()
        done, deadline = 0, time.monotonic() + seconds
        while time.monotonic() < deadline:
            conn.execute(f"INSERT INTO {RAW_TABLE} (payload) VALUES (%s)", (payload,))
            conn.commit()
            done += 1
    counts[slot] = done


def measure(target: Any, arg: str, writers: int, seconds: float) -> float:
    """Commits per second of `writers` processes running `target` together."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(writers + 1)
    counts = context.Array("q", writers)
    processes = [
        context.Process(target=target, args=(arg, seconds, barrier, counts, slot))
        for slot in range(writers)
    ]
    for process in processes:
        process.start()
    barrier.wait()
    started = time.monotonic()
    for process in processes:
        process.join()
        if process.exitcode:
            raise SystemExit(f"a writer exited {process.exitcode}")
    elapsed = max(seconds, time.monotonic() - started)
    return float(sum(counts[:])) / elapsed


def main(argv: list[str] | None = None) -> int:
    p = common.parser("writers", __doc__ or "", rounds=3, database="postgres")
    p.add_argument("--writers", default="1,2,4,8,16", help="process counts, comma-separated")
    p.add_argument("--seconds", type=float, default=5.0)
    args = common.parse(p, argv)
    counts = [int(n) for n in args.writers.split(",")]
    if not args.database.startswith("postgres"):
        raise SystemExit("writers.py measures PostgreSQL (the store many machines share)")
    import psycopg

    kinds = ("raw", "ledger", "http")
    rates: dict[str, dict[int, list[float]]] = {kind: {} for kind in kinds}
    with (
        common.fresh_store(args.database, "writers") as url,
        tempfile.TemporaryDirectory(prefix="writers_") as scratch,
    ):
        open_planledger(url, home=None).close()  # the schema, made once
        base, _, query = url.partition("?")
        schema = query.removeprefix("schema=")
        conninfo = f"{base}?options=-csearch_path%3D{schema}"
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f"CREATE TABLE {RAW_TABLE} (id bigserial PRIMARY KEY, payload bytea)")
        homes = [Path(scratch) / name for name in ("a", "b")]
        for home in homes:
            home.mkdir()
        for round_ in range(args.rounds):
            for n in counts:
                found = {
                    "raw": measure(raw_writer, conninfo, n, args.seconds),
                    "ledger": measure(ledger_writer, url, n, args.seconds),
                }
                with server(url, homes[0]) as (first, _), server(url, homes[1]) as (second, _):
                    ports = f"{first.port},{second.port}"
                    found["http"] = measure(http_writer, ports, n, args.seconds)
                for kind, rate in found.items():
                    rates[kind].setdefault(n, []).append(rate)
                print(
                    f"round {round_ + 1} writers={n}: "
                    + "  ".join(f"{kind} {rate:,.0f}/s" for kind, rate in found.items()),
                    flush=True,
                )
    print(
        f"\n{'writers':>7} {'raw/s':>10} {'ledger/s':>10} {'ratio':>6} {'http/s':>10} {'ratio':>6}"
    )
    rows = {}
    for n in counts:
        raw, ledger, over_http = (common.median(rates[k][n]) for k in kinds)
        rows[n] = {
            "raw": raw,
            "ledger": ledger,
            "ratio": ledger / raw if raw else None,
            "http_two_servers": over_http,
            "http_ratio": over_http / raw if raw else None,
        }
        print(
            f"{n:>7} {raw:>10,.0f} {ledger:>10,.0f} {ledger / raw:>6.2f} "
            f"{over_http:>10,.0f} {over_http / raw:>6.2f}"
        )
    common.write_result(args.output, common.result(args, seconds=args.seconds, rows=rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
