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
and the ledger's and the HTTP clients' ratios to raw; for raw and the ledger, the CPU per commit
of the writing processes (`time.process_time` of each, from the barrier) and of the PostgreSQL
server (every `postgres` process's time in /proc, the postmaster's reaped children included:
only when the server runs on this machine, and with whatever else it did meanwhile), and how
often the writing processes were preempted per commit (involuntary context switches: with
more writers than cores, a writer is taken off its core mid-commit and comes back to caches
other processes have filled, so the same code costs more CPU), and the CPU a submit may use
for 0.5x raw on this machine's cores, beside what it used. The HTTP
clients (one keep-alive connection to each server) open their sessions on one server, in turn,
and read each one's plan back from the other. Issue 24's bars: ledger submits/s grow from 1 to
8 writers and reach at least 0.5x raw at 8 writers; one writer at least 0.3x raw.

A writing ledger process holds about 4 connections (its event store pool, opened one at a
time, and the views' writer and reader), so 16 writers fit in a server's default 100.
"""

from __future__ import annotations

import json
import multiprocessing
import resource
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any, NamedTuple

import common
from http_latency import Http, server

from planledger.service import open_planledger
from projections.forked import cores

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


def usage() -> tuple[float, int]:
    """This process's CPU seconds, and how often it was preempted, so far."""
    return time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw


class Tally(NamedTuple):
    """What the writer processes of one measurement report, each in its slot (shared arrays):
    commits, CPU seconds and preemptions since the barrier."""

    counts: Any
    cpus: Any
    preempted: Any

    def record(self, slot: int, done: int, since: tuple[float, int] | None = None) -> None:
        """`done` commits, and this process's usage since `since` (None: not measured)."""
        self.counts[slot] = done
        if since is not None:
            cpu, switches = usage()
            self.cpus[slot], self.preempted[slot] = cpu - since[0], switches - since[1]


def ledger_writer(url: str, seconds: float, barrier: Barrier, tally: Tally, slot: int) -> None:
    service = open_planledger(url, home=None)

    def submit(sid: str, revision: int) -> None:
        decision = service.submit(sid, plan(revision))
        assert decision.status == "committed", decision

    since = usage()  # (waiting at the barrier takes no CPU and is never a preemption)
    tally.record(slot, write_sessions(seconds, barrier, service.open_session, submit), since)
    service.close()


def http_writer(ports: str, seconds: float, barrier: Barrier, tally: Tally, slot: int) -> None:
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

    tally.record(slot, write_sessions(seconds, barrier, open_session, submit, closed))
    for client in servers:
        client.close()


def raw_writer(conninfo: str, seconds: float, barrier: Barrier, tally: Tally, slot: int) -> None:
    import psycopg

    payload = b"x" * 300
    with psycopg.connect(conninfo) as conn:
        barrier.wait()
        since = usage()
        done, deadline = 0, time.monotonic() + seconds
        while time.monotonic() < deadline:
            conn.execute(f"INSERT INTO {RAW_TABLE} (payload) VALUES (%s)", (payload,))
            conn.commit()
            done += 1
        tally.record(slot, done, since)


class Measured(NamedTuple):
    rate: float  # commits per second, all processes
    client_ms: float  # CPU of the writing processes per commit
    server_ms: float | None  # CPU of the PostgreSQL server per commit (None: not here)
    preempted: float  # involuntary context switches of the writing processes per commit


def measure(target: Any, arg: str, writers: int, seconds: float) -> Measured:
    """Commits per second of `writers` processes running `target` together, and the CPU they
    and the server spent on each."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(writers + 1)
    tally = Tally(
        context.Array("q", writers), context.Array("d", writers), context.Array("q", writers)
    )
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
    server = (
        (server_after - server_before) * 1000 / done
        if server_before is not None and server_after is not None
        else None
    )
    return Measured(
        float(sum(tally.counts[:])) / elapsed,
        sum(tally.cpus[:]) * 1000 / done,
        server,
        sum(tally.preempted[:]) / done,
    )


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
    found: dict[str, dict[int, list[Measured]]] = {kind: {} for kind in kinds}
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
                this = {
                    "raw": measure(raw_writer, conninfo, n, args.seconds),
                    "ledger": measure(ledger_writer, url, n, args.seconds),
                }
                with server(url, homes[0]) as (first, _), server(url, homes[1]) as (second, _):
                    ports = f"{first.port},{second.port}"
                    this["http"] = measure(http_writer, ports, n, args.seconds)
                for kind, measured in this.items():
                    found[kind].setdefault(n, []).append(measured)
                print(
                    f"round {round_ + 1} writers={n}: "
                    + "  ".join(f"{kind} {m.rate:,.0f}/s" for kind, m in this.items()),
                    flush=True,
                )
    print(
        f"\n{'writers':>7} {'raw/s':>10} {'ledger/s':>10} {'ratio':>6} {'http/s':>10} {'ratio':>6}"
        f"  {'cpu ms per commit, client + server: raw':>40} {'ledger':>15}"
        f"  {'preempted per commit: raw':>26} {'ledger':>7}"
    )
    rows = {}
    for n in counts:
        raw, ledger, over_http = (common.median([m.rate for m in found[k][n]]) for k in kinds)
        cpu = {
            f"{kind}_{side}_cpu_ms": median_or_none(
                [getattr(m, f"{side}_ms") for m in found[kind][n]]
            )
            for kind in ("raw", "ledger")
            for side in ("client", "server")
        }
        preempted = {
            f"{kind}_preempted": common.median([m.preempted for m in found[kind][n]])
            for kind in ("raw", "ledger")
        }
        rows[n] = {
            "raw": raw,
            "ledger": ledger,
            "ratio": ledger / raw if raw else None,
            "http_two_servers": over_http,
            "http_ratio": over_http / raw if raw else None,
            # This machine's CPU over half the raw rate (the writers and a local server share
            # it): what a submit may use, client and server together, for 0.5x raw.
            "cpu_budget_ms_at_half_raw": cores() / (0.5 * raw) * 1e3 if raw else None,
            **cpu,
            **preempted,
        }
        print(
            f"{n:>7} {raw:>10,.0f} {ledger:>10,.0f} {ledger / raw:>6.2f} "
            f"{over_http:>10,.0f} {over_http / raw:>6.2f}  "
            f"{cpu_text(cpu['raw_client_cpu_ms'], cpu['raw_server_cpu_ms']):>40} "
            f"{cpu_text(cpu['ledger_client_cpu_ms'], cpu['ledger_server_cpu_ms']):>15}"
            f"  {preempted['raw_preempted']:>26.2f} {preempted['ledger_preempted']:>7.2f}"
        )
    print_budget(rows, cores())
    common.write_result(args.output, common.result(args, seconds=args.seconds, rows=rows))
    return 0


def print_budget(rows: dict[int, dict[str, Any]], core_count: int) -> None:
    """What 0.5x raw at each writer count allows a submit, beside what a submit used."""
    print(f"\nCPU a submit may use for 0.5x raw on {core_count} cores, client and server together:")
    for n, row in rows.items():
        budget = row["cpu_budget_ms_at_half_raw"]
        client, server = row["ledger_client_cpu_ms"], row["ledger_server_cpu_ms"]
        used = client + server if client is not None and server is not None else None
        print(
            f"{n:>7} writers: {budget:.2f} ms; used {used:.2f} ms"
            if budget is not None and used is not None
            else f"{n:>7} writers: not measured"
        )


def median_or_none(values: list[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return common.median(known) if len(known) == len(values) else None


def cpu_text(client: float | None, server: float | None) -> str:
    server_text = f"{server:.2f}" if server is not None else "?"
    return f"{client:.2f} + {server_text}" if client is not None else "?"


if __name__ == "__main__":
    sys.exit(main())
