"""Where the time of one Ledger.submit() goes, on PostgreSQL (a companion of commit_rate.py).

    python bench/profile_submit.py [--variant c|c_stock|c_codex] [--submits 1200]
                                   [--mode breakdown|cprofile|roundtrips|growth|write]

breakdown  instruments the ledger's phases (parse, fingerprint, load, decide, save, ...), counts
           SQL statements and blocking network waits (~round trips) per submit, and splits the
           wall time into client CPU (time.process_time) and waiting for the server.
cprofile   the top functions by own time and by cumulative time.
roundtrips counts client->server turns per operation through a local TCP proxy (a turn = the
           client sends after having received), for a, b, c_stock and the ledger variant.
growth     one long Codex-form session (variant c_codex): submits/s per window of submits and
           the size of the latest stored snapshot, to show how cost grows with its history.
write      only the write path: insert_events() of one submit's two events through the
           library's stock recorder and through ours (planledger.storage.recorder), against a raw
           INSERT+COMMIT of the same bytes.

Variants are the ledger variants of commit_rate.py: c (as shipped), c_stock (the library's
stock recorder), c_codex (one long Codex-form session). Each run uses its own fresh schema,
dropped at the end. Nothing in planledger/ is modified: timing wrappers are installed on this
process's objects only.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import select
import statistics
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import commit_rate as cr
import common
import psycopg
import psycopg.waiting
from psycopg import sql

# -- a phase timer: self time per phase, with nesting ---------------------------------------


class Phases:
    def __init__(self) -> None:
        self.self_time: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.waits: Counter[str] = Counter()
        self.statements: Counter[str] = Counter()
        self.stack: list[list[Any]] = []  # [name, start, child_time]
        self.active = False  # only inside the timed submit (not the untimed open_session)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if not self.active:
            yield
            return
        start = time.perf_counter()
        self.stack.append([name, start, 0.0])
        try:
            yield
        finally:
            _, start, child = self.stack.pop()
            elapsed = time.perf_counter() - start
            self.self_time[name] += elapsed - child
            self.calls[name] += 1
            if self.stack:
                self.stack[-1][2] += elapsed

    def current(self) -> str:
        return self.stack[-1][0] if self.stack else "(outside)"

    def wrap(self, owner: Any, attr: str, name: str) -> None:
        original = getattr(owner, attr)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.phase(name):
                return original(*args, **kwargs)

        setattr(owner, attr, wrapper)


def install_network_counter(phases: Phases) -> None:
    """Replace psycopg's wait function: count (and time, as 'server wait') every blocking read."""
    wait_r = psycopg.waiting.Wait.R
    ready_r, ready_w = psycopg.waiting.Ready.R, psycopg.waiting.Ready.W

    def wait(gen: Any, fileno: int, interval: float = 0.0, timeout: float | None = None) -> Any:
        try:
            s = next(gen)
            while True:
                want_r = bool(s & wait_r)
                rlist = [fileno] if want_r else []
                wlist = [fileno] if s & psycopg.waiting.Wait.W else []
                r, w, _ = select.select(rlist, wlist, [], 0)
                if not r and not w and phases.active:
                    if want_r:
                        phases.waits[phases.current()] += 1
                    with phases.phase("  server wait (network+SQL+fsync)"):
                        r, w, _ = select.select(rlist, wlist, [], None)
                ready = (ready_r if r else 0) | (ready_w if w else 0)
                s = gen.send(ready)
        except StopIteration as stop:
            return stop.value

    psycopg.waiting.wait = wait

    original_execute = psycopg.Cursor.execute

    def execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(query, bytes):
            text = query.decode()
        elif hasattr(query, "as_string"):
            text = query.as_string(None)
        else:
            text = str(query)
        if phases.active:
            phases.statements[" ".join(text.split()[:2])[:40]] += 1
        return original_execute(self, query, *args, **kwargs)

    psycopg.Cursor.execute = execute  # type: ignore[method-assign]


