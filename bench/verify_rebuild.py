"""Whole-store work: `verify` and `projections rebuild` in events/s, beside a bare decode.

    python bench/verify_rebuild.py [--database postgres|sqlite|URL] [--sessions 2000]
        [--events-per-session 12] [--rounds 5] [--output bench/results/verify_rebuild.json]

A fresh store gets `--sessions` sessions of about `--events-per-session` events each, written
through the domain (every proposal decided by the rules): half in the strict form with a goal
named by the plan, half in the Codex form; each with commits, a rejection, a goal started and
moved. Then, each round and in a rotated order: `verify()` of every session (a full replay,
every rule re-checked), `rebuild()` of the views (from 5k events on, with one forked fold
process per core, as `projections rebuild` does), and the baseline: reading every event row
and `json.loads` of its state (no domain, no rules). Medians of the rounds are reported, with
the ratio of each to the baseline, and the CPU time per event of this process and its worker
processes (the database server's excluded): on a shared machine the wall-clock rates move
with other people's load, the CPU per event much less.
"""

from __future__ import annotations

import functools
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import common

from domain.forms import parse_proposal
from domain.ids import plan_aggregate_id, session_aggregate_id
from domain.plan import Plan
from domain.session import Session
from domain.session_fields import Mode
from planledger.service import PlanLedger, open_planledger
from planledger.service.ledger import fingerprint
from planledger.storage.scan import scan_events
from planledger.storage.stores import open_store
from projections.runner import ProjectionRunner

SAVE_EVERY = 100  # sessions saved per transaction while building the store


def strict_payload(done: int, steps: int, goal: str | None) -> dict[str, Any]:
    """`done` steps completed, the next in progress, the rest pending."""
    rows = []
    for n in range(steps):
        status = "completed" if n < done else "in_progress" if n == done else "pending"
        rows.append({"id": f"step-{n}", "title": f"Step {n}: change module {n}", "status": status})
    return {"title": "Implement session export", "goal_id": goal, "steps": rows}


def codex_payload(done: int, steps: int) -> dict[str, Any]:
    rows = []
    for n in range(steps):
        status = "completed" if n < done else "in_progress" if n == done else "pending"
        if n == steps - 1 and done < n:
            status = "cancelled" if done == 2 else status
        rows.append({"step": f"Fix failure {n} and run its regression test", "status": status})
    return {"explanation": "next step", "plan": rows}


