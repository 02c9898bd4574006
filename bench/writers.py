"""Many writers on one PostgreSQL store (issue 24): N processes, each submitting strict-form
revisions to sessions of its own through `open_planledger().submit`, beside N processes doing
single-row INSERT + COMMIT into a plain table, in the same run.

    python bench/writers.py [--writers 1,2,4,8] [--seconds 5] [--rounds 3]
        [--database postgres|URL] [--output bench/results/writers.json]

Each round runs, for every N in turn, the raw baseline and then the ledger, each for
`--seconds` seconds with all N processes started together (a barrier) and counted over the
same window. Reported: the median over rounds of commits per second (all processes summed),
and the ledger's ratio to raw. Issue 24's bars: ledger submits/s grow from 1 to 8 writers and
reach at least 0.5x raw at 8 writers; one writer at least 0.3x raw.

A ledger process holds about 8 connections (its writer, readers, views and live feed), so 16
writers need a server with `max_connections` above 130 (the default is 100).
"""

from __future__ import annotations

import multiprocessing
import sys
import time
import uuid
from multiprocessing.synchronize import Barrier
from typing import Any

import common

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


def ledger_writer(url: str, seconds: float, barrier: Barrier, counts: Any, slot: int) -> None:
    service = open_planledger(url, home=None)
    prefix = uuid.uuid4().hex[:8]
    sessions = 0
    barrier.wait()
    done, deadline = 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        sid = f"w{prefix}-{sessions}"
        sessions += 1
        service.open_session(sid)
        for revision in range(1, 7):
            decision = service.submit(sid, plan(revision))
            assert decision.status == "committed", decision
            done += 1
            if time.monotonic() >= deadline:
                break
    counts[slot] = done
    service.close()


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
    return sum(counts) / elapsed


def main(argv: list[str] | None = None) -> int:
    p = common.parser("writers", __doc__ or "", rounds=3, database="postgres")
    p.add_argument("--writers", default="1,2,4,8", help="process counts, comma-separated")
    p.add_argument("--seconds", type=float, default=5.0)
    args = common.parse(p, argv)
    counts = [int(n) for n in args.writers.split(",")]
    if not args.database.startswith("postgres"):
        raise SystemExit("writers.py measures PostgreSQL (the store many machines share)")
    import psycopg

    rates: dict[str, dict[int, list[float]]] = {"raw": {}, "ledger": {}}
    with common.fresh_store(args.database, "writers") as url:
        open_planledger(url, home=None).close()  # the schema, made once
        base, _, query = url.partition("?")
        schema = query.removeprefix("schema=")
        conninfo = f"{base}?options=-csearch_path%3D{schema}"
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f"CREATE TABLE {RAW_TABLE} (id bigserial PRIMARY KEY, payload bytea)")
        for round_ in range(args.rounds):
            for n in counts:
                raw = measure(raw_writer, conninfo, n, args.seconds)
                ledger = measure(ledger_writer, url, n, args.seconds)
                rates["raw"].setdefault(n, []).append(raw)
                rates["ledger"].setdefault(n, []).append(ledger)
                print(
                    f"round {round_ + 1} writers={n}: raw {raw:,.0f}/s ledger {ledger:,.0f}/s",
                    flush=True,
                )
    print(f"\n{'writers':>7} {'raw/s':>10} {'ledger/s':>10} {'ratio':>6}")
    rows = {}
    for n in counts:
        raw, ledger = (common.median(rates[k][n]) for k in ("raw", "ledger"))
        rows[n] = {"raw": raw, "ledger": ledger, "ratio": ledger / raw if raw else None}
        print(f"{n:>7} {raw:>10,.0f} {ledger:>10,.0f} {ledger / raw:>6.2f}")
    common.write_result(args.output, common.result(args, seconds=args.seconds, rows=rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
