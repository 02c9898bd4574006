"""OpenCode 1.18.33 with the ledger's plugin (installed as the README says), headless against the
scripted model (Chat Completions): what the ledger records, and what OpenCode tells the model."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from tests.agents.conftest import pinned_binary
from tests.agents.model.conversation import Conversation, Reply
from tests.agents.model.scripts import SUMMARY, by_prompt
from tests.agents.model.server import Script, ScriptedModel
from tests.agents.opencode import OpenCode
from tests.agents.rig import Sandbox
from tests.e2e.acp_editor import Editor, connect, initialize, prompt

OpenCodeFactory = Callable[[Script], OpenCode]

TODOS = [
    {"content": "Write the parser", "status": "in_progress", "priority": "high"},
    {"content": "Test the parser", "status": "pending", "priority": "medium"},
]
TWO_ACTIVE = [TODOS[0], {**TODOS[1], "status": "in_progress"}]
PLAN_TEXT = "Current: Write the parser"  # only in the ledger's context, never in OpenCode's own


@pytest.fixture
def opencode(sandbox: Sandbox, model: Callable[[Script], ScriptedModel]) -> OpenCodeFactory:
    binary = pinned_binary("opencode")

    def make(script: Script) -> OpenCode:
        agent = OpenCode(binary, sandbox, model(script))
        agent.prepare()
        agent.install_plugin()
        return agent

    return make


def script(**turns: Any) -> Script:
    plan = [Reply.call("todowrite", todos=TODOS), Reply(text="Planned.")]
    return by_prompt({"Plan the parser": plan, **turns}, deferred_tools=False)


def history(sandbox: Sandbox, session: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = sandbox.planledger_json("plan", "history", session)["entries"]
    return entries


def test_todowrite_is_recorded_under_its_call_id(opencode: OpenCodeFactory) -> None:
    agent = opencode(script())
    run = agent.run("Plan the parser")
    session = f"opencode-{run.session_id}"

    [part] = run.tool_parts("todowrite")
    assert part["state"]["status"] == "completed"
    entries = history(agent.sandbox, session)
    assert [(e["kind"], e["proposal_id"]) for e in entries] == [
        ("proposed", part["callID"]),
        ("committed", part["callID"]),
    ]
    steps = agent.sandbox.plan(session)["steps"]
    assert [(s["title"], s["status"]) for s in steps] == [
        ("Write the parser", "in_progress"),
        ("Test the parser", "pending"),
    ]
    assert agent.sandbox.sessions()[session]["source"] == "opencode"


def test_a_refused_list_fails_the_call_and_the_model_reads_why(opencode: OpenCodeFactory) -> None:
    agent = opencode(script(**{"Plan badly": [Reply.call("todowrite", todos=TWO_ACTIVE)]}))
    run = agent.run("Plan badly")
    session = f"opencode-{run.session_id}"

    [part] = run.tool_parts("todowrite")
    assert part["state"]["status"] == "error"
    told = agent.model.requests[-1].conversation.results()[-1]
    assert "[multiple_in_progress]" in told.text and "call todowrite again" in told.text, told
    assert [e["kind"] for e in history(agent.sandbox, session)] == ["proposed", "rejected"]
    assert agent.sandbox.plan(session)["revision"] == 0


def test_a_list_opencode_refuses_itself_is_never_recorded(opencode: OpenCodeFactory) -> None:
    no_priority = [{"content": "Write the parser", "status": "in_progress"}]
    agent = opencode(script(**{"Forget": [Reply.call("todowrite", todos=no_priority)]}))
    run = agent.run("Forget")

    [part] = run.tool_parts("todowrite")
    assert part["state"]["status"] == "error"
    assert f"opencode-{run.session_id}" not in agent.sandbox.sessions()


def test_after_a_compaction_the_plan_reaches_the_model_once(
    sandbox: Sandbox, model: Callable[[Script], ScriptedModel]
) -> None:
    heavy = Reply(calls=Reply.call("todowrite", todos=TODOS).calls, input_tokens=9_000)

    def until_compacted(conversation: Conversation) -> Reply:
        return Reply(text="Done.") if SUMMARY in conversation.all_text() else heavy

    scripted = by_prompt({"Plan the parser": [until_compacted]}, deferred_tools=False)
    agent = OpenCode(pinned_binary("opencode"), sandbox, model(scripted))
    agent.prepare(limit={"context": 10_000, "output": 1_000})
    agent.install_plugin()
    agent.run("Plan the parser")

    summarised = [r for r in agent.model.requests if PLAN_TEXT in r.conversation.all_text()]
    assert summarised, "no request after the compaction holds the plan"
    after = agent.model.requests[-1].conversation
    assert SUMMARY in after.all_text(), "OpenCode did not compact"
    assert after.count(PLAN_TEXT) == 1, after.all_text()[-3000:]


def test_import_of_the_database_agrees_with_the_plugin(opencode: OpenCodeFactory) -> None:
    done = [{**TODOS[0], "status": "completed"}, {**TODOS[1], "status": "in_progress"}]
    agent = opencode(
        script(
            **{
                "Go on": [
                    Reply.call("todowrite", todos=TWO_ACTIVE),
                    Reply.call("todowrite", todos=done),
                ]
            }
        )
    )
    first = agent.run("Plan the parser")
    agent.run("Go on", "--session", first.session_id)
    session = f"opencode-{first.session_id}"
    recorded = history(agent.sandbox, session)
    assert [e["kind"] for e in recorded] == [
        *("proposed", "committed"),
        *("proposed", "rejected"),
        *("proposed", "committed"),
    ]

    again = agent.sandbox.planledger_json("import", "opencode", str(agent.database))
    assert again["errors"] == []
    assert [(s["session_id"], s["committed"], s["skipped"]) for s in again["sessions"]] == [
        (session, 0, 3)
    ]
    assert history(agent.sandbox, session) == recorded

    fresh = Sandbox(agent.sandbox.root / "fresh").make()
    alone = fresh.planledger_json("import", "opencode", str(agent.database.parent))
    assert [(s["committed"], s["skipped"]) for s in alone["sessions"]] == [(2, 1)]
    assert fresh.plan(session)["steps"] == agent.sandbox.plan(session)["steps"]


def test_behind_the_acp_proxy_the_relayed_todo_calls_are_recorded(
    sandbox: Sandbox, model: Callable[[Script], ScriptedModel]
) -> None:
    # `opencode acp` sends no plan updates; its todowrite tool calls carry the list. Without the
    # plugin, the proxy records them in the plugin's session, under the same ids.
    agent = OpenCode(pinned_binary("opencode"), sandbox, model(script()))
    agent.prepare()
    editor, acp_session = asyncio.run(asyncio.wait_for(editor_session(agent), 120))
    session = f"opencode-{acp_session}"

    assert [e["kind"] for e in history(sandbox, session)] == ["proposed", "committed"]
    plans = [[(e["content"], e["status"]) for e in plan] for plan in editor.plans(acp_session)]
    assert plans == [[("Write the parser", "in_progress"), ("Test the parser", "pending")]]


async def editor_session(agent: OpenCode) -> tuple[Editor, str]:
    from tests.e2e.test_cli import planledger_command

    command = [planledger_command(), "acp", "--", str(agent.binary), "acp"]
    async with connect(*command, env=agent.env()) as (conn, _, editor):
        await initialize(conn)
        session = await conn.new_session(cwd=str(agent.sandbox.project), mcp_servers=[])
        answer = await prompt(conn, session.session_id, "Plan the parser")
        assert answer.stop_reason == "end_turn"
    return editor, session.session_id