def session_events(n: int, per_session: int) -> list[Any]:
    """One session's aggregates with about `per_session` events, decided by the rules."""
    session_id = f"vr-{n}"
    session = Session.open(session_aggregate_id(session_id), session_id, Mode.WORK)
    plan = Plan.create(plan_aggregate_id(session_id), session_id)
    strict = n % 2 == 0
    goal = f"goal-{n}" if strict else None
    session.start_goal(f"goal-{n}", "Ship the session export")
    submits = max(1, (per_session - 4) // 2)
    steps = 6
    for k in range(submits):
        if k % 4 == 3:  # a rejected proposal: two steps in progress
            body: dict[str, Any] = strict_payload(0, steps, goal) if strict else codex_payload(0, 3)
            rows = body["steps"] if strict else body["plan"]
            for row in rows[:2]:
                row["status"] = "in_progress"
        elif strict:
            body = strict_payload(min(k, steps - 1), steps, goal)
        else:
            body = codex_payload(min(k, 3), 4 + k % 3)
        parsed = parse_proposal(body)
        plan.propose(uuid.uuid4().hex, parsed, fingerprint(body), "bench")
        plan.decide({f"goal-{n}"})
    session.move_goal(f"goal-{n}", "block")
    session.move_goal(f"goal-{n}", "resume")
    return [session, plan]


def build_store(service: PlanLedger, sessions: int, per_session: int) -> int:
    """Write the sessions (views stored with their events); returns the number of events."""
    events = 0
    batch: list[Any] = []
    for n in range(sessions):
        aggregates = session_events(n, per_session)
        events += sum(len(a.pending_events) for a in aggregates)
        batch += aggregates
        if len(batch) >= 2 * SAVE_EVERY:
            service.ledger.store(*batch)
            batch = []
    if batch:
        service.ledger.store(*batch)
    return events


def bare_decode(service: PlanLedger) -> int:
    """Read every event row in stream order and `json.loads` its state: the floor of any
    whole-store pass (no domain, no rules)."""
    count = 0
    for stored in scan_events(service.database):
        json.loads(stored.state)
        count += 1
    return count


def verify(service: PlanLedger, workers: int | None) -> int:
    if workers is not None:
        service.ledger.verify_workers = workers
    report = service.ledger.verify()
    assert report.ok, report.problems[:3]
    return int(report.sessions_checked)


def rebuild(service: PlanLedger) -> int:
    runner = ProjectionRunner(open_store(service.database), service.ledger.mapper)
    try:
        runner.rebuild()
        assert not runner.corrupt
    finally:
        runner.close()
    return 0


def main(argv: list[str] | None = None) -> None:
    p = common.parser("verify_rebuild", __doc__ or "")
    p.add_argument("--sessions", type=int, default=2000)
    p.add_argument("--events-per-session", type=int, default=12)
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="verify processes (default: the ledger's, one per core up to 4; more than one "
        "only from 20k events on)",
    )
    args = common.parse(p, argv)
    with common.fresh_store(args.database, "bench_vr") as url:
        service = open_planledger(url, home=None)
        started = time.perf_counter()
        events = build_store(service, args.sessions, args.events_per_session)
        built = time.perf_counter() - started
        print(f"store: {events} events in {args.sessions} sessions, written in {built:.1f} s")
        passes: dict[str, Callable[[PlanLedger], int]] = {
            "bare_decode": bare_decode,
            "verify": functools.partial(verify, workers=args.workers),
            "rebuild": rebuild,
        }
        rates: dict[str, list[float]] = {name: [] for name in passes}
        cpu: dict[str, list[float]] = {name: [] for name in passes}
        names = list(passes)
        for r in range(args.rounds):
            order = names[r % len(names) :] + names[: r % len(names)]
            for name in order:
                cpu_before = common.client_cpu()
                started = time.perf_counter()
                passes[name](service)
                rates[name].append(events / (time.perf_counter() - started))
                cpu[name].append((common.client_cpu() - cpu_before) / events * 1e6)
            line = "  ".join(f"{name}={rates[name][-1]:9,.0f}/s" for name in names)
            print(f"round {r + 1}/{args.rounds}: {line}", flush=True)
        service.close()
    base = common.median(rates["bare_decode"])
    figures: dict[str, dict[str, Any]] = {
        name: {
            "events_per_s": common.spread(values),
            "rounds": [round(v) for v in values],
            "ratio_to_bare_decode": common.ratio(common.median(values), base),
            "client_cpu_us_per_event": round(common.median(cpu[name]), 2),
        }
        for name, values in rates.items()
    }
    print(
        f"\n{'pass':<12} {'median ev/s':>12} {'min':>10} {'max':>10} {'x bare':>7} "
        f"{'cpu us/ev':>10}"
    )
    for name, figure in figures.items():
        s = figure["events_per_s"]
        print(
            f"{name:<12} {s['median']:>12,.0f} {s['min']:>10,.0f} {s['max']:>10,.0f} "
            f"{figure['ratio_to_bare_decode'] or 0:>7.3f} "
            f"{figure['client_cpu_us_per_event']:>10.1f}"
        )
    document = common.result(
        args,
        store={
            "sessions": args.sessions,
            "events": events,
            "events_per_session": args.events_per_session,
            "build_seconds": round(built, 2),
        },
        passes=figures,
    )
    common.write_result(args.output, document)


if __name__ == "__main__":
    main()
