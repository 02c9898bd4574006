"""Costs that must not grow with the store: one submit, one plan read and one session's verify,
measured on one store as it grows from empty to `--events` events.

    python bench/flat_costs.py [--database sqlite|postgres|URL] [--events 1000000]
        [--sizes 4] [--samples 200]

The store is filled through the service in bulk (`submit_sessions`: sessions of 20 calls, each
call two events), so every event is real and every view row is written; at each size (empty,
then 10^k events up to `--events`) it measures, on sessions it opens fresh, the p50 and p90 of
`submit` (a 5-step Codex plan), `plan` (the view) and `verify([one session])`, and prints each
beside its value on the empty store. Flat means the ratio stays near 1.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import common

from planledger.service import Call, PlanLedger, open_planledger

CALLS_PER_SESSION = 20
EVENTS_PER_CALL = 2  # proposed + committed


def plan(n: int) -> dict[str, Any]:
    return {
        "plan": [{"step": f"Step {n}.{k}", "status": "pending"} for k in range(4)]
        + [{"step": f"Step {n}.now", "status": "in_progress"}]
    }


def fill(service: PlanLedger, prefix: str, events: int) -> None:
    """Add about `events` events in sessions of CALLS_PER_SESSION calls, 100 sessions a
    transaction."""
    sessions = max(1, events // (CALLS_PER_SESSION * EVENTS_PER_CALL))
    for start in range(0, sessions, 100):
        batch = {
            f"{prefix}-{n}": [Call(plan(k), f"c{n}.{k}", "bench") for k in range(CALLS_PER_SESSION)]
            for n in range(start, min(start + 100, sessions))
        }
        service.submit_sessions(batch, open_missing=True)


def settle(url: str) -> None:
    """After a bulk fill, do the upkeep the database would soon do on its own, so the probes
    measure the store, not the fill's aftermath: fold SQLite's write-ahead log into the file
    (its automatic checkpoints), or VACUUM ANALYZE PostgreSQL's tables (autovacuum, which
    would otherwise run beside the probes on a freshly filled table)."""
    if url.startswith("sqlite:"):
        import sqlite3

        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return
    import psycopg

    base, _, query = url.partition("?")
    schema = dict(part.split("=", 1) for part in query.split("&") if "=" in part)["schema"]
    with psycopg.connect(base, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
        ).fetchall()
        for (table,) in tables:
            conn.execute(f'VACUUM (ANALYZE) "{schema}"."{table}"')


def measure(service: PlanLedger, tag: str, samples: int) -> dict[str, dict[str, float]]:
    timings: dict[str, list[float]] = {"submit": [], "plan": [], "verify_one": []}
    for n in range(samples):
        session_id = f"probe-{tag}-{n}"
        service.open_session(session_id)
        started = time.perf_counter()
        service.submit(session_id, plan(n))
        timings["submit"].append(time.perf_counter() - started)
        started = time.perf_counter()
        service.plan(session_id)
        timings["plan"].append(time.perf_counter() - started)
        started = time.perf_counter()
        report = service.verify([session_id])
        timings["verify_one"].append(time.perf_counter() - started)
        assert report.ok
    return {
        name: {
            "p50_ms": common.percentile(values, 0.5) * 1000,
            "p90_ms": common.percentile(values, 0.9) * 1000,
        }
        for name, values in timings.items()
    }


def main() -> None:
    p = common.parser("flat_costs", __doc__ or "", rounds=1, database="sqlite")
    p.add_argument("--events", type=int, default=1_000_000, help="the store's final size")
    p.add_argument("--sizes", type=int, default=4, help="sizes measured after the empty store")
    p.add_argument("--samples", type=int, default=200, help="probes per size")
    args = common.parse(p)
    sizes = [0] + [args.events // 10 ** (args.sizes - 1 - k) for k in range(args.sizes)]
    rows: list[dict[str, Any]] = []
    with common.fresh_store(args.database, "flat") as url:
        service = open_planledger(url, home=None)
        try:
            measure(service, "warm-up", 20)  # first uses build the models: not the store's cost
            filled = 0
            for size in sizes:
                started = time.perf_counter()
                fill(service, f"fill{size}", size - filled)
                filled = size
                took = time.perf_counter() - started
                settle(url)
                reached = service.views.status()[1]
                costs = measure(service, str(size), args.samples)
                rows.append({"events": reached, "fill_seconds": took, **costs})
                print(
                    f"{reached:>9} events (filled in {took:6.1f} s): "
                    + "  ".join(f"{k} {v['p50_ms']:.2f} ms" for k, v in costs.items()),
                    file=sys.stderr,
                )
        finally:
            service.close()
    base = rows[0]
    print(f"{'events':>9} {'submit p50':>22} {'plan p50':>22} {'verify one p50':>22}")
    for row in rows:
        cells = []
        for name in ("submit", "plan", "verify_one"):
            value = row[name]["p50_ms"]
            cells.append(f"{value:12.3f} ms ({value / base[name]['p50_ms']:5.2f}x)")
        print(f"{row['events']:>9} " + " ".join(cells))
    common.write_result(args.output, common.result(args, sizes=rows))


if __name__ == "__main__":
    main()
