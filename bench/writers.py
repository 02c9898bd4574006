"""Many writers on one PostgreSQL store: N processes, each submitting strict-form revisions to
sessions of its own through `open_planledger().submit`, beside N processes doing single-row
INSERT + COMMIT into a plain table, in the same run.

    python bench/writers.py [--writers 1,2,4,8,16] [--seconds 5] [--rounds 3]
        [--waits N] [--database postgres|URL] [--output bench/results/writers.json]

Each round runs, for every N in turn, the raw writers then the ledger's, each for --seconds
with all N processes started together (a barrier) and counted over the same window. Reported:
the median over rounds of commits per second (all processes summed), the ledger's ratio to
raw, and the CPU per commit of the writing processes (`time.process_time` of each, from the
barrier) and of the PostgreSQL server (every `postgres` process's time in /proc, reaped
children included: only when the server runs on this machine, with whatever else it did
meanwhile); the ledger's rate at each N against its rate at 1 and against its best N. With
--waits N, what the backends wait for while N ledger writers run (bench/waits.py), in the last
round. Bars: one writer at least 0.3x raw; 8 writers at least 1.2x one writer and 0.8x the
best N. A writing ledger process holds about 4 connections, so 16
writers fit in a server's default 100.
"""

from __future__ import annotations

import functools
import multiprocessing
import sys
import tempfile
import time
import uuid
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any, NamedTuple

import common
import waits

from planledger.service import open_planledger

RAW_TABLE = "writers_raw"


class Tally(NamedTuple):
    """What the writer processes of one measurement report, each in its slot (shared arrays)."""

    counts: Any  # commits
    cpus: Any  # CPU seconds since the barrier


def ledger_writer(
    url: str, seconds: float, barrier: Barrier, tally: Tally, slot: int, home: str | None = None
) -> None:
    """(with a `home`: plan.json files, and the follower that keeps them)"""
    service = open_planledger(url, home=Path(home) if home else None)
    prefix, sessions, done = uuid.uuid4().hex[:8], 0, 0
    # The write side is built on a process's first write: not part of the rate measured.
    service.open_session(f"w{prefix}-warm")
    barrier.wait()
    cpu, deadline = time.process_time(), time.monotonic() + seconds
    while time.monotonic() < deadline:
        session_id = f"w{prefix}-{sessions}"
        sessions += 1
        service.open_session(session_id)
        for revision in range(1, 7):
            decision = service.submit(session_id, common.plan(revision))
            assert decision.status == "committed", decision
            done += 1
            if time.monotonic() >= deadline:
                break
    tally.counts[slot], tally.cpus[slot] = done, time.process_time() - cpu
    service.close()


def raw_writer(conninfo: str, seconds: float, barrier: Barrier, tally: Tally, slot: int) -> None:
    import psycopg

    payload = b"x" * 300
    with psycopg.connect(conninfo) as conn:
        barrier.wait()
        cpu, done, deadline = time.process_time(), 0, time.monotonic() + seconds
        while time.monotonic() < deadline:
            conn.execute(f"INSERT INTO {RAW_TABLE} (payload) VALUES (%s)", (payload,))
            conn.commit()
            done += 1
        tally.counts[slot], tally.cpus[slot] = done, time.process_time() - cpu


class Measured(NamedTuple):
    rate: float  # commits per second, all processes
    client_ms: float  # CPU of the writing processes per commit
    server_ms: float | None  # CPU of the PostgreSQL server per commit (None: not here)


