"""Import speed: `import_paths` over synthetic Codex rollouts, beside a bare JSON pass.

    python bench/import_speed.py [--files 300] [--calls 20] [--rounds 3] [--database URL]
                                 [--out bench/results/import_speed.json]

Writes --files rollouts (seeded, so every run reads the same bytes): each a `session_meta` line
with long instructions, then turns of user messages, reasoning (encrypted content), shell calls
with their outputs, token counts, and --calls `update_plan` calls (JSON-text and object
arguments) that walk a 6-step plan to completion. Each round measures, on the same files:

  json_pass   the baseline: read every line and `json.loads` it, nothing else;
  read        the importer's readers alone (no database): transcript MB/s;
  import      `import_paths` into a fresh database (SQLite in a temporary folder by default,
              plan.json files written as the CLI does): MB/s overall, and calls/s of its
              recording phase (from the end of reading to the end);
  reimport    the same files again: every call skipped, nothing written.

Figures are medians over rounds; ratios are against json_pass of the same round.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from planledger.importers import import_paths  # noqa: E402
from planledger.importers.codex import read_codex  # noqa: E402
from planledger.importers.report import LineError  # noqa: E402
from planledger.service import open_planledger  # noqa: E402

WORDS = ("the", "of", "plan", "test", "code", "fix", "run", "file", "line", "error", "value")
DEFAULT_OUT = ROOT / "bench" / "results" / "import_speed.json"
STEPS = [
    "Read the failing test",
    "Find the cause",
    "Write the fix",
    "Add a regression test",
    "Run the suite",
    "Summarise the change",
]


def _line(at: float, kind: str, payload: dict[str, Any]) -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1_756_720_800 + at))
    return (
        json.dumps(
            {"timestamp": f"{stamp}.{int(at * 1000) % 1000:03d}Z", "type": kind, "payload": payload}
        )
        + "\n"
    )


def rollout(n: int, calls: int, rng: random.Random) -> str:
    """One synthetic rollout: ~300 KB, `calls` update_plan calls among ~10x as many others."""
    words = WORDS

    def text(count: int) -> str:
        return " ".join(rng.choice(words) for _ in range(count))

    parts = [
        _line(
            0,
            "session_meta",
            {"id": f"0199-bench-{n:05d}", "cwd": "/repo", "instructions": text(1500)},
        )
    ]
    at = 1.0
    for call in range(calls):
        parts.append(
            _line(
                at,
                "response_item",
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": text(60)}],
                },
            )
        )
        parts.append(
            _line(
                at,
                "response_item",
                {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA" + "x" * 3000},
            )
        )
        done = min(call * len(STEPS) // calls, len(STEPS))
        plan = [
            {
                "step": step,
                "status": "completed" if i < done else "in_progress" if i == done else "pending",
            }
            for i, step in enumerate(STEPS)
        ]
        arguments: Any = {"explanation": text(12), "plan": plan}
        parts.append(
            _line(
                at + 0.1,
                "response_item",
                {
                    "type": "function_call",
                    "name": "update_plan",
                    "call_id": f"call_{n}_{call}",
                    "arguments": json.dumps(arguments) if call % 2 else arguments,
                },
            )
        )
        parts.append(
            _line(
                at + 0.2,
                "response_item",
                {
                    "type": "function_call_output",
                    "call_id": f"call_{n}_{call}",
                    "output": "Plan updated",
                },
            )
        )
        for shell in range(3):
            call_id = f"call_{n}_{call}_sh{shell}"
            parts.append(
                _line(
                    at + 0.3,
                    "response_item",
                    {
                        "type": "function_call",
                        "name": "shell",
                        "call_id": call_id,
                        "arguments": json.dumps({"command": ["bash", "-lc", text(8)]}),
                    },
                )
            )
            parts.append(
                _line(
                    at + 0.4,
                    "response_item",
                    {
                        "type": "function_call_output",
                        "call_id": call_id,
                        "output": json.dumps({"output": text(600), "metadata": {"exit_code": 0}}),
                    },
                )
            )
        parts.append(_line(at + 0.5, "event_msg", {"type": "token_count", "info": None}))
        at += 10
    return "".join(parts)


def write_rollouts(folder: Path, files: int, calls: int) -> int:
    rng = random.Random(12)
    total = 0
    for n in range(files):
        path = folder / f"2025/09/{n % 28 + 1:02d}/rollout-{n:05d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        total += path.write_text(rollout(n, calls, rng))
    return total


def json_pass(files: list[Path]) -> float:
    started = time.perf_counter()
    for path in files:
        with path.open("rb") as handle:
            for line in handle:
                json.loads(line)
    return time.perf_counter() - started


def read_only(files: list[Path]) -> tuple[float, int]:
    started = time.perf_counter()
    errors: list[LineError] = []
    calls = sum(len(read_codex(path, errors, lambda n: None)) for path in files)
    assert not errors, errors[:3]
    return time.perf_counter() - started, calls


def timed_import(url: str, home: Path, folder: Path) -> dict[str, float | int]:
    read_done = 0.0

    def on_progress(done: int, total: int) -> None:
        nonlocal read_done
        if done >= total:
            read_done = time.perf_counter()

    with open_planledger(url, home=home) as service:
        started = time.perf_counter()
        report = import_paths(service, "codex", [folder], on_progress=on_progress)
        ended = time.perf_counter()
    assert not report.errors, report.errors[:3]
    return {
        "seconds": ended - started,
        "read_seconds": read_done - started,
        "record_seconds": ended - read_done,
        "committed": sum(s.committed for s in report.sessions),
        "rejected": sum(s.rejected for s in report.sessions),
        "skipped": sum(s.skipped for s in report.sessions),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="import-bench-") as scratch:
        folder = Path(scratch) / "sessions"
        size = write_rollouts(folder, args.files, args.calls)
        files = sorted(folder.rglob("*.jsonl"))
        megabytes = size / 1e6
        rounds: list[dict[str, Any]] = []
        for number in range(args.rounds):
            base = json_pass(files)
            read_seconds, calls = read_only(files)
            home = Path(scratch) / f"home-{number}"
            url = args.database or f"sqlite:///{home / 'ledger.sqlite3'}"
            if args.database and number:
                break  # one fresh run only on a given database (no schema per round)
            fresh = timed_import(url, home, folder)
            again = timed_import(url, home, folder)
            assert fresh["committed"] == calls and again["skipped"] == calls, (fresh, again)
            rounds.append(
                {
                    "json_pass_mb_s": megabytes / base,
                    "read_mb_s": megabytes / read_seconds,
                    "import_mb_s": megabytes / float(fresh["seconds"]),
                    "record_calls_s": calls / float(fresh["record_seconds"]),
                    "import_calls_s": calls / float(fresh["seconds"]),
                    "reimport_seconds": again["seconds"],
                    "import_seconds": fresh["seconds"],
                }
            )
            print(
                f"round {number + 1}: " + ", ".join(f"{k} {v:,.1f}" for k, v in rounds[-1].items())
            )
    medians = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    return {
        "benchmark": "import_speed",
        "files": args.files,
        "calls": calls,
        "megabytes": megabytes,
        "database": "sqlite (temporary file)" if not args.database else "given URL",
        "rounds": rounds,
        "median": medians,
        "ratios": {
            "read_vs_json_pass": medians["read_mb_s"] / medians["json_pass_mb_s"],
            "import_vs_json_pass": medians["import_mb_s"] / medians["json_pass_mb_s"],
        },
        "targets": {"read_mb_s": 20, "record_calls_s": 1000},
        "python": platform.python_version(),
        "machine": platform.machine(),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--calls", type=int, default=20, help="update_plan calls per rollout")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--database", default=None, help="default: SQLite in a temporary folder")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    result = run(args)
    m, r = result["median"], result["ratios"]
    print(
        f"{result['files']} rollouts, {result['megabytes']:.1f} MB, {result['calls']} calls: "
        f"json pass {m['json_pass_mb_s']:.0f} MB/s; readers {m['read_mb_s']:.0f} MB/s "
        f"({r['read_vs_json_pass']:.2f}x); import {m['import_mb_s']:.1f} MB/s "
        f"({r['import_vs_json_pass']:.2f}x), recording {m['record_calls_s']:,.0f} calls/s; "
        f"re-import {m['reimport_seconds']:.2f} s"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
