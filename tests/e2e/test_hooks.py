"""`planledger hook claude-code|gemini|codex`: events piped in as each agent sends them."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from planledger.service import PlanLedger, open_planledger
from tests.e2e.hook_events import SAMPLES, HookRun, Rollout, run_hook, session_event, todo_calls

TRANSCRIPT = SAMPLES / "73_7e6e3ea2ad_2_full.jsonl"  # four TodoWrite calls, all valid
OTHER_TRANSCRIPT = SAMPLES / "f8_10e13fce67_0_full.jsonl"


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


# -- Claude Code -------------------------------------------------------------------------------


def test_claude_records_each_real_todowrite_and_reinjects_after_compaction(
    env: dict[str, str], ledger: PlanLedger
) -> None:
    calls = todo_calls(TRANSCRIPT)
    assert len(calls) == 4
    session = f"claude-{calls[0].session_id}"
    for call in calls:
        assert run_hook("claude-code", call.event("PreToolUse"), env).silent()

    history = ledger.history(session).entries
    assert [e.proposal_id for e in history if e.kind == "committed"] == [
        c.tool_use_id for c in calls
    ]
    plan = ledger.plan(session)
    assert plan.revision == 4
    assert [(s.title, s.status) for s in plan.steps] == [
        (t["content"], t["status"]) for t in calls[-1].todos
    ]

    answer = run_hook("claude-code", session_event(calls[0].session_id, "compact"), env).answer()
    assert answer == {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": ledger.compaction(session).text,
        }
    }
    assert "Plan revision 4" in answer["hookSpecificOutput"]["additionalContext"]
    # a fresh start is not a compaction: nothing to put back
    assert run_hook("claude-code", session_event(calls[0].session_id, "startup"), env).silent()


def test_claude_denies_an_invalid_list_with_each_violation(
    env: dict[str, str], ledger: PlanLedger
) -> None:
    call = todo_calls(OTHER_TRANSCRIPT)[0]
    todos = [{**todo, "status": "in_progress"} for todo in call.todos]  # five steps in progress
    event = {**call.event("PreToolUse"), "tool_input": {"todos": todos}}

    output = run_hook("claude-code", event, env).answer()["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse"
    assert output["permissionDecision"] == "deny"
    assert "[multiple_in_progress]" in output["permissionDecisionReason"]
    assert "TodoWrite" in output["permissionDecisionReason"]

    session = f"claude-{call.session_id}"
    assert ledger.plan(session).revision == 0
    assert [e.kind for e in ledger.history(session).entries] == ["proposed", "rejected"]


def test_claude_records_a_call_once_across_pre_and_post_replays(
    env: dict[str, str], ledger: PlanLedger
) -> None:
    first, second = todo_calls(OTHER_TRANSCRIPT)[:2]
    assert run_hook("claude-code", first.event("PreToolUse"), env).silent()
    assert run_hook("claude-code", first.event("PostToolUse"), env).silent()
    # PreToolUse never saw the second call (say the ledger was down): PostToolUse records it,
    # and a replayed PostToolUse writes nothing more.
    assert run_hook("claude-code", second.event("PostToolUse"), env).silent()
    assert run_hook("claude-code", second.event("PostToolUse"), env).silent()

    entries = ledger.history(f"claude-{first.session_id}").entries
    assert [(e.kind, e.proposal_id) for e in entries] == [
        ("proposed", first.tool_use_id),
        ("committed", first.tool_use_id),
        ("proposed", second.tool_use_id),
        ("committed", second.tool_use_id),
    ]


def test_other_tools_and_events_are_ignored_without_touching_the_database(
    env: dict[str, str], tmp_path: Path
) -> None:
    call = todo_calls(TRANSCRIPT)[0]
    bash = {**call.event("PreToolUse"), "tool_name": "Bash", "tool_input": {"command": "ls"}}
    prompt = {"session_id": call.session_id, "hook_event_name": "UserPromptSubmit", "prompt": "x"}
    assert run_hook("claude-code", bash, env).silent()
    assert run_hook("claude-code", prompt, env).silent()
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


def test_a_dead_database_fails_open_quickly(env: dict[str, str]) -> None:
    event = todo_calls(TRANSCRIPT)[0].event("PreToolUse")
    dead = {**env, "PLANLEDGER_DATABASE_URL": "postgresql://postgres@127.0.0.1:1/x"}
    run = run_hook("claude-code", event, dead)
    assert "cannot reach the database" in one_error_line(run)
    assert run.seconds < 3.0


def test_a_locked_database_fails_open_at_the_deadline(
    env: dict[str, str], tmp_path: Path, ledger: PlanLedger
) -> None:
    call = todo_calls(TRANSCRIPT)[0]
    ledger.open_session(f"claude-{call.session_id}")
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
            "claude-code", call.event("PreToolUse"), {**env, "PLANLEDGER_HOOK_DEADLINE": "1"}
        )
    finally:
        release.set()
        holder.join()
    assert "gave up after 1 s" in one_error_line(run)
    assert ledger.plan(f"claude-{call.session_id}").revision == 0


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
    resumed = run_hook("gemini", session_event("5b0f6c4e-gemini", "resume"), env).answer()
    context = resumed["hookSpecificOutput"]["additionalContext"]
    assert context == ledger.compaction("gemini-5b0f6c4e-gemini").text
    assert "Current: Fix the parser" in context


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
    call = todo_calls(TRANSCRIPT)[0]
    assert run_hook("claude-code", call.event("PreToolUse"), env).silent()
    wrong = {**call.event("PreToolUse"), "tool_use_id": "toolu_refused"}
    wrong["tool_input"] = {"todos": [{**t, "status": "in_progress"} for t in call.todos]}
    reason = run_hook("claude-code", wrong, env).answer()["hookSpecificOutput"]
    assert "[multiple_in_progress]" in reason["permissionDecisionReason"]
    with open_planledger(database_url, home=None) as service:
        entries = service.history(f"claude-{call.session_id}").entries
    assert [(e.kind, e.proposal_id) for e in entries if e.kind != "proposed"] == [
        ("committed", call.tool_use_id),
        ("rejected", "toolu_refused"),
    ]
