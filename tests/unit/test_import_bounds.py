"""The importer's cost is bounded whatever the input: errors listed per file up to a limit and
then only counted, lines streamed (a line past the limit never held whole)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from planledger.importers import lines
from planledger.importers.claude import read_claude
from planledger.importers.codex import read_codex
from planledger.importers.lines import records
from planledger.importers.report import MAX_LISTED, MAX_MESSAGE_CHARS, ErrorLog, LineError
from tests.rollouts import Rollout, plan_args

MARKERS = (b'"update_plan"',)


def test_an_error_log_lists_the_first_errors_of_each_file_and_counts_the_rest() -> None:
    log = ErrorLog()
    log.append(LineError(path="a.jsonl", line=0, message="x" * 10_000))
    for line in range(2, 100_001):
        log.append(LineError(path="a.jsonl", line=line, message=f"bad line {line}"))
    log.append(LineError(path="b.jsonl", line=7, message="one\nbad   line"))

    listed = log.report()

    assert len(log) == 100_001
    assert [(e.path, e.line) for e in listed] == [
        *(("a.jsonl", line) for line in [0, *range(2, MAX_LISTED + 1)]),
        ("b.jsonl", 7),
        ("a.jsonl", MAX_LISTED + 1),
    ]
    assert len(listed[0].message) == MAX_MESSAGE_CHARS and listed[0].message.endswith("…")
    assert listed[MAX_LISTED].message == "one bad line"
    assert listed[-1].message == "and 99,980 more unreadable lines, up to line 100,000 (not listed)"


def test_reading_unreadable_lines_holds_a_bounded_amount(tmp_path: Path) -> None:
    rollout = Rollout("s-noise").update_plan(1, "call_1", plan_args(("Read", "in_progress")))
    for _ in range(30_000):
        rollout.raw("GARBAGE")
    rollout.update_plan(2, "call_2", plan_args(("Read", "completed")))
    path = rollout.write(tmp_path / "noise.jsonl")
    log = ErrorLog()

    tracemalloc.start()
    try:
        calls = read_codex(path, log, lambda n: None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert [c.call_id for c in calls] == ["call_1", "call_2"]
    assert len(log) == 30_000 and len(log.report()) == MAX_LISTED + 1
    assert peak < 1 << 20, f"{peak:,} bytes held while reading"  # a list of every error: 18 MB


def test_a_line_past_the_limit_is_scanned_never_held_and_the_rest_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lines, "MAX_LINE_BYTES", 64)
    monkeypatch.setattr(lines, "CHUNK_BYTES", 16)
    good = json.dumps({"type": "update_plan"})
    long_object = json.dumps({"type": "event_msg", "text": "x" * 500})
    marked = json.dumps({"a": "x" * 57, "name": "update_plan", "b": "y" * 500})
    assert marked.index('"update_plan"') == 75  # across two chunks: bytes 64-79 and 80-95
    not_object = "[" + "1, " * 200 + "1]"
    path = tmp_path / "long.jsonl"
    path.write_text("\n".join([good, long_object, marked, not_object, good]))
    errors: list[LineError] = []
    counted: list[int] = []

    found = list(records(path, MARKERS, errors, counted.append))

    assert found == [(1, {"type": "update_plan"}), (5, {"type": "update_plan"})]
    assert [(e.line, e.message) for e in errors] == [
        (3, f"line of {len(marked) + 1:,} bytes, too long to read"),
        (4, f"line of {len(not_object) + 1:,} bytes, too long to read"),
    ]
    assert sum(counted) == path.stat().st_size


def test_a_block_of_any_shape_is_read_without_error(tmp_path: Path) -> None:
    odd = [
        {"type": "tool_use", "name": ["TodoWrite"], "id": "toolu_1"},
        {"type": "tool_use", "name": {"TodoWrite": 1}, "id": "toolu_2"},
        {"type": "tool_result", "tool_use_id": ["x"], "content": {"Task #": 1}},
    ]
    line = {"sessionId": "s", "message": {"content": odd}}
    path = tmp_path / "odd.jsonl"
    path.write_text(json.dumps(line) + "\n")
    errors: list[LineError] = []

    found = read_claude(path, errors, lambda n: None)

    assert (found.uses, found.results, errors) == ([], {}, [])