def measure(target: Any, arg: str, writers: int, seconds: float) -> Measured:
    """Commits per second of `writers` processes running `target` together, and the CPU they
    and the server spent on each."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(writers + 1)
    tally = Tally(context.Array("q", writers), context.Array("d", writers))
    processes = [
        context.Process(target=target, args=(arg, seconds, barrier, tally, slot))
        for slot in range(writers)
    ]
    for process in processes:
        process.start()
    barrier.wait()
    started, server_before = time.monotonic(), common.server_seconds()
    for process in processes:
        process.join()
        if process.exitcode:
            raise SystemExit(f"a writer exited {process.exitcode}")
    elapsed = max(seconds, time.monotonic() - started)
    time.sleep(0.2)  # the writers' backends end with their connections: reaped, then counted
    server_after = common.server_seconds()
    done = max(1, sum(tally.counts[:]))
    server = None
    if server_before is not None and server_after is not None:
        server = (server_after - server_before) * 1000 / done
    return Measured(sum(tally.counts[:]) / elapsed, sum(tally.cpus[:]) * 1000 / done, server)


def main(argv: list[str] | None = None) -> int:
    p = common.parser("writers", __doc__ or "", rounds=3)
    p.add_argument("--writers", default="1,2,4,8,16", help="process counts, comma-separated")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--waits", type=int, default=0, help="sample pg_stat_activity at N writers")
    p.add_argument(
        "--plan-files",
        action="store_true",
        help="writers with one home, as open_planledger's default (~/.planledger) on one "
        "machine: plan.json files and, in each process, the follower that keeps them (and "
        "the views' position) up",
    )
    args = common.parse(p, argv)
    common.require_postgres(p, args)
    counts = [int(n) for n in args.writers.split(",")]
    import psycopg

    found: dict[str, dict[int, list[Measured]]] = {"raw": {}, "ledger": {}}
    waited: dict[str, int] = {}
    with (
        common.fresh_store(args.database, "writers") as url,
        tempfile.TemporaryDirectory(prefix="writers_home_") as home_folder,
    ):
        home = home_folder if args.plan_files else None
        open_planledger(url, home=None).close()  # the schema, made once
        conninfo = common.search_path(url)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f"CREATE TABLE {RAW_TABLE} (id bigserial PRIMARY KEY, payload bytea)")
        for round_ in range(args.rounds):
            for n in counts:
                raw = measure(raw_writer, conninfo, n, args.seconds)
                sampled = n == args.waits and round_ == args.rounds - 1
                sampler = waits.Sampler(conninfo).start() if sampled else None
                writer = functools.partial(ledger_writer, home=home)
                ledger = measure(writer, url, n, args.seconds)
                if sampler is not None:
                    waited = dict(sampler.stop().most_common(15))
                    print(waits.report(sampler.counts, sampler.samples), flush=True)
                found["raw"].setdefault(n, []).append(raw)
                found["ledger"].setdefault(n, []).append(ledger)
                print(
                    f"round {round_ + 1} writers={n}: raw {raw.rate:,.0f}/s  "
                    f"ledger {ledger.rate:,.0f}/s",
                    flush=True,
                )
    rows: dict[int, dict[str, Any]] = {}
    for n in counts:
        row: dict[str, Any] = {}
        for kind, measured in ((kind, found[kind][n]) for kind in found):
            row[kind] = common.median([m.rate for m in measured])
            row[f"{kind}_client_cpu_ms"] = common.median([m.client_ms for m in measured])
            servers = [m.server_ms for m in measured if m.server_ms is not None]
            row[f"{kind}_server_cpu_ms"] = common.median(servers) if servers else None
        row["ratio"] = common.ratio(row["ledger"], row["raw"])
        rows[n] = row
    best = max(row["ledger"] for row in rows.values())
    for row in rows.values():
        row["x_one_writer"] = common.ratio(row["ledger"], rows[counts[0]]["ledger"])
        row["x_best"] = common.ratio(row["ledger"], best)
    print(
        f"\n{'writers':>7} {'raw/s':>10} {'ledger/s':>10} {'x raw':>6} {'x one':>6} {'x best':>6}"
        f"  {'cpu ms per commit, client + server: raw':>40} {'ledger':>13}"
    )
    for n, row in rows.items():
        cpu = {
            k: f"{row[f'{k}_client_cpu_ms']:.2f} + {row[f'{k}_server_cpu_ms'] or 0:.2f}"
            for k in found
        }
        print(
            f"{n:>7} {row['raw']:>10,.0f} {row['ledger']:>10,.0f} {row['ratio'] or 0:>6.2f}"
            f" {row['x_one_writer'] or 0:>6.2f} {row['x_best'] or 0:>6.2f}"
            f"  {cpu['raw']:>40} {cpu['ledger']:>13}"
        )
    common.write_result(
        args.output, common.result(args, seconds=args.seconds, rows=rows, waits=waited)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
