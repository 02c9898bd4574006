"""Codex 0.171.0 with the ledger's hooks (installed as the README says), headless against the
scripted model (OpenAI Responses): what the ledger records, and what Codex tells the model."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.agents.codex import Codex
from tests.agents.conftest import pinned_binary
from tests.agents.model.conversation import Conversation, Reply
from tests.agents.model.scripts import SUMMARY, by_prompt
from tests.agents.model.server import Script, ScriptedModel
from tests.agents.rig import Sandbox

CodexFactory = Callable[..., Codex]

PLAN = [
    {"step": "Write the parser", "status": "in_progress"},
    {"step": "Test the parser", "status": "pending"},
]
DONE = [{**PLAN[0], "status": "completed"}, {**PLAN[1], "status": "in_progress"}]
LONG = [PLAN[0], {"step": "x" * 501, "status": "pending"}]
PLAN_TEXT = "Current: Write the parser"  # only in the ledger's context, never in Codex's own


@pytest.fixture
def codex(sandbox: Sandbox, model: Callable[[Script], ScriptedModel]) -> CodexFactory:
    """Codex with the ledger's hooks installed for the user, as the README says."""
    binary = pinned_binary("codex")

    def make(script: Script, *, mcp: bool = False) -> Codex:
        agent = Codex(binary, sandbox, model(script))
        agent.prepare(mcp=mcp)
        agent.install_hooks()
        return agent

    return make


def script(**turns: Any) -> Script:
    plan = [Reply.call("update_plan", plan=PLAN), Reply(text="Planned.")]
    return by_prompt({"Plan the parser": plan, **turns})


def history(agent: Codex, session: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = agent.sandbox.planledger_json("plan", "history", session)[
        "entries"
    ]
    return entries


def kinds(agent: Codex, session: str) -> list[str]:
    return [entry["kind"] for entry in history(agent, session)]


def test_install_turns_update_plan_on_and_says_what_codex_needs(
    sandbox: Sandbox, model: Callable[[Script], ScriptedModel]
) -> None:
    agent = Codex(pinned_binary("codex"), sandbox, model(script()))
    agent.prepare()
    installed = agent.install_hooks()
    assert "update_plan turned on" in installed.stderr
    assert "--dangerously-bypass-hook-trust" in installed.stderr and "/hooks" in installed.stderr
    hooks = json.loads((agent.home / "hooks.json").read_text())["hooks"]
    commands = {h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]}
    assert len(commands) == 1 and commands.pop().split()[0].startswith("/"), commands
    assert agent.install_hooks().stderr.count("update_plan turned on") == 0  # once

    run = agent.run("Plan the parser")
    assert "update_plan" in agent.model.requests[0].conversation.tools
    assert kinds(agent, f"codex-{run.thread_id}") == ["proposed", "committed"]


def test_each_call_is_recorded_when_codex_applies_it(codex: CodexFactory) -> None:
    agent = codex(script())
    run = agent.run("Plan the parser")
    session = f"codex-{run.thread_id}"

    entries = history(agent, session)
    assert [e["kind"] for e in entries] == ["proposed", "committed"]
    assert entries[0]["proposal_id"] == agent.model.requests[-1].conversation.calls()[-1].id
    assert agent.sandbox.sessions()[session]["source"] == "codex"
    told = agent.model.requests[-1].conversation.results()[-1]
    assert told.text == "Plan updated", told


def test_a_list_the_ledger_refuses_is_denied_and_the_model_reads_why(
    codex: CodexFactory,
) -> None:
    agent = codex(script(**{"Plan badly": [Reply.call("update_plan", plan=LONG)]}))
    run = agent.run("Plan badly")
    session = f"codex-{run.thread_id}"

    told = agent.model.requests[-1].conversation.results()[-1]
    assert "Tool call blocked by PreToolUse hook" in told.text, told
    assert "[too_long]" in told.text and "call update_plan again" in told.text, told
    # Recorded once, as rejected; the turn's import (Stop) commits nothing of it.
    assert kinds(agent, session) == ["proposed", "rejected"]
    assert agent.sandbox.plan(session)["revision"] == 0


def test_a_call_codex_itself_refuses_is_never_committed(codex: CodexFactory) -> None:
    # Codex's update_plan has no `cancelled`: its argument parsing fails after PreToolUse.
    cancelled = [{"step": "Write the parser", "status": "cancelled"}]
    agent = codex(script(**{"Drop it": [Reply.call("update_plan", plan=cancelled)]}))
    first = agent.run("Plan the parser")
    agent.run("Drop it", resume=first.thread_id)
    session = f"codex-{first.thread_id}"

    told = agent.model.requests[-1].conversation.results()[-1]
    assert "failed to parse function arguments" in told.text, told
    assert kinds(agent, session) == ["proposed", "committed"]  # the first plan only
    again = agent.sandbox.planledger_json("import", "codex", str(agent.home / "sessions"))
    assert [(s["committed"], s["rejected"]) for s in again["sessions"]] == [(0, 0)]