def instrument_ledger(app: Any, phases: Phases) -> None:
    import eventsourcing.application as es_app

    import planledger.service.ledger as ledger_module
    from domain.plan import Plan

    phases.wrap(ledger_module, "parse_proposal", "parse_proposal (pydantic models)")
    phases.wrap(ledger_module, "fingerprint", "fingerprint (json+sha256)")
    phases.wrap(app, "_plan", "load: repository.get")
    phases.wrap(app.recorder, "select_events", "load: SELECT events")
    if app.snapshots is not None:
        phases.wrap(app.snapshots.recorder, "select_events", "load: SELECT snapshot")
        phases.wrap(app.snapshots.recorder, "insert_events", "snapshot: INSERT")
    phases.wrap(app.mapper, "to_domain_event", "decode event (json+pydantic)")
    phases.wrap(app.mapper, "to_stored_event", "encode event (pydantic+json)")
    phases.wrap(es_app, "deepcopy", "load: deepcopy from cache")
    for event_class in (Plan.PlanCreated, Plan.PlanProposed, Plan.PlanCommitted, Plan.PlanRejected):
        phases.wrap(event_class, "mutate", "apply event (rules on replay)")
    phases.wrap(Plan, "propose", "propose (trigger events)")
    phases.wrap(Plan, "decide", "decide (rules + trigger)")
    phases.wrap(app, "save", "save: Application.save")
    phases.wrap(app.recorder, "insert_events", "save: insert_events (SQL)")
    phases.wrap(app, "_take_snapshots", "save: take snapshots")


# -- modes -----------------------------------------------------------------------------------


@contextmanager
def variant_in_schema(database: str, key: str) -> Iterator[cr.LedgerVariant]:
    schema = f"bench_prof_{key}_{os.getpid()}_{uuid.uuid4().hex[:6]}".lower()
    common.create_schema(cr.conninfo(database), schema)
    variant = cr.VARIANTS[key](database, schema)
    assert isinstance(variant, cr.LedgerVariant), "profile a ledger variant (c...)"
    try:
        variant.start()
        yield variant
    finally:
        variant.close()
        common.drop_schema(cr.conninfo(database), schema)


def drive(variant: cr.LedgerVariant, submits: int) -> tuple[float, float, list[float]]:
    """Run `submits` timed operations; returns (wall in calls, cpu in calls, latencies)."""
    ops = variant._ops
    wall = cpu = 0.0
    latencies = []
    for _ in range(submits):
        op = next(ops)
        c0, w0 = time.process_time(), time.perf_counter()
        op()
        w1, c1 = time.perf_counter(), time.process_time()
        wall += w1 - w0
        cpu += c1 - c0
        latencies.append(w1 - w0)
    return wall, cpu, latencies


def breakdown(args: argparse.Namespace) -> None:
    with variant_in_schema(args.database, args.variant) as variant:
        drive(variant, args.warmup)
        # Plain timing first (no wrappers), then the instrumented run.
        wall, cpu, lat = drive(variant, args.submits)
        print(f"variant {args.variant}: {variant.label}")
        print(
            f"uninstrumented: {args.submits / wall:.1f} submits/s, "
            f"p50 {1000 * statistics.median(lat):.3f} ms, mean {1000 * wall / args.submits:.3f}"
            f" ms, client CPU {1000 * cpu / args.submits:.3f} ms/submit "
            f"({100 * cpu / wall:.0f}% of wall)"
        )
        phases = Phases()
        instrument_ledger(variant.app, phases)
        install_network_counter(phases)
        submit = variant.app.submit

        def timed_submit(*a: Any, **k: Any) -> Any:
            phases.active = True
            try:
                with phases.phase("submit (other ledger code)"):
                    return submit(*a, **k)
            finally:
                phases.active = False

        variant.app.submit = timed_submit  # type: ignore[method-assign]
        wall, cpu, _ = drive(variant, args.submits)
        n = args.submits
    print(f"instrumented:   {n / wall:.1f} submits/s (wrappers add overhead)\n")
    print(
        f"{'phase (self time)':<40} {'ms/submit':>10} {'share':>6} {'calls/submit':>13} "
        f"{'blocking reads/submit':>22}"
    )
    total = sum(phases.self_time.values())
    for name, seconds in phases.self_time.most_common():
        print(
            f"{name:<40} {1000 * seconds / n:>10.3f} {100 * seconds / total:>5.1f}% "
            f"{phases.calls[name] / n:>13.2f} {phases.waits.get(name, 0) / n:>22.2f}"
        )
    print(f"{'total':<40} {1000 * total / n:>10.3f}")
    print(
        f"\nblocking network reads per submit (~round trips): {sum(phases.waits.values()) / n:.2f}"
    )
    print("SQL statements per submit:")
    for text, count in phases.statements.most_common():
        print(f"  {count / n:6.2f}  {text}")


