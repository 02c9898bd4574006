"""The audit report of a long session: `planledger export` of a session of `--revisions`
commits (and a rejection every 10), in each format, beside reading the same session's history
and verifying it, in the same run.

    python bench/export_report.py [--database sqlite|postgres|URL] [--revisions 1000]
        [--rounds 5] [--output bench/results/export_report.json]

The session is filled through the service in bulk (`submit_sessions`: every event real, every
view row written). Each round times, in rotated order: `report` (the report built from the
session's events, as `export` builds it), each rendering (`json`, `md`, `html`: the report
built and rendered), the `history` read and `verify` of the session. The issue's bar: an
export of a 1,000-revision session in under a second.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

import common

from planledger.clients import report_render
from planledger.service import Call, PlanLedger, open_planledger

SESSION = "long"
BAR_SECONDS = 1.0


def plan(n: int) -> dict[str, Any]:
    """Revision n of a 10-step plan: step n % 10 in progress, the ones before it completed,
    a step's text changing now and then."""
    at = n % 10
    return {
        "plan": [
            {
                "step": f"Step {k} of round {n // 10}",
                "status": "completed" if k < at else "in_progress" if k == at else "pending",
            }
            for k in range(10)
        ]
    }


def fill(service: PlanLedger, revisions: int) -> None:
    calls = []
    for n in range(revisions):
        calls.append(Call(plan(n), f"c{n}", "bench"))
        if n % 10 == 9:  # a rejected call: two steps in progress
            bad = plan(n)
            bad["plan"][0]["status"] = bad["plan"][1]["status"] = "in_progress"
            calls.append(Call(bad, f"bad{n}", "bench"))
    for start in range(0, len(calls), 500):
        service.submit_sessions({SESSION: calls[start : start + 500]}, open_missing=True)


def main(argv: list[str] | None = None) -> int:
    p = common.parser("export_report", __doc__ or "", rounds=5, database="sqlite")
    p.add_argument("--revisions", type=int, default=1000)
    args = common.parse(p, argv)
    with common.fresh_store(args.database, "export") as url:
        service = open_planledger(url, home=None)
        try:
            fill(service, args.revisions)
            report = service.report(SESSION)
            assert report.verified and len(report.revisions) == args.revisions, report.problems
            passes: dict[str, Callable[[], object]] = {
                "report": lambda: service.report(SESSION),
                "json": lambda: json.dumps(service.report(SESSION).as_json()),
                "md": lambda: report_render.markdown(service.report(SESSION)),
                "html": lambda: report_render.html(service.report(SESSION)),
                "history": lambda: service.history(SESSION),
                "verify": lambda: service.verify([SESSION]),
            }
            seconds: dict[str, list[float]] = {name: [] for name in passes}
            names = list(passes)
            for round_ in range(args.rounds):
                for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                    started = time.perf_counter()
                    passes[name]()
                    seconds[name].append(time.perf_counter() - started)
            sizes = {
                "json": len(json.dumps(report.as_json())),
                "md": len(report_render.markdown(report)),
                "html": len(report_render.html(report)),
            }
        finally:
            service.close()
    base = common.median(seconds["history"])
    rows = {name: common.spread(values) for name, values in seconds.items()}
    print(f"session of {args.revisions} revisions, {len(report.rejections)} rejections")
    print(f"{'pass':10} {'median s':>9} {'min':>7} {'max':>7} {'x history':>9}  bar")
    for name, row in rows.items():
        verdict = ""
        if name in ("json", "md", "html"):
            verdict = "pass" if row["median"] < BAR_SECONDS else "FAIL"
        ratio = row["median"] / base if base else 0.0
        print(
            f"{name:10} {row['median']:9.3f} {row['min']:7.3f} {row['max']:7.3f} {ratio:9.1f}  "
            f"{verdict}"
        )
    document = common.result(
        args, revisions=args.revisions, seconds=rows, bytes=sizes, bar_seconds=BAR_SECONDS
    )
    common.write_result(args.output, document)
    return 0


if __name__ == "__main__":
    sys.exit(main())