def test_a_resume_puts_the_plan_back_once(codex: CodexFactory) -> None:
    agent = codex(script(**{"Go on": [Reply.call("update_plan", plan=DONE), Reply(text="Ok.")]}))
    first = agent.run("Plan the parser")
    again = agent.run("Go on", resume=first.thread_id)
    assert again.thread_id == first.thread_id

    told = agent.model.requests[-1].conversation
    assert told.count(PLAN_TEXT) == 1, told.all_text()[-3000:]
    steps = agent.sandbox.plan(f"codex-{first.thread_id}")["steps"]
    assert [s["status"] for s in steps] == ["completed", "in_progress"]


COMPACTING = "model_auto_compact_token_limit = 20000"
SUMMARY_REQUEST = "CONTEXT CHECKPOINT COMPACTION"


def test_compaction_puts_the_plan_back_once(
    sandbox: Sandbox, model: Callable[[Script], ScriptedModel]
) -> None:
    heavy = Reply(calls=Reply.call("update_plan", plan=PLAN).calls, input_tokens=50_000)

    def until_compacted(conversation: Conversation) -> Reply:
        # Over the limit, Codex compacts within the turn; the history it goes on with holds
        # the summary instead of the call, which must not be made again.
        return Reply(text="Done.") if SUMMARY in conversation.all_text() else heavy

    agent = Codex(
        pinned_binary("codex"), sandbox, model(by_prompt({"Plan the parser": [until_compacted]}))
    )
    agent.prepare(settings=(COMPACTING,))
    agent.install_hooks()
    agent.run("Plan the parser")

    compacted = [r for r in agent.model.requests if SUMMARY_REQUEST in r.conversation.all_text()]
    assert compacted, "Codex did not compact"
    after = agent.model.requests[-1].conversation
    assert SUMMARY_REQUEST not in after.prompts()[-1]
    assert after.count(PLAN_TEXT) == 1, after.all_text()[-3000:]


def test_a_resume_that_compacts_first_gets_the_plan_once(
    sandbox: Sandbox, model: Callable[[Script], ScriptedModel]
) -> None:
    # Codex compacts a resumed thread over its limit before the turn: SessionStart fires for
    # the resume, then for the compaction, before either context is written.
    turns = {
        "Plan the parser": [
            Reply.call("update_plan", plan=PLAN),
            Reply(text="Planned.", input_tokens=50_000),
        ],
        "Go on": [Reply(text="Going on.")],
    }
    agent = Codex(pinned_binary("codex"), sandbox, model(by_prompt(turns)))
    agent.prepare(settings=(COMPACTING,))
    agent.install_hooks()
    first = agent.run("Plan the parser")
    agent.run("Go on", resume=first.thread_id)

    assert any(SUMMARY_REQUEST in r.conversation.all_text() for r in agent.model.requests)
    after = agent.model.requests[-1].conversation
    assert after.prompts()[-1] == "Go on"
    assert after.count(PLAN_TEXT) == 1, after.all_text()[-3000:]


def test_mcp_calls_land_once_in_the_codex_session(codex: CodexFactory) -> None:
    two = [{**PLAN[0]}, {**PLAN[1], "status": "in_progress"}]
    agent = codex(
        script(
            **{
                "Use the ledger": [
                    Reply.call("mcp__planledger__update_plan", plan=PLAN),
                    Reply.call("mcp__planledger__update_plan", plan=two),
                    Reply(text="Used."),
                ]
            }
        ),
        mcp=True,
    )
    run = agent.run("Use the ledger")
    session = f"codex-{run.thread_id}"

    assert list(agent.sandbox.sessions()) == [session]  # no mcp-<time> session besides
    entries = history(agent, session)
    assert [e["kind"] for e in entries] == ["proposed", "committed", "proposed", "rejected"]
    calls = [c.id for c in agent.model.requests[-1].conversation.calls() if "planledger" in c.name]
    assert [e["proposal_id"] for e in entries[::2]] == calls
    # Codex shows its model only the structured content: the rejection's sentences are in it.
    told = agent.model.requests[-1].conversation.results()[-1]
    assert "multiple_in_progress" in told.text and "Fix every violation" in told.text, told
    again = agent.sandbox.planledger_json("import", "codex", str(agent.home / "sessions"))
    assert all(s["committed"] + s["rejected"] == 0 for s in again["sessions"]), again


def test_import_of_the_rollouts_agrees_with_the_hooks(codex: CodexFactory) -> None:
    agent = codex(script(**{"Go on": [Reply.call("update_plan", plan=LONG), Reply(text="No.")]}))
    first = agent.run("Plan the parser")
    agent.run("Go on", resume=first.thread_id)
    session = f"codex-{first.thread_id}"
    recorded = history(agent, session)

    sessions = str(agent.home / "sessions")
    again = agent.sandbox.planledger_json("import", "codex", sessions)
    assert again["errors"] == [] and sum(s["committed"] for s in again["sessions"]) == 0
    assert history(agent, session) == recorded

    fresh = Sandbox(agent.sandbox.root / "fresh").make()
    alone = fresh.planledger_json("import", "codex", sessions)
    # The denied call is skipped by the import (Codex never applied it); the hooks recorded
    # it as rejected: the committed plans agree.
    assert [(s["committed"], s["rejected"], s["skipped"]) for s in alone["sessions"]] == [(1, 0, 1)]
    assert fresh.plan(session)["steps"] == agent.sandbox.plan(session)["steps"]
