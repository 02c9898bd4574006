"""The importers' readers and ordering, without a database."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from planledger.importers.calls import PlanCall, in_record_order, parse_timestamp
from planledger.importers.claude import read_claude, todos_payload
from planledger.importers.codex import read_codex
from planledger.importers.lines import find_files, records
from planledger.importers.report import LineError
from tests.rollouts import Rollout, plan_args, stamp

TWO_STEPS = plan_args(("Locate the failure", "completed"), ("Fix it", "in_progress"))


def read(reader: object, path: Path) -> tuple[list[PlanCall], list[LineError], int]:
    errors: list[LineError] = []
    counted: list[int] = []
    calls = reader(path, errors, counted.append)  # type: ignore[operator]
    return calls, errors, sum(counted)


def test_codex_reader_takes_update_plan_calls_in_both_argument_shapes(tmp_path: Path) -> None:
    rollout = Rollout("0199-abc").user(1, "please call update_plan")
    rollout.update_plan(2, "call_1", TWO_STEPS)
    rollout.other_tools(3, "call_shell")
    rollout.update_plan(4, "call_2", plan_args(("Fix it", "completed")), as_text=False)
    path = rollout.write(tmp_path / "rollout.jsonl")

    calls, errors, counted = read(read_codex, path)

    assert errors == []
    assert counted == path.stat().st_size
    assert [(c.session_id, c.call_id, c.line) for c in calls] == [
        ("codex-0199-abc", "call_1", 4),
        ("codex-0199-abc", "call_2", 10),
    ]
    assert calls[0].payload == TWO_STEPS
    assert calls[1].payload == plan_args(("Fix it", "completed"))
    assert calls[0].at == datetime(2025, 9, 1, 10, 0, 2, tzinfo=UTC)


def test_codex_reader_reports_bad_arguments_and_calls_without_a_session(tmp_path: Path) -> None:
    rollout = Rollout("s1")
    rollout.update_plan(1, "call_ok", TWO_STEPS)
    broken = {"type": "function_call", "name": "update_plan", "arguments": "{not json"}
    rollout.record(2, "response_item", {**broken, "call_id": "call_bad"})
    rollout.record(3, "response_item", {**broken, "arguments": "[1, 2]", "call_id": "call_list"})
    rollout.record(4, "response_item", {**broken, "arguments": "{}"})  # no call_id
    path = rollout.write(tmp_path / "a.jsonl")
    orphan = (
        Rollout("s2")
        .update_plan(1, "call_x", TWO_STEPS)
        .write(tmp_path / "b.jsonl", slice(2, None))
    )

    calls, errors, _ = read(read_codex, path)
    orphan_calls, orphan_errors, _ = read(read_codex, orphan)

    assert [c.call_id for c in calls] == ["call_ok"]
    assert [(e.line, e.message.split(":")[0]) for e in errors] == [
        (5, "update_plan call call_bad"),
        (6, "update_plan call call_list"),
        (7, "update_plan call has no call_id"),
    ]
    assert "not JSON" in errors[0].message and "not a JSON object" in errors[1].message
    assert orphan_calls == []
    assert [e.line for e in orphan_errors] == [1]
    assert "before any session_meta" in orphan_errors[0].message


def test_lines_report_garbage_and_cut_lines_anywhere(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    good = json.dumps({"type": "event_msg", "payload": {}})
    path.write_bytes(
        f'{good}\n\nGARBAGE\n{good}\n["a list is JSON"]\n{{"type": "response_item", "pay'.encode()
    )
    errors: list[LineError] = []

    found = list(records(path, (b'"response_item"',), errors, lambda n: None))

    assert found == []
    assert [(e.path, e.line) for e in errors] == [(str(path), 3), (str(path), 6)]
    assert all(e.message.startswith("not JSON") for e in errors)


def test_claude_reader_maps_todos_and_ignores_other_tools(tmp_path: Path) -> None:
    todos = [
        {"content": "Write the parser", "status": "completed", "activeForm": "Writing"},
        {"content": "Test it", "status": "in_progress", "id": "2", "priority": "high"},
    ]

    def line(at: float, blocks: list[dict[str, object]], session: str = "abc") -> str:
        message = {"role": "assistant", "content": blocks}
        return json.dumps({"sessionId": session, "timestamp": stamp(at), "message": message})

    use = {"type": "tool_use", "name": "TodoWrite", "id": "toolu_1", "input": {"todos": todos}}
    task = {"type": "tool_use", "name": "TaskCreate", "id": "toolu_2", "input": {"todos": []}}
    text = {"type": "text", "text": "I will use TodoWrite"}
    bad = {"type": "tool_use", "name": "TodoWrite", "id": "toolu_3", "input": {"todo": []}}
    path = tmp_path / "c.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps({"type": "summary", "summary": "TodoWrite talk", "leafUuid": "x"}),
                line(1, [text, use]),
                line(2, [task]),
                line(3, [bad]),
                json.dumps({"message": {"content": [{**use, "id": "toolu_4"}]}}),
            ]
        )
    )

    calls, errors, _ = read(read_claude, path)

    assert [(c.session_id, c.call_id, c.line) for c in calls] == [("claude-abc", "toolu_1", 2)]
    assert calls[0].payload == {
        "plan": [
            {"step": "Write the parser", "status": "completed"},
            {"step": "Test it", "status": "in_progress"},
        ]
    }
    assert [(e.line, e.message) for e in errors] == [
        (4, "TodoWrite call toolu_3: input has no `todos` list"),
        (5, "TodoWrite call toolu_4 is on a line without a sessionId"),
    ]


def test_todos_payload_passes_malformed_todos_to_the_rules() -> None:
    assert todos_payload([{"status": "pending"}, "text"]) == {
        "plan": [{"step": None, "status": "pending"}, "text"]
    }


def test_record_order_is_by_timestamp_stable_and_each_call_once() -> None:
    def call(call_id: str, at: str, line: int) -> PlanCall:
        moment = parse_timestamp(at, datetime.min.replace(tzinfo=UTC))
        return PlanCall("s", call_id, {}, moment, "f", line)

    calls = [
        call("c3", "2025-01-01T10:00:03Z", 1),
        call("c1", "2025-01-01T10:00:01Z", 2),
        call("c2a", "2025-01-01T10:00:02Z", 3),
        call("c2b", "2025-01-01T12:00:02+02:00", 4),  # same instant, later in the file
        call("c1", "2025-01-01T10:00:01Z", 5),  # an overlapping file's copy
    ]

    assert [(c.call_id, c.line) for c in in_record_order(calls)] == [
        ("c1", 2),
        ("c2a", 3),
        ("c2b", 4),
        ("c3", 1),
    ]


def test_timestamps_fall_back_when_missing_or_unreadable() -> None:
    fallback = datetime(2024, 1, 1, tzinfo=UTC)
    assert parse_timestamp(None, fallback) == fallback
    assert parse_timestamp("yesterday", fallback) == fallback
    assert parse_timestamp("2025-01-01T00:00:00", fallback) == datetime(2025, 1, 1, tzinfo=UTC)


def test_find_files_searches_folders_for_jsonl_once_each(tmp_path: Path) -> None:
    for name in ("a/2025/x.jsonl", "a/y.jsonl", "a/notes.txt", "b.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}\n")
    errors: list[LineError] = []

    found = find_files(
        [tmp_path / "a", tmp_path / "a" / "y.jsonl", tmp_path / "b.json", tmp_path / "missing"],
        errors,
    )

    assert found == [tmp_path / "a/2025/x.jsonl", tmp_path / "a/y.jsonl", tmp_path / "b.json"]
    assert [(e.path, e.line, e.message) for e in errors] == [
        (str(tmp_path / "missing"), 0, "no such file or folder")
    ]
