"""The importers' readers and ordering, without a database."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from planledger.importers.calls import PlanCall, in_record_order, parse_timestamp
from planledger.importers.claude import claude_calls, read_claude, renumbered, todos_payload
from planledger.importers.codex import read_codex, rollout_parent
from planledger.importers.lines import find_files, records
from planledger.importers.report import LineError
from tests.claude_transcripts import Transcript
from tests.rollouts import Rollout, plan_args, stamp

TWO_STEPS = plan_args(("Locate the failure", "completed"), ("Fix it", "in_progress"))


def read(reader: object, *paths: Path) -> tuple[list[PlanCall], list[LineError], int]:
    errors: list[LineError] = []
    counted: list[int] = []
    found = [reader(path, errors, counted.append) for path in paths]  # type: ignore[operator]
    if reader is read_claude:
        return claude_calls(found, errors), errors, sum(counted)
    return [call for calls in found for call in calls], errors, sum(counted)


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

    assert [(c.session_id, c.call_id, c.line) for c in calls] == [
        ("claude-abc", "toolu_1", 2),
        ("claude-abc", "toolu_2", 3),  # a TaskCreate not answered yet: counted, not recorded
    ]
    assert calls[1].payload is None
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


# -- Claude Code's task tools and subagents ------------------------------------------------------


def test_claude_task_calls_take_claude_code_ids_and_skip_error_answers(tmp_path: Path) -> None:
    transcript = Transcript("sess-1")
    create_1, one = transcript.task_create("Write the test")
    create_2, two = transcript.task_create("Fix the bug", agent="a17ad42")  # a progress line
    transcript.other_tool()
    failed = transcript.task_create("Bad", error="Task list is full")[0]
    update = transcript.task_update("2", addBlockedBy=["1"], owner="a17ad42")
    missing = transcript.task_update("9", status="completed", error="Task not found")
    done = transcript.task_update("1", status="completed", agent="a17ad42")
    pending = transcript.task_create("Unanswered", answered=False)[0]
    path = transcript.write(tmp_path / "sess-1.jsonl")

    calls, errors, _ = read(read_claude, path)

    assert errors == []
    assert (one, two) == ("1", "2")
    assert [(c.call_id, c.session_id) for c in calls] == [
        (create_1, "claude-sess-1"),
        (create_2, "claude-sess-1"),  # subagents work on the session's task list
        (failed, "claude-sess-1"),
        (update, "claude-sess-1"),
        (missing, "claude-sess-1"),
        (done, "claude-sess-1"),
        (pending, "claude-sess-1"),
    ]
    by_id = {c.call_id: c for c in calls}
    assert by_id[create_1].payload == {
        "op": "create",
        "id": "1",
        "title": "Write the test",
        "detail": "Do it well.",
        "active_form": "Working",
    }
    assert by_id[create_1].created_task == "1"
    assert by_id[create_2].payload is not None and by_id[create_2].payload["id"] == "2"  # text
    assert by_id[update].payload == {
        "op": "update",
        "id": "2",
        "add_blocked_by": ["1"],
        "owner": "a17ad42",
    }
    # answered with an error, or not answered yet: counted, never recorded
    assert [by_id[i].payload for i in (failed, missing, pending)] == [None, None, None]
    assert by_id[done].payload == {"op": "update", "id": "1", "status": "completed"}
    assert by_id[create_1].cwd == "/work/project"


def test_a_subagents_todo_list_is_its_own_session(tmp_path: Path) -> None:
    transcript = Transcript("sess-2")
    main = transcript.todo_write([{"content": "Plan the work", "status": "in_progress"}])
    sub = transcript.todo_write([{"content": "Read the code", "status": "in_progress"}], "ab12")
    in_file = transcript.task_create("From the agent's file", agent="cd34", in_file=True)[0]
    path = transcript.write(tmp_path / "sess-2.jsonl")
    agent_file = tmp_path / "sess-2" / "subagents" / "agent-cd34.jsonl"
    assert agent_file.exists()

    calls, errors, _ = read(read_claude, path, agent_file)

    assert errors == []
    assert [(c.call_id, c.session_id, c.parent_session_id) for c in calls] == [
        (main, "claude-sess-2", None),
        (sub, "claude-sess-2-ab12", "claude-sess-2"),
        (in_file, "claude-sess-2", None),
    ]


def test_overlapping_files_give_each_call_once_with_its_answer_from_either(tmp_path: Path) -> None:
    transcript = Transcript("sess-3")
    create, _ = transcript.task_create("Write the test")
    transcript.task_update("1", status="in_progress")
    # The first snapshot ends before the create's answer; the second holds the whole session.
    early = transcript.write(tmp_path / "a" / "sess-3.jsonl", slice(0, 1))
    whole = transcript.write(tmp_path / "b" / "sess-3.jsonl")

    calls, _, _ = read(read_claude, early, whole)

    assert (calls[0].call_id, calls[0].path) == (create, str(early))
    assert calls[0].payload is not None and calls[0].payload["id"] == "1"
    assert len(calls) == 2


def test_a_shared_task_list_takes_every_sessions_task_calls(tmp_path: Path) -> None:
    transcript = Transcript("sess-4")
    transcript.task_create("Shared")
    transcript.todo_write([{"content": "Own list", "status": "pending"}])
    path = transcript.write(tmp_path / "sess-4.jsonl")
    errors: list[LineError] = []
    calls = claude_calls([read_claude(path, errors, lambda n: None)], errors, "claude-tasks-x")
    assert [c.session_id for c in calls] == ["claude-tasks-x", "claude-sess-4"]


# -- Codex forks and subagents ---------------------------------------------------------------------


def test_a_codex_fork_is_its_own_session_and_its_replay_is_its_parents(tmp_path: Path) -> None:
    parent = Rollout("parent-1").user(1, "go")
    parent.update_plan(2, "call_p1", TWO_STEPS)
    parent.update_plan(3, "call_p2", plan_args(("Fix it", "completed")))
    # The fork starts with its own session_meta (naming its parent), then replays the
    # parent's lines, its session_meta included, then goes on by itself.
    fork = Rollout("fork-1", forked_from="parent-1", started=10)
    fork.replay(parent.lines)
    fork.update_plan(11, "call_f1", plan_args(("Write the docs", "in_progress")))
    path = fork.write(tmp_path / "fork.jsonl")

    calls, errors, _ = read(read_codex, path)

    assert errors == []
    assert [(c.session_id, c.call_id, c.replay_of) for c in calls] == [
        ("codex-fork-1", "call_f1", ("codex-parent-1",))
    ]  # the parent's calls, dated before the fork began, are left out
    assert calls[0].parent_session_id == "codex-parent-1"
    assert calls[0].cwd == "/repo"

    spawned = Rollout("child-1", subagent_of="parent-1")
    spawned.update_plan(1, "call_c1", TWO_STEPS)
    (child,), _, _ = read(read_codex, spawned.write(tmp_path / "child.jsonl"))
    assert (child.session_id, child.parent_session_id) == ("codex-child-1", "codex-parent-1")


# -- lines nested too deep -------------------------------------------------------------------------

DEEP = "[" * 5000 + "]" * 5000  # past any parser's stack


def test_codex_lines_nested_too_deep_are_reported_and_the_rest_read(tmp_path: Path) -> None:
    rollout = Rollout("s-deep")
    rollout.update_plan(1, "call_1", TWO_STEPS)  # lines 3, 4
    rollout.raw(DEEP)  # 5: no marker, not an object
    call = {"type": "function_call", "name": "update_plan", "call_id": "call_obj"}
    head = json.dumps({"timestamp": stamp(2), "type": "response_item", "payload": call})
    rollout.raw(f'{head[:-2]}, "arguments": {DEEP}}}}}')  # 6: a marker line too deep to parse
    rollout.record(3, "response_item", {**call, "call_id": "call_text", "arguments": DEEP})  # 7
    rollout.update_plan(4, "call_2", plan_args(("Fix it", "completed")))  # 8, 9
    path = rollout.write(tmp_path / "deep.jsonl")

    calls, errors, _ = read(read_codex, path)

    assert [c.call_id for c in calls] == ["call_1", "call_2"]
    assert [(e.path, e.line) for e in errors] == [(str(path), 5), (str(path), 6), (str(path), 7)]
    assert all("too deep" in e.message for e in errors), errors
    assert errors[2].message.startswith("update_plan call call_text: arguments are")


def test_claude_lines_nested_too_deep_are_reported_and_the_rest_read(tmp_path: Path) -> None:
    transcript = Transcript("sess-deep")
    first = transcript.todo_write([{"content": "Read", "status": "in_progress"}])  # lines 1, 2
    second = transcript.todo_write([{"content": "Read", "status": "completed"}])  # lines 3, 4
    path = transcript.write(tmp_path / "sess-deep.jsonl")
    use = {"type": "tool_use", "name": "TodoWrite", "id": "toolu_deep"}
    head = json.dumps({"sessionId": "sess-deep", "message": {"content": [use]}})
    deep_use = f'{head[:-4]}, "input": {DEEP}}}]}}}}'
    deep_text = {"sessionId": "sess-deep", "message": {"content": [{**use, "input": DEEP}]}}
    lines = path.read_text().splitlines()
    lines[2:2] = [DEEP, deep_use, json.dumps(deep_text)]  # lines 3, 4, 5
    path.write_text("\n".join(lines) + "\n")

    calls, errors, _ = read(read_claude, path)

    assert [c.call_id for c in calls] == [first, second]
    assert [(e.path, e.line) for e in errors] == [(str(path), 3), (str(path), 4), (str(path), 5)]
    assert all("too deep" in e.message for e in errors), errors


def test_a_task_id_claude_code_reuses_for_another_subject_first_frees_it() -> None:
    def at(second: int) -> datetime:
        return datetime(2025, 1, 1, 10, 0, second, tzinfo=UTC)

    def create(call_id: str, task: str, title: str, second: int) -> PlanCall:
        payload = {"op": "create", "id": task, "title": title}
        return PlanCall("s", call_id, payload, at(second), "f", second, created_task=task)

    renamed = PlanCall("s", "u", {"op": "update", "id": "2", "title": "Test"}, at(3), "f", 3)
    calls = [
        create("a", "1", "Write", 1),
        create("b", "2", "Check", 2),
        renamed,
        create("c", "2", "Test", 4),  # the same task, retitled: no renumbering
        create("d", "1", "Ship", 5),  # numbered anew
    ]
    ordered = renumbered(calls)
    assert [c.call_id for c in ordered] == ["a", "b", "u", "c", "d-renumbered", "d"]
    assert ordered[4].payload == {"op": "update", "id": "1", "status": "deleted"}
    assert ordered[4].renumbers == "d" and ordered[4].created_task is None


def test_codex_calls_codex_did_not_apply_and_mcp_calls_are_not_its_plan(tmp_path: Path) -> None:
    rollout = Rollout("0199-abc").user(1, "plan")
    rollout.update_plan(2, "call_ok", TWO_STEPS)
    for at, call_id, output in (
        (3, "call_blocked", "Tool call blocked by PreToolUse hook: no. Tool: update_plan"),
        (4, "call_bad", "failed to parse function arguments: unknown variant `cancelled`"),
    ):
        call = {"type": "function_call", "name": "update_plan", "call_id": call_id}
        rollout.record(at, "response_item", {**call, "arguments": json.dumps(TWO_STEPS)})
        answer = {"type": "function_call_output", "call_id": call_id, "output": output}
        rollout.record(at + 0.1, "response_item", answer)
    mcp = {"type": "function_call", "name": "update_plan", "namespace": "mcp__planledger"}
    rollout.record(5, "response_item", {**mcp, "call_id": "call_mcp", "arguments": "{}"})
    calls, errors, _ = read(read_codex, rollout.write(tmp_path / "rollout.jsonl"))

    assert errors == []
    assert [(c.call_id, c.payload is not None) for c in calls] == [
        ("call_ok", True),
        ("call_blocked", False),
        ("call_bad", False),
    ]


def test_a_rollout_names_its_parent_in_its_first_line(tmp_path: Path) -> None:
    child = Rollout("0199-child", subagent_of="0199-parent").write(tmp_path / "child.jsonl")
    alone = Rollout("0199-alone").write(tmp_path / "alone.jsonl")
    assert rollout_parent(child) == "codex-0199-parent"
    assert rollout_parent(alone) is None
    assert rollout_parent(tmp_path / "missing.jsonl") is None
