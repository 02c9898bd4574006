"""Claude Code 2.1.332 with the ledger's hooks (installed as the README says), headless against
the scripted model: what the ledger records, and what Claude Code tells the model next."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.agents.claude import ClaudeCode
from tests.agents.model.conversation import Call, Reply
from tests.agents.model.scripts import by_prompt
from tests.agents.model.server import Script
from tests.agents.rig import Sandbox

ClaudeFactory = Callable[[Script], ClaudeCode]

PARSER = {"subject": "Write the parser", "description": "Tokens to AST"}
TESTS = {"subject": "Test the parser", "description": "Edge cases"}
PLAN = [
    Reply(calls=(Call("TaskCreate", {**PARSER, "activeForm": "Writing the parser"}),)),
    Reply(calls=(Call("TaskCreate", {**TESTS, "activeForm": "Testing the parser"}),)),
    Reply.call("TaskUpdate", taskId="2", addBlockedBy=["1"]),
    Reply.call("TaskUpdate", taskId="1", status="in_progress"),
    Reply(text="Planned."),
]
OPEN_TASKS = "Task 1 [in_progress]: Write the parser"
# The plan, then a fork that completes a task of its parent's.
FORKED = {
    "Plan the parser": PLAN,
    "Try another way": [Reply.call("TaskUpdate", taskId="1", status="completed")],
}


def history(agent: ClaudeCode, session: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = agent.sandbox.planledger_json("plan", "history", session)[
        "entries"
    ]
    return entries


def test_tasks_are_recorded_once_each_with_every_field_claude_gave(claude: ClaudeFactory) -> None:
    agent = claude(by_prompt({"Plan the parser": PLAN}))
    run = agent.run("Plan the parser")
    session = f"claude-{run.session_id}"

    plan = agent.sandbox.plan(session)
    assert [(s["id"], s["title"], s["status"]) for s in plan["steps"]] == [
        ("1", "Write the parser", "in_progress"),
        ("2", "Test the parser", "pending"),
    ]
    assert plan["steps"][1]["blocked_by"] == ["1"]
    proposed = [e for e in history(agent, session) if e["kind"] == "proposed"]
    creates = [e["operation"] for e in proposed if e["operation"]["op"] == "create"]
    # Recorded from PostToolUse under the call's id (TaskCreated fires first, without activeForm).
    assert [(c["id"], c["detail"], c["active_form"]) for c in creates] == [
        ("1", "Tokens to AST", "Writing the parser"),
        ("2", "Edge cases", "Testing the parser"),
    ]
    assert all(e["proposal_id"].startswith("toolu_") for e in proposed)
    assert len(proposed) == 4
    # What the model was told: Claude Code's own answers, nothing of ours.
    results = [r["content"] for r in run.tool_results() if "Task #" in str(r["content"])]
    assert results == [
        "Task #1 created successfully: Write the parser",
        "Task #2 created successfully: Test the parser",
    ]


def test_a_refused_update_is_denied_with_its_code_and_never_runs(claude: ClaudeFactory) -> None:
    turns = [*PLAN[:3], Reply.call("TaskUpdate", taskId="2", status="in_progress")]
    agent = claude(by_prompt({"Plan the parser": turns}))
    run = agent.run("Plan the parser")
    session = f"claude-{run.session_id}"

    told = agent.model.requests[-1].conversation.results()[-1]
    assert told.is_error and "[blocked_step_started]" in told.text, told
    entries = history(agent, session)
    assert entries[-1]["kind"] == "rejected"
    assert entries[-1]["violations"][0]["code"] == "blocked_step_started"
    assert agent.sandbox.plan(session)["steps"][1]["status"] == "pending"
    # Claude Code never ran it: its own task 2 is still pending.
    task = json.loads(
        (agent.sandbox.home / ".claude/tasks" / run.session_id / "2.json").read_text()
    )
    assert task["status"] == "pending"


def test_compaction_puts_the_open_tasks_back_once(claude: ClaudeFactory) -> None:
    agent = claude(by_prompt({"Plan the parser": PLAN, "Go on": [Reply(text="Going on.")]}))
    first = agent.run("Plan the parser")
    agent.run("/compact", "--resume", first.session_id)
    agent.run("Go on", "--resume", first.session_id)

    after = agent.model.requests[-1].conversation
    assert "Go on" in after.prompts()
    assert after.count_in_messages(OPEN_TASKS) == 1, after.all_text()[-3000:]


def test_a_resume_adds_the_plan_only_when_the_model_lacks_it(claude: ClaudeFactory) -> None:
    """The first resume gets the plan; a later one, after changes the model made itself and
    still sees, gets no second plan text beside the first."""
    agent = claude(
        by_prompt(
            {
                "Plan the parser": PLAN,
                "Go on": [Reply.call("TaskUpdate", taskId="1", status="completed")],
                "Again": [],
            }
        )
    )
    first = agent.run("Plan the parser")
    agent.run("Go on", "--resume", first.session_id)
    resumed = agent.model.agent_requests("TaskUpdate")
    go_on = next(r.conversation for r in resumed if "Go on" in r.conversation.prompts())
    assert go_on.count_in_messages(OPEN_TASKS) == 1
    agent.run("Again", "--resume", first.session_id)

    last = agent.model.requests[-1].conversation
    assert "Again" in last.prompts()
    assert last.count_in_messages("Task list revision") == 1, last.all_text()[-3000:]


def test_a_fork_holds_what_claudes_fork_holds_and_names_its_parent(claude: ClaudeFactory) -> None:
    agent = claude(by_prompt(FORKED))
    parent = agent.run("Plan the parser")
    fork = agent.run("Try another way", "--resume", parent.session_id, "--fork-session")
    assert fork.session_id != parent.session_id

    sessions = agent.sandbox.sessions()
    fork_session = sessions[f"claude-{fork.session_id}"]
    assert fork_session["parent_session_id"] == f"claude-{parent.session_id}"
    assert agent.sandbox.plan(f"claude-{fork.session_id}")["steps"] == []
    assert agent.sandbox.plan(f"claude-{parent.session_id}")["steps"][0]["status"] == "in_progress"
    # The model reads why, and which tasks its parent has open (once).
    told = agent.model.requests[-1].conversation
    assert told.results()[-1].is_error
    assert told.count_in_messages(f"forked from claude-{parent.session_id}") == 1
    assert told.count_in_messages(OPEN_TASKS) == 1


def test_import_of_what_claude_wrote_agrees_with_the_hooks(claude: ClaudeFactory) -> None:
    agent = claude(by_prompt(FORKED))
    parent = agent.run("Plan the parser")
    fork = agent.run("Try another way", "--resume", parent.session_id, "--fork-session")
    projects = agent.sandbox.home / ".claude" / "projects"

    again = agent.sandbox.planledger_json("import", "claude", str(projects))
    assert again["errors"] == []
    assert sum(s["committed"] + s["rejected"] for s in again["sessions"]) == 0, again

    # A fresh ledger from the transcripts alone: the same plans, whatever the order of files.
    plans = []
    for order in (sorted, lambda paths: sorted(paths, reverse=True)):
        files = order(str(path) for path in projects.rglob("*.jsonl"))
        fresh = agent.sandbox.root / f"fresh-{len(plans)}"
        result = agent.sandbox.planledger_json(
            "--database", f"sqlite:///{fresh / 'ledger.sqlite3'}", "import", "claude", *files
        )
        plans.append(
            {row["session_id"]: (row["committed"], row["skipped"]) for row in result["sessions"]}
        )
    assert plans[0] == plans[1]
    assert plans[0][f"claude-{parent.session_id}"][0] == 4
    assert (
        f"claude-{fork.session_id}" not in plans[0] or plans[0][f"claude-{fork.session_id}"][0] == 0
    )


def test_a_call_claude_failed_is_not_imported(claude: ClaudeFactory, tmp_path: Path) -> None:
    """Without the hooks, Claude Code's fork fails an update of its parent's task ("Task not
    found", `toolUseResult.success: false`): the import records nothing of it."""
    agent = claude(by_prompt(FORKED))
    (agent.sandbox.project / ".claude" / "settings.json").unlink()
    parent = agent.run("Plan the parser")
    fork = agent.run("Try another way", "--resume", parent.session_id, "--fork-session")
    assert "Task not found" in str(fork.tool_results()[-1]["content"])

    projects = agent.sandbox.home / ".claude" / "projects"
    result = agent.sandbox.planledger_json("import", "claude", str(projects))
    by_session = {row["session_id"]: row for row in result["sessions"]}
    forked = by_session[f"claude-{fork.session_id}"]
    assert (forked["committed"], forked["rejected"], forked["skipped"]) == (0, 0, 1), forked
    assert agent.sandbox.plan(f"claude-{parent.session_id}")["steps"][0]["status"] == "in_progress"


def test_after_clear_the_new_session_names_the_one_before_once(claude: ClaudeFactory) -> None:
    agent = claude(by_prompt({"Plan the parser": PLAN, "Go on": [Reply(text="Going on.")]}))
    before = agent.run("Plan the parser")
    agent.run("/clear", "--resume", before.session_id)
    after = agent.run("Go on", "--continue")
    assert after.session_id != before.session_id

    previous = f"claude-{before.session_id}"
    assert agent.sandbox.sessions()[f"claude-{after.session_id}"]["parent_session_id"] == previous
    told = agent.model.requests[-1].conversation
    assert told.count_in_messages(f"continued from {previous}") == 1
    assert told.count_in_messages(OPEN_TASKS) == 1
    assert f"planledger plan show {previous}" in told.all_text()
    assert len(agent.sandbox.plan(previous)["steps"]) == 2  # nothing recreated or moved


def test_a_list_claude_numbers_anew_goes_on_in_the_same_session(claude: ClaudeFactory) -> None:
    """Claude Code's task files are cleaned up; the resumed session numbers from 1 again: the
    new task 1 is recorded (the earlier task 1 leaves the plan, its history kept), and its
    updates are not refused."""
    agent = claude(
        by_prompt(
            {
                "Plan the parser": PLAN,
                "More": [
                    Reply(calls=(Call("TaskCreate", {"subject": "Ship it", "description": "-"}),)),
                    Reply.call("TaskUpdate", taskId="1", status="in_progress"),
                ],
            }
        )
    )
    first = agent.run("Plan the parser")
    tasks = agent.sandbox.home / ".claude" / "tasks" / first.session_id
    for path in tasks.glob("*.json"):
        path.unlink()
    again = agent.run("More", "--resume", first.session_id)
    assert "Updated task #1" in str(again.tool_results()[-1]["content"])

    session = f"claude-{first.session_id}"
    steps = {s["id"]: (s["title"], s["status"]) for s in agent.sandbox.plan(session)["steps"]}
    assert steps["1"] == ("Ship it", "in_progress")
    titles = [e["operation"]["title"] for e in history(agent, session) if e["kind"] == "proposed"]
    assert "Write the parser" in titles  # the earlier task 1 stays in the history

    # The transcript alone, imported into a ledger of its own, gives the same plan, and an
    # import after the hooks adds nothing (the same ids for the same calls).
    projects = str(agent.sandbox.home / ".claude" / "projects")
    assert (
        agent.sandbox.planledger_json("import", "claude", projects)["sessions"][0]["committed"] == 0
    )
    fresh = Sandbox(agent.sandbox.root / "fresh").make()
    alone = fresh.planledger_json("import", "claude", projects)
    assert alone["errors"] == [] and alone["sessions"][0]["rejected"] == 0, alone
    assert fresh.plan(session)["steps"] == agent.sandbox.plan(session)["steps"]


def test_mcp_calls_land_in_claudes_own_session(claude: ClaudeFactory) -> None:
    """`claude mcp add planledger -- planledger mcp` (the README): Claude Code tells the server
    its session in `CLAUDE_CODE_SESSION_ID`; a health check and tool listing open nothing."""
    read = Reply.call("mcp__planledger__read_plan")
    agent = claude(by_prompt({"Plan the parser": [*PLAN[:4], read], "Go on": [read]}))
    agent.add_mcp_server()
    listed = agent.claude("mcp", "list")
    assert "planledger" in listed.stdout, listed

    allow = ("--allowedTools", "mcp__planledger")  # headless: no one to approve the call
    first = agent.run("Plan the parser", *allow)
    agent.run("Go on", "--resume", first.session_id, *allow)

    answers = [
        r for r in agent.model.requests[-1].conversation.results() if r.name.endswith("read_plan")
    ]
    assert len(answers) == 2 and not any(a.is_error for a in answers), answers
    assert all("Write the parser" in a.text for a in answers)
    assert list(agent.sandbox.sessions()) == [f"claude-{first.session_id}"]
