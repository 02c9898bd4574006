"""Gemini CLI 0.61.0 with the ledger's hooks (installed as the README says), headless against
the scripted model: what the ledger records, and what Gemini sends the model next."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from tests.agents.conftest import pinned_binary
from tests.agents.gemini import Gemini, add_mcp_server
from tests.agents.model.conversation import Reply
from tests.agents.model.scripts import by_prompt
from tests.agents.model.server import Script, ScriptedModel
from tests.agents.rig import Sandbox
from tests.e2e.acp_editor import Editor, connect, initialize, prompt

GeminiFactory = Callable[[Script], Gemini]

TODOS = [
    {"description": "Write the parser", "status": "in_progress"},
    {"description": "Test the parser", "status": "pending"},
]
PLAN = [Reply.call("write_todos", todos=TODOS), Reply(text="Planned.")]
PLAN_TEXT = "Current: Write the parser"  # only in the ledger's context, never in Gemini's own


@pytest.fixture
def gemini(sandbox: Sandbox, model: Callable[[Script], ScriptedModel]) -> GeminiFactory:
    """Gemini CLI with the ledger's hooks installed in the (trusted) project."""
    binary = pinned_binary("gemini")

    def make(script: Script) -> Gemini:
        agent = Gemini(binary, sandbox, model(script))
        agent.prepare()
        agent.install_hooks()
        return agent

    return make


def script(**turns: Any) -> Script:
    return by_prompt({"Plan the parser": PLAN, **turns}, deferred_tools=False)


