"""`planledger hook claude-code|gemini|codex`: events piped in as each agent sends them."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from domain.errors import SessionNotFound
from planledger.service import PlanLedger, open_planledger
from tests.claude_transcripts import Transcript
from tests.e2e.hook_events import (
    HookRun,
    Rollout,
    run_hook,
    session_event,
    todo_session,
    todos_of,
)


@pytest.fixture
def env(tmp_path: Path, sqlite_url: str) -> dict[str, str]:
    return {"PLANLEDGER_HOME": str(tmp_path / "home"), "PLANLEDGER_DATABASE_URL": sqlite_url}


@pytest.fixture
def ledger(env: dict[str, str]) -> Iterator[PlanLedger]:
    with open_planledger(env["PLANLEDGER_DATABASE_URL"], home=None) as service:
        yield service


def one_error_line(run: HookRun) -> str:
    """A failed-open run: exit 0, no answer, exactly one line on stderr."""
    assert run.code == 0 and run.stdout == "", (run.code, run.stdout)
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("planledger hook "), run.stderr
    return lines[0]


# -- Claude Code: TodoWrite ------------------------------------------------------------------


def test_claude_records_each_todowrite_and_reinjects_after_compaction(
    env: dict[str, str], ledger: PlanLedger, tmp_path: Path
) -> None:
    transcript, _, calls = todo_session(tmp_path)
    session = f"claude-{transcript.session}"
    for call in calls:
        assert run_hook("claude-code", transcript.event("PreToolUse", call), env).silent()

    history = ledger.history(session).entries
    assert [e.proposal_id for e in history if e.kind == "committed"] == calls
    plan = ledger.plan(session)
    assert plan.revision == 4
    assert [(s.title, s.status) for s in plan.steps] == [
        (t["content"], t["status"]) for t in todos_of(transcript, calls[-1])
    ]
    origin = ledger.session(session)
    assert (origin.source, origin.cwd) == ("claude-code", transcript.cwd)

    answer = run_hook("claude-code", session_event(transcript.session, "compact"), env).answer()
    assert answer == {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": ledger.compaction(session).text,
        }
    }
    assert "Plan revision 4" in answer["hookSpecificOutput"]["additionalContext"]
    # a fresh start is not a compaction: nothing to put back
    assert run_hook("claude-code", session_event(transcript.session, "startup"), env).silent()


def test_claude_denies_an_invalid_list_with_each_violation(
    env: dict[str, str], ledger: PlanLedger, tmp_path: Path
) -> None:
    transcript, _, calls = todo_session(tmp_path)
    todos = [{**todo, "status": "in_progress"} for todo in todos_of(transcript, calls[0])]
    event = {**transcript.event("PreToolUse", calls[0]), "tool_input": {"todos": todos}}

    output = run_hook("claude-code", event, env).answer()["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse"
    assert output["permissionDecision"] == "deny"
    assert "[multiple_in_progress]" in output["permissionDecisionReason"]
    assert "TodoWrite" in output["permissionDecisionReason"]

    session = f"claude-{transcript.session}"
    assert ledger.plan(session).revision == 0
    assert [e.kind for e in ledger.history(session).entries] == ["proposed", "rejected"]


def test_claude_records_a_call_once_across_pre_and_post_replays(
    env: dict[str, str], ledger: PlanLedger, tmp_path: Path
) -> None:
    transcript, _, calls = todo_session(tmp_path)
    first, second = calls[:2]
    assert run_hook("claude-code", transcript.event("PreToolUse", first), env).silent()
    assert run_hook("claude-code", transcript.event("PostToolUse", first), env).silent()
    # PreToolUse never saw the second call (say the ledger was down): PostToolUse records it,
    # and a replayed PostToolUse writes nothing more.
    assert run_hook("claude-code", transcript.event("PostToolUse", second), env).silent()
    assert run_hook("claude-code", transcript.event("PostToolUse", second), env).silent()

    entries = ledger.history(f"claude-{transcript.session}").entries
    assert [(e.kind, e.proposal_id) for e in entries] == [
        ("proposed", first),
        ("committed", first),
        ("proposed", second),
        ("committed", second),
    ]


def test_a_subagents_todo_list_never_changes_the_main_sessions_plan(
    env: dict[str, str], ledger: PlanLedger, tmp_path: Path
) -> None:
    transcript = Transcript("sess-sub")
    main = transcript.todo_write([{"content": "Plan it", "status": "in_progress"}])
    sub = transcript.todo_write(
        [
            {"content": "Read the code", "status": "completed"},
            {"content": "Report", "status": "in_progress"},
        ],
        agent="a17ad42",
    )
    for call in (main, sub):
        assert run_hook("claude-code", transcript.event("PreToolUse", call), env).silent()
    assert [s.title for s in ledger.plan("claude-sess-sub").steps] == ["Plan it"]
    assert [s.title for s in ledger.plan("claude-sess-sub-a17ad42").steps] == [
        "Read the code",
        "Report",
    ]
    assert ledger.session("claude-sess-sub-a17ad42").parent_session_id == "claude-sess-sub"
    proposed = [
        e for e in ledger.history("claude-sess-sub-a17ad42").entries if e.kind == "proposed"
    ]
    assert proposed[0].client == "claude-code:a17ad42"
    # the main session's handoff is its own plan, not the subagent's
    answer = run_hook("claude-code", session_event("sess-sub", "compact"), env).answer()
    assert "Plan it" in answer["hookSpecificOutput"]["additionalContext"]
    assert "Report" not in answer["hookSpecificOutput"]["additionalContext"]


# -- Claude Code: the task tools (2.1.19 and later) --------------------------------------------


def hook(transcript: Transcript, name: str, call: str, env: dict[str, str]) -> HookRun:
    return run_hook("claude-code", transcript.event(name, call), env)


def both(transcript: Transcript, call: str, env: dict[str, str]) -> Any:
    """PreToolUse, then (when it allowed the call) PostToolUse, as Claude Code runs them:
    the PreToolUse answer (None when it said nothing)."""
    before = hook(transcript, "PreToolUse", call, env)
    assert before.code == 0 and before.stderr == "", before.stderr
    if before.stdout:
        return json.loads(before.stdout)
    assert hook(transcript, "PostToolUse", call, env).silent()
    return None


def denial(answer: Any) -> str:
    output = answer["hookSpecificOutput"]
    assert (output["hookEventName"], output["permissionDecision"]) == ("PreToolUse", "deny")
    reason: str = output["permissionDecisionReason"]
    return reason


def test_claude_task_tools_are_recorded_enforced_and_reinjected(
    env: dict[str, str], ledger: PlanLedger
) -> None:
    transcript = Transcript("sess-tasks")
    creates = [transcript.task_create(t) for t in ("Write the test", "Fix the bug", "Run it")]
    for call, _ in creates:
        assert both(transcript, call, env) is None
    session = "claude-sess-tasks"
    assert [(s.id, s.title, s.status) for s in ledger.plan(session).steps] == [
        ("1", "Write the test", "pending"),
        ("2", "Fix the bug", "pending"),
        ("3", "Run it", "pending"),
    ]
    # two tasks in progress at once: a subagent works beside the main agent
    assert both(transcript, transcript.task_update("1", status="in_progress"), env) is None
    parallel = transcript.task_update("2", status="in_progress", agent="a17ad42")
    assert both(transcript, parallel, env) is None
    assert both(transcript, transcript.task_update("1", status="completed"), env) is None
    # a reopened task and an unknown one are denied, with the codes the model must fix
    reopen = both(transcript, transcript.task_update("1", status="in_progress"), env)
    assert "[completed_step_reopened]" in denial(reopen)
    unknown = both(transcript, transcript.task_update("99", status="completed"), env)
    assert "[unknown_step]" in denial(unknown)
    assert "TaskUpdate" in denial(unknown)
    # deleted leaves the plan
    assert both(transcript, transcript.task_update("3", status="deleted"), env) is None
    view = ledger.plan(session)
    assert [(s.id, s.status) for s in view.steps] == [("1", "completed"), ("2", "in_progress")]
    assert view.policy == "tasks" and view.revision == 7
    # every call recorded once, a replayed PostToolUse included
    for call in (creates[0][0], parallel):
        assert hook(transcript, "PostToolUse", call, env).silent()
    proposed = [e for e in ledger.history(session).entries if e.kind == "proposed"]
    ids = [e.proposal_id for e in proposed]
    assert len(ids) == len(set(ids)) == 9  # 3 creates, 6 updates (2 of them denied)
    assert {e.client for e in proposed if e.proposal_id == parallel} == {"claude-code:a17ad42"}
    # after compaction the open tasks come back
    answer = run_hook("claude-code", transcript.lifecycle("SessionStart", source="compact"), env)
    context = answer.answer()["hookSpecificOutput"]["additionalContext"]
    assert context == ledger.compaction(session).text
    assert "Task 2 [in_progress]: Fix the bug" in context
    assert "Write the test" not in context  # completed: not open


@pytest.mark.parametrize(
    ("tool_input", "codes"),
    [
        ({"status": "completed"}, ["missing_field"]),
        ({"taskId": "1", "status": "finished"}, ["invalid_status"]),
        ({"taskId": 1, "status": "completed"}, ["invalid_field", "missing_field"]),
        ({"taskId": "1", "addBlockedBy": [2]}, ["invalid_field"]),
        ({"taskId": "1", "addBlockedBy": ["7"], "addBlocks": ["8"]}, ["unknown_step"]),
    ],
    ids=["no-task-id", "unknown-status", "numeric-id", "numeric-blocker", "missing-blockers"],
)
def test_a_bad_task_update_is_denied_with_every_code_and_the_plan_unchanged(
    env: dict[str, str], ledger: PlanLedger, tool_input: dict[str, Any], codes: list[str]
) -> None:
    transcript = Transcript("sess-bad")
    both(transcript, transcript.task_create("Write the test")[0], env)
    call = transcript.tool_use("TaskUpdate", tool_input)
    reason = denial(both(transcript, call, env))
    for code in codes:
        assert f"[{code}]" in reason
    view = ledger.plan("claude-sess-bad")
    assert view.revision == 1 and [(s.id, s.status) for s in view.steps] == [("1", "pending")]


def test_a_task_create_the_rules_refuse_is_denied_before_it_runs(
    env: dict[str, str], ledger: PlanLedger
) -> None:
    transcript = Transcript("sess-create")
    call = transcript.tool_use("TaskCreate", {"subject": "   ", "description": "blank"})
    assert "[blank_step_title]" in denial(both(transcript, call, env))
    with pytest.raises(SessionNotFound):
        ledger.plan("claude-sess-create")  # checked, never recorded


def test_task_created_and_task_completed_events(env: dict[str, str], ledger: PlanLedger) -> None:
    transcript = Transcript("sess-events")
    for subject in ("Write the test", "Fix the bug"):
        call, task_id = transcript.task_create(subject)
        created = transcript.lifecycle("TaskCreated", task_id=task_id, task_subject=subject)
        assert run_hook("claude-code", created, env).silent()  # recorded here...
        assert both(transcript, call, env) is None  # ...so PostToolUse writes nothing more
    both(transcript, transcript.task_update("2", addBlockedBy=["1"]), env)
    session = "claude-sess-events"
    assert [e.proposal_id for e in ledger.history(session).entries if e.kind == "committed"][
        :2
    ] == ["task-1-created", "task-2-created"]
    # a completion the rules refuse: exit 2, the violations on stderr, the task stays open
    refused = run_hook(
        "claude-code", transcript.lifecycle("TaskCompleted", task_id="2", task_subject="x"), env
    )
    assert refused.code == 2 and refused.stdout == ""
    assert "[blocked_step_started]" in refused.stderr
    assert {s.id: s.status for s in ledger.plan(session).steps}["2"] == "pending"
    done = run_hook(
        "claude-code", transcript.lifecycle("TaskCompleted", task_id="1", task_subject="x"), env
    )
    assert done.silent()
    assert {s.id: s.status for s in ledger.plan(session).steps}["1"] == "completed"
    again = run_hook("claude-code", transcript.lifecycle("TaskCompleted", task_id="1"), env)
    assert again.silent()  # completed already: nothing to decide
    unknown = run_hook("claude-code", transcript.lifecycle("TaskCompleted", task_id="42"), env)
    assert unknown.silent()  # a task the ledger never saw is left to Claude Code


def test_a_shared_task_list_takes_every_sessions_calls(
    env: dict[str, str], ledger: PlanLedger
) -> None:
    """`CLAUDE_CODE_TASK_LIST_ID` in the hook's environment: one list for every session that
    names it (each call's own environment decides the list)."""
    shared = {**env, "CLAUDE_CODE_TASK_LIST_ID": "my project"}
    first, second = Transcript("sess-one"), Transcript("sess-two")
    second.tasks = 1  # Claude Code numbers the shared list: the second session's is task 2
    both(first, first.task_create("From one")[0], shared)
    both(second, second.task_create("From two")[0], shared)
    assert both(second, second.task_update("1", status="in_progress"), shared) is None
    view = ledger.plan("claude-tasks-my-project")
    assert [(s.id, s.status) for s in view.steps] == [("1", "in_progress"), ("2", "pending")]
    for own in ("claude-sess-one", "claude-sess-two"):
        with pytest.raises(SessionNotFound):
            ledger.plan(own)


def test_hooks_installed_mid_session_catch_up_before_judging(
    env: dict[str, str], ledger: PlanLedger, tmp_path: Path
) -> None:
    """The first task call the ledger sees of a session: the transcript's earlier calls are
    recorded first, so a task Claude Code has is never denied as unknown."""
    transcript = Transcript("sess-late")
    transcript.task_create("Made before the hooks")
    transcript.task_create("Also before")
    transcript.task_update("1", status="in_progress")
    update = transcript.task_update("2", status="in_progress")
    # PreToolUse runs before the tool: the transcript holds the call, not its answer
    path = transcript.write(tmp_path / "sess-late.jsonl", slice(0, -1))
    event = transcript.event("PreToolUse", update, path)

    assert run_hook("claude-code", event, env).silent()
    view = ledger.plan("claude-sess-late")
    assert [(s.id, s.status) for s in view.steps] == [("1", "in_progress"), ("2", "in_progress")]
    proposed = [
        e.proposal_id for e in ledger.history("claude-sess-late").entries if e.kind == "proposed"
    ]
    assert len(proposed) == len(set(proposed)) == 4


def test_stop_imports_the_calls_no_hook_saw(
    env: dict[str, str], ledger: PlanLedger, tmp_path: Path
) -> None:
    transcript = Transcript("sess-stop")
    seen = transcript.task_create("Seen by the hooks")[0]
    both(transcript, seen, env)
    transcript.task_create("Missed (the ledger was down)")
    transcript.task_update("2", status="in_progress", agent="a17ad42")
    transcript.task_update("7", status="completed", error="Task not found")
    transcript.task_create("In a subagent's own file", agent="cd34", in_file=True)
    path = transcript.write(tmp_path / "sess-stop.jsonl")
    stop = transcript.lifecycle("Stop", path, stop_hook_active=False)

    assert run_hook("claude-code", stop, env).silent()
    assert run_hook("claude-code", {**stop, "hook_event_name": "SessionEnd"}, env).silent()

    view = ledger.plan("claude-sess-stop")
    assert [(s.id, s.status) for s in view.steps] == [
        ("1", "pending"),
        ("2", "in_progress"),
        ("3", "pending"),
    ]
    proposed = [
        e.proposal_id for e in ledger.history("claude-sess-stop").entries if e.kind == "proposed"
    ]
    assert len(proposed) == len(set(proposed)) == 4  # the error answer changed nothing
    resumed = run_hook(
        "claude-code", transcript.lifecycle("SessionStart", path, source="resume"), env
    )
    assert "Task 2 [in_progress]" in resumed.answer()["hookSpecificOutput"]["additionalContext"]


def test_other_tools_and_events_are_ignored_without_touching_the_database(
    env: dict[str, str], tmp_path: Path
) -> None:
    transcript, _, calls = todo_session(tmp_path / "t")
    event = transcript.event("PreToolUse", calls[0])
    bash = {**event, "tool_name": "Bash", "tool_input": {"command": "ls"}}
    prompt = {
        "session_id": transcript.session,
        "hook_event_name": "UserPromptSubmit",
        "prompt": "x",
    }
    assert run_hook("claude-code", bash, env).silent()
    assert run_hook("claude-code", prompt, env).silent()
    listing = {**event, "tool_name": "TaskList", "tool_input": {}}
    assert run_hook("claude-code", listing, env).silent()
    assert run_hook("claude-code", {**listing, "tool_name": "TaskGet"}, env).silent()
    assert run_hook("gemini", {**bash, "hook_event_name": "BeforeTool"}, env).silent()
    assert not (tmp_path / "ledger.sqlite3").exists()


def test_resume_of_a_session_without_a_plan_answers_nothing(env: dict[str, str]) -> None:
    assert run_hook("claude-code", session_event("never-seen", "resume"), env).silent()


# -- failing open ------------------------------------------------------------------------------


NO_TODOS = (
    '{"hook_event_name": "PreToolUse", "tool_name": "TodoWrite", "session_id": "s", '
    '"tool_use_id": "t", "tool_input": {}}'
)


@pytest.mark.parametrize(
    ("agent", "stdin"),
    [
        ("claude-code", "this is not json"),
        ("claude-code", '["an", "array"]'),
        ("claude-code", NO_TODOS),
        ("claude", NO_TODOS),  # a typo in the settings must not block the agent either
    ],
    ids=["garbage", "not-an-object", "no-todos", "unknown-agent"],
)
def test_bad_events_fail_open(env: dict[str, str], agent: str, stdin: str) -> None:
    one_error_line(run_hook(agent, stdin, env))


def test_a_dead_database_fails_open_quickly(env: dict[str, str], tmp_path: Path) -> None:
    transcript, _, calls = todo_session(tmp_path)
    event = transcript.event("PreToolUse", calls[0])
    dead = {**env, "PLANLEDGER_DATABASE_URL": "postgresql://postgres@127.0.0.1:1/x"}
    run = run_hook("claude-code", event, dead)
    assert "cannot reach the database" in one_error_line(run)
    assert run.seconds < 3.0


def test_a_locked_database_fails_open_at_the_deadline(
    env: dict[str, str], tmp_path: Path, ledger: PlanLedger
) -> None:
    transcript, _, calls = todo_session(tmp_path / "t")
    ledger.open_session(f"claude-{transcript.session}")
    locked, release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        connection = sqlite3.connect(tmp_path / "ledger.sqlite3", isolation_level=None)
        connection.execute("BEGIN EXCLUSIVE")
        locked.set()
        release.wait(30)
        connection.close()

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        assert locked.wait(10)
        run = run_hook(
            "claude-code",
            transcript.event("PreToolUse", calls[0]),
            {**env, "PLANLEDGER_HOOK_DEADLINE": "1"},
        )
    finally:
        release.set()
        holder.join()
    assert "gave up after 1 s" in one_error_line(run)
    assert ledger.plan(f"claude-{transcript.session}").revision == 0


# -- Gemini CLI --------------------------------------------------------------------------------


def test_gemini_records_refuses_and_reinjects_on_resume(
    env: dict[str, str], ledger: PlanLedger
) -> None:
    def before_tool(todos: list[dict[str, str]]) -> dict[str, object]:
        return {
            "session_id": "5b0f6c4e-gemini",
            "transcript_path": "/tmp/gemini/chat.json",
            "cwd": "/work/project",
            "hook_event_name": "BeforeTool",
            "timestamp": "2026-01-20T18:34:08.593Z",
            "tool_name": "write_todos",
            "tool_input": {"todos": todos},
        }

    good = [
        {"description": "Read the failing test", "status": "completed"},
        {"description": "Try the old parser", "status": "cancelled"},
        {"description": "Fix the parser", "status": "in_progress"},
        {"description": "Run the suite", "status": "pending"},
    ]
    assert run_hook("gemini", before_tool(good), env).silent()
    bad = [{**todo, "status": "in_progress"} for todo in good]
    answer = run_hook("gemini", before_tool(bad), env).answer()
    assert answer["decision"] == "deny"
    assert "[multiple_in_progress]" in answer["reason"]

    plan = ledger.plan("gemini-5b0f6c4e-gemini")
    assert plan.revision == 1
    assert [s.status for s in plan.steps] == ["completed", "cancelled", "in_progress", "pending"]
    # SessionStart's context would go in front of the first prompt (a slash command given with
    # the resume would become text): the resume only marks the session, the next prompt gets it.
    assert run_hook("gemini", session_event("5b0f6c4e-gemini", "resume"), env).silent()
    prompt = {**before_tool(good), "hook_event_name": "BeforeAgent", "prompt": "go on"}
    resumed = run_hook("gemini", prompt, env).answer()
    context = resumed["hookSpecificOutput"]["additionalContext"]
    assert context == ledger.compaction("gemini-5b0f6c4e-gemini").text
    assert "Current: Fix the parser" in context
    assert run_hook("gemini", prompt, env).silent()  # once per resume


def gemini_event(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": "9c1d-gemini",
        "transcript_path": "/tmp/gemini/chat.json",
        "cwd": "/work/project",
        "hook_event_name": name,
        "timestamp": "2026-08-20T09:00:00.000Z",
        **fields,
    }


def test_gemini_task_tracker_tools_in_the_task_form(
    env: dict[str, str], ledger: PlanLedger
) -> None:
    """Gemini CLI's experimental tracker (`experimental.taskTracker`): its ids are made by
    Gemini, so a create is checked before it runs and recorded from its answer."""

    def create(task_id: str, title: str, **extra: Any) -> None:
        tool_input = {"title": title, "description": "d", "type": "task", **extra}
        before = gemini_event("BeforeTool", tool_name="tracker_create_task", tool_input=tool_input)
        assert run_hook("gemini", before, env).silent()
        answer = {"llmContent": f"Created task {task_id}: {title}", "returnDisplay": {"todos": []}}
        after = gemini_event(
            "AfterTool",
            tool_name="tracker_create_task",
            tool_input=tool_input,
            tool_response=answer,
        )
        assert run_hook("gemini", after, env).silent()
        assert run_hook("gemini", after, env).silent()  # a second answer creates nothing more

    def update(**tool_input: Any) -> HookRun:
        event = gemini_event("BeforeTool", tool_name="tracker_update_task", tool_input=tool_input)
        return run_hook("gemini", event, env)

    create("a1b2c3", "Write the test")
    create("d4e5f6", "Fix the bug", dependencies=["a1b2c3"])
    session = "gemini-9c1d-gemini"
    assert [(s.id, s.blocked_by) for s in ledger.plan(session).steps] == [
        ("a1b2c3", ()),
        ("d4e5f6", ("a1b2c3",)),
    ]
    refused = update(id="d4e5f6", status="closed").answer()
    assert refused["decision"] == "deny" and "[blocked_step_started]" in refused["reason"]
    assert update(id="a1b2c3", status="in_progress").silent()
    assert update(id="a1b2c3", status="closed").silent()
    assert update(id="d4e5f6", status="blocked").silent()  # waiting: pending in the task form
    blank = gemini_event(
        "BeforeTool", tool_name="tracker_create_task", tool_input={"title": " ", "type": "task"}
    )
    assert "[blank_step_title]" in run_hook("gemini", blank, env).answer()["reason"]
    view = ledger.plan(session)
    assert view.policy == "tasks"
    assert [(s.id, s.status) for s in view.steps] == [
        ("a1b2c3", "completed"),
        ("d4e5f6", "pending"),
    ]
    assert ledger.session(session).source == "gemini"


def test_gemini_gets_the_plan_back_after_compressing_its_context(
    env: dict[str, str], ledger: PlanLedger
) -> None:
    todos = [{"description": "Fix the parser", "status": "in_progress"}]
    write = gemini_event("BeforeTool", tool_name="write_todos", tool_input={"todos": todos})
    assert run_hook("gemini", write, env).silent()
    prompt = gemini_event("BeforeAgent", prompt="go on")
    assert run_hook("gemini", prompt, env).silent()  # no compression yet: nothing added
    # Gemini 0.61 fires PreCompress "auto" before every turn: alone it is no compression.
    assert run_hook("gemini", gemini_event("PreCompress", trigger="auto"), env).silent()
    assert run_hook("gemini", prompt, env).silent()
    assert run_hook("gemini", gemini_event("PreCompress", trigger="manual"), env).silent()
    answer = run_hook("gemini", prompt, env).answer()
    assert answer == {
        "hookSpecificOutput": {
            "hookEventName": "BeforeAgent",
            "additionalContext": ledger.compaction("gemini-9c1d-gemini").text,
        }
    }
    assert run_hook("gemini", prompt, env).silent()  # once per compression


# -- Codex -------------------------------------------------------------------------------------


def test_codex_imports_the_rollout_incrementally_and_reinjects_on_resume(
    env: dict[str, str], ledger: PlanLedger, tmp_path: Path
) -> None:
    rollout = Rollout(tmp_path / "rollout-2026-01-20T18-34-08-0199a1b2.jsonl", "0199a1b2-c3d4")
    first = rollout.update_plan([("Locate the failure", "in_progress"), ("Fix it", "pending")])
    second = rollout.update_plan([("Locate the failure", "completed"), ("Fix it", "in_progress")])
    assert run_hook("codex", rollout.event("Stop", stop_hook_active=False), env).silent()
    session = "codex-0199a1b2-c3d4"
    assert ledger.plan(session).revision == 2

    third = rollout.update_plan([("Fix it", "in_progress"), ("Fix it", "in_progress")])  # invalid
    assert run_hook("codex", rollout.event("PostCompact", trigger="auto"), env).silent()
    assert run_hook("codex", rollout.event("Stop", stop_hook_active=False), env).silent()
    entries = ledger.history(session).entries
    assert [(e.kind, e.proposal_id) for e in entries if e.kind != "proposed"] == [
        ("committed", first),
        ("committed", second),
        ("rejected", third),
    ]

    answer = run_hook("codex", rollout.event("SessionStart", source="resume"), env).answer()
    assert answer == {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": ledger.compaction(session).text,
        }
    }
    assert "Current: Fix it" in answer["hookSpecificOutput"]["additionalContext"]
    assert run_hook("codex", rollout.event("SessionStart", source="startup"), env).silent()


def test_claude_records_and_refuses_on_either_database(database_url: str, tmp_path: Path) -> None:
    env = {"PLANLEDGER_HOME": str(tmp_path / "home"), "PLANLEDGER_DATABASE_URL": database_url}
    transcript, _, calls = todo_session(tmp_path)
    event = transcript.event("PreToolUse", calls[0])
    assert run_hook("claude-code", event, env).silent()
    wrong = {**event, "tool_use_id": "toolu_refused"}
    wrong["tool_input"] = {
        "todos": [{**t, "status": "in_progress"} for t in todos_of(transcript, calls[0])]
    }
    reason = run_hook("claude-code", wrong, env).answer()["hookSpecificOutput"]
    assert "[multiple_in_progress]" in reason["permissionDecisionReason"]
    with open_planledger(database_url, home=None) as service:
        entries = service.history(f"claude-{transcript.session}").entries
    assert [(e.kind, e.proposal_id) for e in entries if e.kind != "proposed"] == [
        ("committed", calls[0]),
        ("rejected", "toolu_refused"),
    ]
