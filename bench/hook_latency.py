"""Per-call time of `planledger hook claude-code`, beside a bare interpreter start, in one run.

    python bench/hook_latency.py [--rounds N] [--calls K] [--out bench/results/hook_latency.json]

Each sample is one process, as an agent runs the hook: spawn, event on stdin, read stdout, exit;
the wall time of the whole is measured. Variants (the event of a Claude Code session):

  python_pass       `python -c pass`: the floor, a bare interpreter start.
  hook_ignored      `planledger hook claude-code`, PreToolUse of Bash: parsed and ignored,
                    no database opened (the CLI's start-up plus the hook's event handling).
  hook_commit       PreToolUse of TodoWrite, a valid list: proposed, decided, committed.
  hook_deny         PreToolUse of TodoWrite, two steps in progress: rejected, deny answered.
  hook_reinject     SessionStart (source compact): the compaction snapshot answered.
  module_ignored    the same as hook_ignored through `python -m planledger.clients.hooks`,
  module_commit     and hook_commit: the hook without the CLI around it.

SQLite default store in a temporary PLANLEDGER_HOME (as `planledger` uses it out of the box).
Variants are interleaved: each round runs K calls of every variant, in a rotated order.
Reported per variant: p50 and p99 over every call, the median of the rounds' p50s, and the
ratio of p50 to python_pass's p50; with the machine's load average before and after.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import planledger

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "bench" / "results" / "hook_latency.json"
SESSION = "bench-0bdbfa06"
STEPS = ["Reproduce the failure", "Fix the parser", "Run the suite"]


class Events:
    """Claude Code events with a fresh tool_use_id for each call."""

    def __init__(self) -> None:
        self.count = 0

    def _tool(self, todos: list[dict[str, str]], tool: str = "TodoWrite") -> dict[str, Any]:
        self.count += 1
        return {
            "session_id": SESSION,
            "transcript_path": "/tmp/transcript.jsonl",
            "cwd": "/work/project",
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": {"todos": todos},
            "tool_use_id": f"toolu_bench_{self.count:06d}",
        }

    def valid(self) -> dict[str, Any]:
        current = self.count % len(STEPS)
        statuses = ["completed"] * current + ["in_progress"]
        statuses += ["pending"] * (len(STEPS) - len(statuses))
        return self._tool(
            [
                {"content": s, "status": st, "activeForm": s}
                for s, st in zip(STEPS, statuses, strict=True)
            ]
        )

    def invalid(self) -> dict[str, Any]:
        return self._tool([{"content": s, "status": "in_progress", "activeForm": s} for s in STEPS])

    def bash(self) -> dict[str, Any]:
        event = self._tool([])
        event["tool_name"], event["tool_input"] = "Bash", {"command": "ls"}
        return event

    @staticmethod
    def compact() -> dict[str, Any]:
        return {"session_id": SESSION, "hook_event_name": "SessionStart", "source": "compact"}


def timed(command: list[str], stdin: str, env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run(command, input=stdin, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - started
    if result.returncode != 0 or result.stderr:
        raise SystemExit(f"{command} failed: {result.returncode} {result.stderr}")
    return elapsed, result.stdout


def variants(env: dict[str, str]) -> dict[str, Callable[[], float]]:
    events = Events()
    hook = [planledger(), "hook", "claude-code"]
    module = [sys.executable, "-m", "planledger.clients.hooks", "claude-code"]

    def run(command: list[str], event: dict[str, Any], expect: str | None) -> float:
        elapsed, out = timed(command, json.dumps(event), env)
        if (expect or "") not in out or (expect is None and out):
            raise SystemExit(f"unexpected answer to {event['hook_event_name']}: {out!r}")
        return elapsed

    return {
        "python_pass": lambda: timed([sys.executable, "-c", "pass"], "", env)[0],
        "hook_ignored": lambda: run(hook, events.bash(), None),
        "hook_commit": lambda: run(hook, events.valid(), None),
        "hook_deny": lambda: run(hook, events.invalid(), '"permissionDecision": "deny"'),
        "hook_reinject": lambda: run(hook, events.compact(), "additionalContext"),
        "module_ignored": lambda: run(module, events.bash(), None),
        "module_commit": lambda: run(module, events.valid(), None),
    }


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=10, help="calls per variant per round")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="hook-bench-") as home:
        env = {**os.environ, "PLANLEDGER_HOME": home}
        env.pop("PLANLEDGER_DATABASE_URL", None)
        runs = variants(env)
        runs["hook_commit"]()  # the store, its schema and the session exist before timing
        samples: dict[str, list[float]] = {name: [] for name in runs}
        round_p50: dict[str, list[float]] = {name: [] for name in runs}
        load_before = os.getloadavg()
        names = list(runs)
        for round_index in range(args.rounds):
            order = names[round_index % len(names) :] + names[: round_index % len(names)]
            for name in order:
                times = [runs[name]() for _ in range(args.calls)]
                samples[name] += times
                round_p50[name].append(statistics.median(times))
            print(f"round {round_index + 1}/{args.rounds} done", file=sys.stderr)
        load_after = os.getloadavg()

    floor = statistics.median(samples["python_pass"])
    results = {
        name: {
            "calls": len(values),
            "p50_ms": round(statistics.median(values) * 1000, 1),
            "p99_ms": round(percentile(values, 99) * 1000, 1),
            "median_of_round_p50_ms": round(statistics.median(round_p50[name]) * 1000, 1),
            "p50_over_python_pass": round(statistics.median(values) / floor, 2),
        }
        for name, values in samples.items()
    }
    report = {
        "benchmark": "hook_latency",
        "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "rounds": args.rounds,
        "calls_per_round": args.calls,
        "store": "sqlite (default, temporary PLANLEDGER_HOME)",
        "variants": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    width = max(map(len, results))
    print(f"{'variant':<{width}}  {'p50 ms':>8}  {'p99 ms':>8}  {'x python':>8}")
    for name, row in results.items():
        print(
            f"{name:<{width}}  {row['p50_ms']:>8}  {row['p99_ms']:>8}  "
            f"{row['p50_over_python_pass']:>8}"
        )
    print(f"load average before {load_before}, after {load_after}; written to {args.out}")


if __name__ == "__main__":
    main()