def history(agent: Gemini, session: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = agent.sandbox.planledger_json("plan", "history", session)[
        "entries"
    ]
    return entries


def test_write_todos_is_recorded_and_gemini_runs_it(gemini: GeminiFactory) -> None:
    agent = gemini(script())
    run = agent.run("Plan the parser")
    session = f"gemini-{run.session_id}"

    plan = agent.sandbox.plan(session)
    assert [(s["title"], s["status"]) for s in plan["steps"]] == [
        ("Write the parser", "in_progress"),
        ("Test the parser", "pending"),
    ]
    assert agent.sandbox.sessions()[session]["source"] == "gemini"
    told = agent.model.requests[-1].conversation.results()[-1]
    assert not told.is_error and "1. [in_progress] Write the parser" in told.text, told
    # The proposal is named by the model turn that made the call (its id in the recording).
    proposed = [e for e in history(agent, session) if e["kind"] == "proposed"]
    assert len(proposed) == 1 and proposed[0]["proposal_id"].endswith("-0"), proposed


def test_an_invalid_list_is_denied_and_the_model_reads_every_code(gemini: GeminiFactory) -> None:
    # Gemini refuses two in_progress items itself ("Invalid parameters: Only one task can be
    # "in_progress" at a time.") before any hook runs; a step past 500 characters it lets through.
    long = [TODOS[0], {"description": "x" * 501, "status": "pending"}]
    agent = gemini(script(**{"Plan badly": [Reply.call("write_todos", todos=long)]}))
    run = agent.run("Plan badly")
    session = f"gemini-{run.session_id}"

    told = agent.model.requests[-1].conversation.results()[-1]
    assert told.name == "write_todos" and told.is_error, told
    assert "[too_long]" in told.text and "call write_todos again" in told.text, told
    assert history(agent, session)[-1]["kind"] == "rejected"
    assert agent.sandbox.plan(session)["revision"] == 0


def test_a_blocked_item_gemini_accepts_is_never_denied(gemini: GeminiFactory) -> None:
    todos = [TODOS[0], {"description": "Test the parser", "status": "blocked"}]
    agent = gemini(script(**{"Plan with a wait": [Reply.call("write_todos", todos=todos)]}))
    run = agent.run("Plan with a wait")
    session = f"gemini-{run.session_id}"

    told = agent.model.requests[-1].conversation.results()[-1]
    assert not told.is_error and "[blocked] Test the parser" in told.text, told
    plan = agent.sandbox.plan(session)
    assert [s["status"] for s in plan["steps"]] == ["in_progress", "blocked"]  # kept as sent
    assert [e["kind"] for e in history(agent, session)] == ["proposed", "committed"]


def test_a_resume_puts_the_plan_back_once(gemini: GeminiFactory) -> None:
    agent = gemini(script(**{"Go on": [Reply(text="Going on.")]}))
    agent.run("Plan the parser")
    agent.run("Go on", "--resume", "latest")

    after = agent.model.requests[-1].conversation
    assert "Go on" in after.prompts()
    # Gemini 0.61 fires PreCompress before every turn: that is no compression, no second copy.
    assert after.count(PLAN_TEXT) == 1, after.all_text()[-3000:]


def test_compress_given_with_the_resume_runs_and_the_plan_comes_back_once(
    gemini: GeminiFactory,
) -> None:
    agent = gemini(script(**{"Go on": [Reply(text="Going on.")]}))
    agent.run("Plan the parser")
    before = len(agent.model.requests)
    run = agent.run("/compress", "--resume", "latest")

    compressing = [r for r in agent.model.requests[before:] if not r.conversation.tools]
    # (failed once in a loaded full run, not since: what Gemini said is kept for next time)
    assert compressing, ("the slash command did not run", run.stdout[-2000:], run.stderr[-2000:])
    assert all("/compress" not in p for r in compressing for p in r.conversation.prompts()[:2])
    agent.run("Go on", "--resume", "latest")
    after = agent.model.requests[-1].conversation
    assert "Summary of the conversation so far" in after.all_text()
    assert after.count(PLAN_TEXT) == 1, after.all_text()[-3000:]


def test_mcp_calls_land_in_the_gemini_session(gemini: GeminiFactory) -> None:
    plan = [{"step": "Write the parser", "status": "in_progress"}]
    agent = gemini(
        script(**{"Use the ledger": [Reply.call("mcp_planledger_update_plan", plan=plan)]})
    )
    add_mcp_server(agent)
    run = agent.run("Use the ledger")

    told = agent.model.requests[-1].conversation.results()[-1]
    session = f"gemini-{run.session_id}"
    assert not told.is_error and f"session {session}" in told.text, told
    assert list(agent.sandbox.sessions()) == [session]  # no mcp-<time> session besides
    assert agent.sandbox.plan(session)["steps"][0]["status"] == "in_progress"


def test_an_mcp_rejection_reaches_the_model_with_its_codes(gemini: GeminiFactory) -> None:
    plan = [{"step": "A", "status": "in_progress"}, {"step": "B", "status": "in_progress"}]
    agent = gemini(
        script(**{"Use the ledger": [Reply.call("mcp_planledger_update_plan", plan=plan)]})
    )
    add_mcp_server(agent)
    agent.run("Use the ledger")

    told = agent.model.requests[-1].conversation.results()[-1]
    # Gemini 0.61 hands the model every MCP tool error as its own JSON dump of the whole result
    # ("MCP tool 'update_plan' reported tool error ... with response: [...]"): the ledger's
    # text leads it, each violation a sentence after its code.
    assert told.is_error and "reported tool error" in told.text, told
    assert "- multiple_in_progress: 2 steps are in_progress" in told.text, told


def test_a_subagent_s_list_is_its_own_and_the_main_plan_stays(gemini: GeminiFactory) -> None:
    # Gemini fires a subagent's BeforeTool with the main session's id and recording.
    own = [{"description": "Read the grammar", "status": "in_progress"}]
    agent = gemini(
        script(
            **{
                "Delegate": [
                    Reply.call("invoke_agent", agent_name="generalist", prompt="SUBTASK grammar"),
                    Reply(text="Delegated."),
                ],
                "SUBTASK grammar": [
                    Reply.call("write_todos", todos=own),
                    Reply.call("complete_task", result="Read it."),
                ],
            }
        )
    )
    main = agent.run("Plan the parser")
    agent.run("Delegate", "--resume", "latest")

    session = f"gemini-{main.session_id}"
    assert [s["title"] for s in agent.sandbox.plan(session)["steps"]] == [
        "Write the parser",
        "Test the parser",
    ]
    sessions = agent.sandbox.sessions()
    [subagent] = [row for row in sessions.values() if row["parent_session_id"] == session]
    assert [s["title"] for s in agent.sandbox.plan(subagent["session_id"])["steps"]] == [
        "Read the grammar"
    ]
    # The recordings alone give the same sessions and plans, each call under the same id.
    fresh = Sandbox(agent.sandbox.root / "fresh").make()
    fresh.planledger_json("import", "gemini", str(agent.config / "tmp"))
    assert {k: v["parent_session_id"] for k, v in fresh.sessions().items()} == {
        k: v["parent_session_id"] for k, v in sessions.items()
    }
    for name in sessions:
        assert history_of(fresh, name) and [e["proposal_id"] for e in history_of(fresh, name)] == [
            e["proposal_id"] for e in history(agent, name)
        ]


def test_import_of_the_recordings_agrees_with_the_hooks(gemini: GeminiFactory) -> None:
    blocked = [TODOS[0], {"description": "Test the parser", "status": "blocked"}]
    long = [TODOS[0], {"description": "x" * 501, "status": "pending"}]
    turns = [Reply.call("write_todos", todos=blocked), Reply.call("write_todos", todos=long)]
    agent = gemini(script(**{"Go on": turns}))
    first = agent.run("Plan the parser")
    agent.run("Go on", "--resume", "latest")
    session = f"gemini-{first.session_id}"
    recorded = history(agent, session)
    assert [e["kind"] for e in recorded] == ["proposed", "committed"] * 2 + ["proposed", "rejected"]

    again = agent.sandbox.planledger_json("import", "gemini", str(agent.config / "tmp"))
    assert again["errors"] == []
    assert [
        (s["session_id"], s["calls"], s["committed"], s["rejected"]) for s in again["sessions"]
    ] == [(session, 3, 0, 0)]
    assert history(agent, session) == recorded  # nothing recorded twice

    # Into a ledger of its own, the import alone records the same calls under the same ids.
    fresh = Sandbox(agent.sandbox.root / "fresh").make()
    alone = fresh.planledger_json("import", "gemini", str(agent.config / "tmp"))
    assert [(s["committed"], s["rejected"]) for s in alone["sessions"]] == [(2, 1)]
    ids = [e["proposal_id"] for e in recorded if e["kind"] == "proposed"]
    assert [e["proposal_id"] for e in history_of(fresh, session) if e["kind"] == "proposed"] == ids


def history_of(sandbox: Sandbox, session: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = sandbox.planledger_json("plan", "history", session)["entries"]
    return entries


def test_behind_the_acp_proxy_the_plan_is_read_from_gemini_s_recording(
    gemini: GeminiFactory,
) -> None:
    # Gemini 0.61 in ACP mode sends no plan updates and runs no hooks; its write_todos calls
    # reach the editor as "Set 2 todo(s)" only. The proxy reads them from the chat recording.
    done = [{**TODOS[0], "status": "completed"}, {**TODOS[1], "status": "in_progress"}]
    long = [{"description": "x" * 501, "status": "in_progress"}]
    turns = [Reply.call("write_todos", todos=done), Reply.call("write_todos", todos=long)]
    agent = gemini(script(**{"Go on": [*turns, Reply(text="Done.")]}))
    editor, acp_session = asyncio.run(asyncio.wait_for(editor_session(agent), 120))
    session = f"gemini-{acp_session}"

    assert [e["kind"] for e in history(agent, session)] == [
        *("proposed", "committed") * 2,
        *("proposed", "rejected"),
    ]
    assert agent.sandbox.sessions()[session]["source"] == "acp-proxy"
    # The editor got each committed plan right after the call that made it, and nothing for
    # the one the ledger refused.
    plans = [[(e["content"], e["status"]) for e in plan] for plan in editor.plans(acp_session)]
    assert plans == [
        [("Write the parser", "in_progress"), ("Test the parser", "pending")],
        [("Write the parser", "completed"), ("Test the parser", "in_progress")],
    ]
    kinds = [u["sessionUpdate"] for u in editor.updates(acp_session)]
    first_call_done = kinds.index("tool_call_update")
    assert kinds[first_call_done + 1] == "plan", kinds

    again = agent.sandbox.planledger_json("import", "gemini", str(agent.config / "tmp"))
    assert [(s["session_id"], s["committed"], s["skipped"]) for s in again["sessions"]] == [
        (session, 0, 3)
    ]


async def editor_session(agent: Gemini) -> tuple[Editor, str]:
    """An editor's session with Gemini through the proxy: two prompts, each answered."""
    command, *args = agent.acp_command()
    async with connect(command, *args, env=agent.env()) as (conn, _, editor):
        await initialize(conn)
        session = await conn.new_session(cwd=str(agent.sandbox.project), mcp_servers=[])
        for text in ("Plan the parser", "Go on"):
            answer = await prompt(conn, session.session_id, text)
            assert answer.stop_reason == "end_turn"
    return editor, session.session_id