def profile(args: argparse.Namespace) -> None:
    with variant_in_schema(args.database, args.variant) as variant:
        drive(variant, args.warmup)
        profiler = cProfile.Profile()
        profiler.enable()
        wall, _, _ = drive(variant, args.submits)
        profiler.disable()
    print(f"variant {args.variant}: {args.submits / wall:.1f} submits/s under cProfile")
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.strip_dirs().sort_stats(order).print_stats(args.top)
        print(out.getvalue())


def write_path(args: argparse.Namespace) -> None:
    """insert_events() of one submit's two events, in isolation: stock recorder vs ours."""
    from eventsourcing.persistence import StoredEvent
    from eventsourcing.postgres import PostgresApplicationRecorder

    with variant_in_schema(args.database, "c") as variant:
        # Real stored events of one submit, re-numbered per iteration.
        app = variant.app
        drive(variant, 6)
        sample = list(app.recorder.select_events(f"plan:{_first_session(variant)}"))[1:3]
        recorder: Any = app.recorder

        def events(n: int) -> list[StoredEvent]:
            return [StoredEvent(f"w:{n}", i + 1, e.topic, e.state) for i, e in enumerate(sample)]

        # The stock recorder on the same datastore (pool) and table.
        stock: Any = PostgresApplicationRecorder.__new__(PostgresApplicationRecorder)
        stock.__dict__.update(recorder.__dict__)

        conn = psycopg.connect(cr.conninfo(args.database))
        try:
            raw_table = sql.Identifier(recorder.datastore.schema, "raw")
            conn.execute(
                sql.SQL("CREATE TABLE {} (id bigserial PRIMARY KEY, payload bytea)").format(
                    raw_table
                )
            )
            conn.commit()
            payload = sample[0].state + sample[1].state
            raw_insert = sql.SQL("INSERT INTO {} (payload) VALUES (%b)").format(raw_table)

            def raw(_: list[StoredEvent]) -> None:
                conn.execute(raw_insert, (payload,), prepare=True)
                conn.commit()

            cases: dict[str, Callable[[list[StoredEvent]], Any]] = {
                f"raw INSERT+COMMIT of the same {len(payload)} bytes": raw,
                "stock recorder (BEGIN | SET,LOCK,NOTIFY,INSERT | COMMIT)": stock.insert_events,
                f"{type(recorder).__name__} (one sync)": recorder.insert_events,
            }
            counter = 0
            per_round = max(1, args.submits // args.rounds)
            results: dict[str, list[float]] = defaultdict(list)
            for _ in range(args.rounds):
                for name, fn in cases.items():
                    start = time.perf_counter()
                    for _ in range(per_round):
                        counter += 1
                        fn(events(counter))
                    results[name].append(per_round / (time.perf_counter() - start))
        finally:
            conn.close()
    print(f"{'write path only (2 events = 1 submit)':<58} {'median/s':>9} {'ms':>7}")
    for name, rates in results.items():
        rate = statistics.median(rates)
        print(f"{name:<58} {rate:>9.1f} {1000 / rate:>7.3f}")


class TurnCountingProxy:
    """A TCP proxy that counts request turns: client bytes sent after server bytes arrived."""

    def __init__(self, host: str, port: int) -> None:
        import socket
        import threading

        self.target = (host, port)
        self.turns = 0
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            client, _ = self.listener.accept()
            server = socket.create_connection(self.target)
            for s in (client, server):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    def _pump(self, client: Any, server: Any) -> None:
        last = "server"
        while True:
            readable, _, _ = select.select([client, server], [], [])
            for sock in readable:
                data = sock.recv(1 << 20)
                if not data:
                    client.close()
                    server.close()
                    return
                if sock is client:
                    if last == "server":
                        self.turns += 1
                    last = "client"
                    server.sendall(data)
                else:
                    last = "server"
                    client.sendall(data)


def roundtrips(args: argparse.Namespace) -> None:
    from urllib.parse import urlsplit

    parts = urlsplit(cr.conninfo(args.database))
    proxy = TurnCountingProxy(parts.hostname or "127.0.0.1", parts.port or 5432)
    proxied = args.database.replace(f":{parts.port or 5432}/", f":{proxy.port}/", 1)
    if proxied == args.database:
        raise SystemExit("give --database with an explicit :port")
    keys = list(dict.fromkeys(["a", "b", "c_stock", args.variant]))
    print(f"{'variant':<15} {'turns/op':>9}   (client->server turns through a proxy)")
    for key in keys:
        schema = f"bench_rt_{key}_{os.getpid()}_{uuid.uuid4().hex[:6]}".lower()
        common.create_schema(cr.conninfo(args.database), schema)
        variant = cr.VARIANTS[key](proxied, schema)
        try:
            variant.start()
            ops = variant._ops
            for _ in range(args.warmup):
                next(ops)()
            turns = 0
            for _ in range(args.submits):
                op = next(ops)  # untimed set-up (open_session) is not counted
                time.sleep(0)
                before = proxy.turns
                op()
                time.sleep(0.0005)  # let the proxy thread see the last response
                turns += proxy.turns - before
            print(f"{key:<15} {turns / args.submits:>9.2f}")
        finally:
            variant.close()
            common.drop_schema(cr.conninfo(args.database), schema)


def growth(args: argparse.Namespace) -> None:
    key = "c_codex"
    window = max(1, args.submits // 10)
    print(f"variant {key}: one session, windows of {window} submits")
    print(
        f"{'submits so far':>14} {'submits/s':>10} {'p50 ms':>8} {'snapshot bytes':>15} "
        f"{'outcomes kept':>14}"
    )
    with variant_in_schema(args.database, key) as variant:
        app = variant.app
        done = 0
        while done < args.submits:
            wall, _, lat = drive(variant, window)
            done += window
            size = outcomes = 0
            if app.snapshots is not None:
                session = next(iter(app.session_ids()))
                snaps = app.snapshots.recorder.select_events(f"plan:{session}", desc=True, limit=1)
                if snaps:
                    size = len(snaps[0].state)
                outcomes = len(app._plan(session).outcomes)
            print(
                f"{done:>14} {window / wall:>10.1f} {1000 * statistics.median(lat):>8.3f} "
                f"{size:>15} {outcomes:>14}"
            )


def _first_session(variant: cr.LedgerVariant) -> str:
    topic = "domain.session:Session.SessionOpened"
    page = variant.app.recorder.select_notifications(1, 1, topics=[topic])
    return str(page[0].originator_id).removeprefix("session:")


def main() -> None:
    parser = common.parser("profile_submit", __doc__ or "")
    ledger_variants = [k for k, v in cr.VARIANTS.items() if issubclass(v, cr.LedgerVariant)]
    parser.add_argument(
        "--variant", default="c", choices=ledger_variants, help="(growth always uses c_codex)"
    )
    parser.add_argument("--submits", type=int, default=1200)
    parser.add_argument("--warmup", type=int, default=120)
    parser.add_argument("--top", type=int, default=35)
    parser.add_argument(
        "--mode",
        default="breakdown",
        choices=("breakdown", "cprofile", "write", "roundtrips", "growth"),
    )
    args = common.parse(parser)
    args.database = common.admin_url(args.database)
    modes = {
        "breakdown": breakdown,
        "cprofile": profile,
        "write": write_path,
        "roundtrips": roundtrips,
        "growth": growth,
    }
    modes[args.mode](args)


if __name__ == "__main__":
    main()
