"""Read-side benchmark on PostgreSQL: commit-to-view lag, and rebuild throughput.

    python bench/projection_lag.py [--commits 2000] [--rate 200] [--events 100000]
                                   [--out bench/results/projection_lag.json]

Lag: a writer commits plan updates at a steady rate while a ProjectionRunner follows (woken by
LISTEN/NOTIFY); for each commit, lag = the time the runner's views first include the commit's
notification id minus the time submit() returned. Reported with the library's own polling
interval (100 ms in its wait()) as the figure to beat.

Rebuild: at least --events events are written (whole plans decided in memory and saved in
large batches, so the events are real and valid), then `rebuild()` drops the views and applies
them all again; reported as events per second.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from domain.forms import parse_proposal
from domain.ids import plan_aggregate_id, session_aggregate_id
from domain.plan import Plan
from domain.session import Mode, Session
from planledger.service.ledger import Ledger, fingerprint
from projections.runner import ProjectionRunner

BASE_URL = os.environ.get(
    "PLANLEDGER_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
STEPS = 5


def payload(session_round: int) -> dict[str, Any]:
    """Round r of a 5-step plan: r steps completed, the next one in progress."""
    steps = []
    for n in range(STEPS):
        status = (
            "completed" if n < session_round else "in_progress" if n == session_round else "pending"
        )
        steps.append({"id": f"s{n}", "title": f"Step {n} of the plan", "status": status})
    return {"title": "Benchmark plan", "steps": steps}


class TimedRunner(ProjectionRunner):
    """Records when each position became visible in the views."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.advances: list[tuple[int, float]] = []
        super().__init__(*args, **kwargs)

    def _advance(self, position: int) -> None:
        self.advances.append((position, time.perf_counter()))
        super()._advance(position)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure_lag(url: str, commits: int, rate: float) -> dict[str, Any]:
    app = Ledger(url)
    runner = TimedRunner(app.database, app.mapper)
    stop = threading.Event()
    follower = threading.Thread(target=runner.run, args=(stop,), kwargs={"idle_timeout": 1.0})
    follower.start()
    sessions = [f"lag-{n}" for n in range(max(1, commits // STEPS + 1))]
    committed: list[tuple[int, float]] = []
    interval = 1.0 / rate
    next_at = time.perf_counter()
    for index in range(commits):
        session_id = sessions[index // STEPS]
        if index % STEPS == 0:
            app.open_session(session_id)
        next_at += interval
        delay = next_at - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        decision = app.submit(session_id, payload(index % STEPS))
        assert decision.status == "committed" and decision.position is not None
        committed.append((decision.position, time.perf_counter()))
    deadline = time.monotonic() + 10
    while runner.position < committed[-1][0] and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    app.open_session(f"wake-{uuid.uuid4().hex[:6]}")
    follower.join(timeout=10)
    advances = runner.advances
    lags = []
    cursor = 0
    for position, at in committed:
        while cursor < len(advances) and advances[cursor][0] < position:
            cursor += 1
        if cursor == len(advances):
            raise RuntimeError(f"position {position} never became visible")
        lags.append(max(0.0, advances[cursor][1] - at) * 1000)
    runner.close()
    app.close()
    return {
        "commits": commits,
        "target_rate_per_s": rate,
        "lag_ms": {
            "p50": statistics.median(lags),
            "p90": percentile(lags, 0.90),
            "p99": percentile(lags, 0.99),
            "max": max(lags),
            "mean": statistics.fmean(lags),
        },
        "library_wait_poll_ms": 100,
    }


def write_events(app: Ledger, events: int) -> int:
    """Open sessions and decide their plans in memory; save in large batches. Returns count."""
    written = 0
    batch: list[Any] = []
    n = 0
    while written < events:
        session_id = f"rb-{n}"
        n += 1
        session = Session.open(session_aggregate_id(session_id), session_id, Mode.WORK)
        plan = Plan.create(plan_aggregate_id(session_id), session_id)
        for r in range(STEPS):
            body = payload(r)
            plan.propose(uuid.uuid4().hex, parse_proposal(body), fingerprint(body), "bench")
            outcome = plan.decide(set())
            assert outcome.status == "committed"
        batch += [session, plan]
        written += 2 + 2 * STEPS
        if len(batch) >= 400:
            app.save(*batch)
            batch = []
    if batch:
        app.save(*batch)
    return written


def measure_rebuild(url: str, events: int) -> dict[str, Any]:
    app = Ledger(url)
    started = time.perf_counter()
    written = write_events(app, events)
    write_seconds = time.perf_counter() - started
    runner = ProjectionRunner(app.database, app.mapper)
    started = time.perf_counter()
    position = runner.rebuild()
    seconds = time.perf_counter() - started
    views = runner.store.max_notification_id()
    runner.close()
    app.close()
    return {
        "events": written,
        "write_seconds": round(write_seconds, 2),
        "rebuild_seconds": round(seconds, 3),
        "events_per_s": round(written / seconds),
        "position": position,
        "max_notification_id": views,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=200.0, help="commits per second")
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--out", default="bench/results/projection_lag.json")
    args = parser.parse_args()

    results: dict[str, Any] = {
        "machine": {
            "nproc": os.cpu_count(),
            "python": platform.python_version(),
            "psycopg": psycopg.__version__,
        }
    }
    for name, run in (
        ("lag", lambda url: measure_lag(url, args.commits, args.rate)),
        ("rebuild", lambda url: measure_rebuild(url, args.events)),
    ):
        schema = f"bench_{name}_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(BASE_URL, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        try:
            results[name] = run(f"{BASE_URL}?schema={schema}")
        finally:
            with psycopg.connect(BASE_URL, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        print(name, json.dumps(results[name], indent=2), flush=True)

    lag = results["lag"]["lag_ms"]
    print(
        f"\ncommit-to-view lag at {args.rate:.0f} commits/s: p50 {lag['p50']:.2f} ms, "
        f"p99 {lag['p99']:.2f} ms (library wait() polls every 100 ms; "
        f"ratio p99/100 ms = {lag['p99'] / 100:.3f})"
    )
    print(
        f"rebuild: {results['rebuild']['events_per_s']:,} events/s over "
        f"{results['rebuild']['events']:,} events"
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
