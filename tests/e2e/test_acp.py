"""`planledger acp` driven as an editor drives it, with the SDK's client side."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from planledger.service import PlanLedger, open_planledger
from tests.e2e.acp_editor import (
    connect,
    initialize,
    planledger_env,
    prompt,
    scripted_agent_command,
    wait_until,
)
from tests.e2e.test_cli import planledger_command

FIRST = {
    "plan": [
        {"step": "Locate the failure", "status": "in_progress"},
        {"step": "Fix it", "status": "pending"},
    ]
}
REJECTED = {
    "plan": [
        {"step": "Locate the failure", "status": "in_progress"},
        {"step": "Fix it", "status": "in_progress"},
    ]
}
SECOND = {
    "plan": [
        {"step": "Locate the failure", "status": "completed"},
        {"step": "Fix it", "status": "in_progress"},
        {"step": "Drop the workaround", "status": "cancelled"},
    ]
}


def entries(*items: tuple[str, str]) -> list[dict[str, str]]:
    return [{"content": c, "priority": "medium", "status": s} for c, s in items]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def ledger(sqlite_url: str, home: Path) -> Iterator[PlanLedger]:
    service = open_planledger(sqlite_url, home=home)
    yield service
    service.close()


def seeded(ledger: PlanLedger, session_id: str = "s1") -> str:
    """A session with two commits and a rejection between them."""
    ledger.open_session(session_id)
    for payload in (FIRST, REJECTED, SECOND):
        ledger.submit(session_id, payload, client="test")
    return session_id


def viewer(database: str, home: Path) -> Any:
    return connect(planledger_command(), "acp", env=planledger_env(home, database))


def proxy(database: str, home: Path, log: Path | None = None) -> Any:
    env = planledger_env(home, database) | ({"ACP_AGENT_LOG": str(log)} if log else {})
    return connect(planledger_command(), "acp", "--", *scripted_agent_command(), env=env)


def run(coroutine: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, 60))


# -- viewer -----------------------------------------------------------------------------------


def test_load_replays_the_history_in_order_before_answering(
    ledger: PlanLedger, sqlite_url: str, home: Path
) -> None:
    session_id = seeded(ledger)

    async def scenario() -> None:
        async with viewer(sqlite_url, home) as (conn, _, editor):
            init = await initialize(conn)
            assert init.agent_capabilities is not None
            assert init.agent_capabilities.load_session is True
            await conn.load_session(cwd="/", session_id=session_id)
            await wait_until(lambda: len(editor.updates(session_id)) >= 5)
            updates = editor.updates(session_id)
            assert [u["sessionUpdate"] for u in updates] == [
                "agent_message_chunk",
                "plan",
                "agent_message_chunk",
                "agent_message_chunk",
                "plan",
            ]
            texts = editor.texts(session_id)
            assert texts[0].startswith("revision 1 committed")
            assert "locate-the-failure: ∅ → in_progress" in texts[0]
            assert "rejected: multiple_in_progress" in texts[1]
            assert texts[2].startswith("revision 2 committed")
            assert "locate-the-failure: in_progress → completed" in texts[2]
            assert editor.plans(session_id) == [
                entries(("Locate the failure", "in_progress"), ("Fix it", "pending")),
                entries(("Locate the failure", "completed"), ("Fix it", "in_progress")),
            ]
            # The replay came before the answer to session/load.
            answer = next(
                i for i, m in enumerate(editor.received) if "result" in m and m["id"] == 1
            )
            last_update = max(
                i for i, m in enumerate(editor.received) if m.get("method") == "session/update"
            )
            assert last_update < answer

    run(scenario())


def test_the_sdk_client_lists_ledger_sessions_a_page_at_a_time(
    ledger: PlanLedger, sqlite_url: str, home: Path
) -> None:
    """`session/list`: most recently active first, with titles (the plan's title, else its
    step in progress), `nextCursor` pages, `cwd` filtering on the recorded directory."""
    ledger.open_session("strict", source="cli")
    ledger.submit(
        "strict",
        {
            "title": "Ship the export",
            "steps": [{"id": "a", "title": "Write it", "status": "in_progress"}],
        },
    )
    ledger.open_session("codex", cwd="/work/repo")
    ledger.submit("codex", FIRST)  # no title: its step in progress names it
    for n in range(55):
        ledger.open_session(f"bulk-{n:02d}", cwd="/work/other")
    ledger.open_session("latest", cwd="/work/repo")  # opened last: the most recently active

    async def scenario() -> None:
        async with viewer(sqlite_url, home) as (conn, _, _editor):
            init = await initialize(conn)
            capabilities = init.agent_capabilities.session_capabilities
            assert capabilities is not None and capabilities.list is not None
            listed, cursor, pages = [], None, 0
            while True:
                page = await conn.list_sessions(cursor=cursor)
                listed += page.sessions
                pages += 1
                if not page.next_cursor:
                    break
                cursor = page.next_cursor
            assert pages == 2
            ids = [s.session_id for s in listed]
            assert ids == [s.session_id for s in ledger.sessions().sessions]  # newest first
            assert ids[0] == "latest" and len(ids) == 58
            titles = {s.session_id: s.title for s in listed}
            assert titles["strict"] == "Ship the export"
            assert titles["codex"] == "Locate the failure"
            assert titles["latest"] is None
            where = {s.session_id: s.cwd for s in listed}
            assert where["codex"] == "/work/repo"
            assert where["strict"]  # none recorded: the viewer's own directory
            assert all(s.updated_at for s in listed)
            repo = await conn.list_sessions(cwd="/work/repo")
            assert [s.session_id for s in repo.sessions] == ["latest", "codex"]
            assert repo.next_cursor is None
            with pytest.raises(RequestError):
                await conn.list_sessions(cursor="not-a-cursor")

    run(scenario())


def test_a_commit_by_the_cli_in_another_process_shows_within_a_second(
    database_url: str, home: Path
) -> None:
    service = open_planledger(database_url, home=home)
    try:
        service.open_session("live")
        service.submit("live", FIRST)
    finally:
        service.close()

    async def scenario() -> None:
        async with viewer(database_url, home) as (conn, _, editor):
            await initialize(conn)
            await conn.load_session(cwd="/", session_id="live")
            await wait_until(lambda: len(editor.plans("live")) == 1)
            result = await asyncio.to_thread(
                subprocess.run,
                [planledger_command(), "--database", database_url, "plan", "update", "live"],
                input=json.dumps(SECOND),
                capture_output=True,
                text=True,
                env={**planledger_env(home, database_url)},
                timeout=60,
            )
            assert result.returncode == 0, result.stderr
            waited = await wait_until(lambda: len(editor.plans("live")) == 2, timeout=5)
            assert waited < 1.0
            assert editor.plans("live")[-1] == entries(
                ("Locate the failure", "completed"), ("Fix it", "in_progress")
            )

    run(scenario())


def test_prompts_show_history_time_travel_and_verify(
    ledger: PlanLedger, sqlite_url: str, home: Path
) -> None:
    session_id = seeded(ledger)

    async def scenario() -> None:
        async with viewer(sqlite_url, home) as (conn, _, editor):
            await initialize(conn)
            await conn.load_session(cwd="/", session_id=session_id)
            await wait_until(lambda: len(editor.plans(session_id)) == 2)

            answer = await prompt(conn, session_id, "revision 1")
            assert answer.stop_reason == "end_turn"
            await wait_until(lambda: len(editor.plans(session_id)) == 3)
            assert "revision 1 of 2" in editor.texts(session_id)[-1]
            assert editor.plans(session_id)[-1] == entries(
                ("Locate the failure", "in_progress"), ("Fix it", "pending")
            )

            await prompt(conn, session_id, "show")
            await wait_until(lambda: len(editor.plans(session_id)) == 4)
            assert "[>] Fix it" in editor.texts(session_id)[-1]
            assert editor.plans(session_id)[-1] == entries(
                ("Locate the failure", "completed"), ("Fix it", "in_progress")
            )

            await prompt(conn, session_id, "history")
            await wait_until(lambda: "multiple_in_progress" in editor.texts(session_id)[-1])
            assert editor.texts(session_id)[-1].count("committed") == 2

            await prompt(conn, session_id, "verify")
            await wait_until(lambda: editor.texts(session_id)[-1].startswith("ok: 1 session"))

            await prompt(conn, session_id, "revision 7")
            await wait_until(lambda: editor.texts(session_id)[-1].startswith("error:"))
            assert len(editor.plans(session_id)) == 4

    run(scenario())


def test_a_new_session_takes_a_payload_in_either_form(
    ledger: PlanLedger, sqlite_url: str, home: Path
) -> None:
    async def scenario() -> str:
        async with viewer(sqlite_url, home) as (conn, _, editor):
            await initialize(conn)
            session_id = (await conn.new_session(cwd="/")).session_id
            answer = await prompt(conn, session_id, json.dumps(SECOND))
            assert answer.stop_reason == "end_turn"
            await wait_until(lambda: len(editor.plans(session_id)) >= 1)
            assert editor.texts(session_id)[0] == "committed revision 1"
            assert editor.plans(session_id)[0] == entries(
                ("Locate the failure", "completed"), ("Fix it", "in_progress")
            )

            await prompt(conn, session_id, json.dumps(REJECTED))
            await wait_until(lambda: len(editor.texts(session_id)) == 2)
            assert "multiple_in_progress" in editor.texts(session_id)[1]
            await prompt(conn, session_id, "not json {")
            await wait_until(lambda: len(editor.texts(session_id)) == 3)
            assert "revision N" in editor.texts(session_id)[2]  # the help
            assert len(editor.plans(session_id)) == 1
            return session_id

    session_id = run(scenario())
    view = ledger.plan(session_id)
    assert view.revision == 1 and view.policy == "replace"
    assert [h.kind for h in ledger.history(session_id).entries] == [
        "proposed",
        "committed",
        "proposed",
        "rejected",
    ]


def test_an_unknown_session_is_a_jsonrpc_error_and_the_agent_keeps_serving(
    ledger: PlanLedger, sqlite_url: str, home: Path
) -> None:
    session_id = seeded(ledger)

    async def scenario() -> None:
        async with viewer(sqlite_url, home) as (conn, process, editor):
            await initialize(conn)
            with pytest.raises(RequestError) as unknown:
                await conn.load_session(cwd="/", session_id="no-such-session")
            assert unknown.value.data["code"] == "session_not_found"
            with pytest.raises(RequestError) as invalid:
                await conn.load_session(cwd="/", session_id="../bad id")
            assert invalid.value.data["kind"] == "invalid"
            with pytest.raises(RequestError):
                await prompt(conn, "no-such-session", "show")
            assert process.returncode is None
            await conn.load_session(cwd="/", session_id=session_id)
            await wait_until(lambda: len(editor.plans(session_id)) == 2)

    run(scenario())


# -- proxy ------------------------------------------------------------------------------------


async def editor_script(conn: Any, editor: Any) -> dict[str, Any]:
    """What an editor does with an agent; the answers it got."""
    answers: dict[str, Any] = {}
    await initialize(conn)
    session_id = (await conn.new_session(cwd="/")).session_id
    answers["plans"] = (await prompt(conn, session_id, "plans")).stop_reason
    answers["tools"] = (await prompt(conn, session_id, "tools")).stop_reason
    answers["ext"] = (await prompt(conn, session_id, "ext")).stop_reason
    answers["echo"] = await conn.ext_method("scripted/echo", {"n": 1})
    with pytest.raises(RequestError) as unknown:
        await conn.ext_method("vendor/unknown", {"n": 2})
    answers["unknown"] = unknown.value.code
    await conn.ext_notification("vendor/unknown", {"n": 3})
    waiting = asyncio.create_task(prompt(conn, session_id, "wait"))
    await wait_until(lambda: "waiting" in editor.texts(session_id))
    await conn.cancel(session_id=session_id)
    answers["wait"] = (await waiting).stop_reason
    return answers


def agent_log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def is_plan(message: dict[str, Any]) -> bool:
    update = message.get("params", {}).get("update", {}) if "method" in message else {}
    return isinstance(update, dict) and update.get("sessionUpdate") == "plan"


def test_the_proxy_relays_everything_but_rejected_plans_and_records_every_plan(
    ledger: PlanLedger, sqlite_url: str, home: Path, tmp_path: Path
) -> None:
    direct_log, proxied_log = tmp_path / "direct.jsonl", tmp_path / "proxied.jsonl"
    agent = scripted_agent_command()

    async def scenario() -> tuple[Any, Any, Any, Any, int | None]:
        env = {**planledger_env(home, sqlite_url), "ACP_AGENT_LOG": str(direct_log)}
        async with connect(*agent, env=env) as (conn, _, direct):
            direct_answers = await editor_script(conn, direct)
        async with proxy(sqlite_url, home, proxied_log) as (conn, process, proxied):
            proxied_answers = await editor_script(conn, proxied)
        return direct, direct_answers, proxied, proxied_answers, process.returncode

    direct, direct_answers, proxied, proxied_answers, status = run(scenario())
    assert status == 0
    assert proxied_answers == direct_answers
    assert direct_answers["unknown"] == -32601 and direct_answers["wait"] == "cancelled"
    # The agent received exactly what the editor sent, through the proxy as directly.
    assert agent_log(proxied_log) == agent_log(direct_log)
    methods = {m.get("method") for m in agent_log(direct_log)}
    assert {"session/cancel", "_vendor/unknown", "_scripted/echo"} <= methods
    # The editor received exactly the agent's traffic, less the rejected plan.
    direct_plans = [m for m in direct.received if is_plan(m)]
    assert len(direct_plans) == 3
    rejected_plan = direct_plans[1]
    assert proxied.received == [m for m in direct.received if m is not rejected_plan]
    kinds = {m.get("method") for m in direct.received}
    assert {"session/request_permission", "fs/read_text_file", "terminal/create"} <= kinds
    assert {"_scripted.dev/ask", "_scripted.dev/note"} <= kinds
    assert len(proxied.plans()) == 2  # each validated against the SDK's models
    assert proxied.plans()[0][0] == {
        "content": "Inspect the failing test",
        "priority": "high",
        "status": "in_progress",
    }
    # The ledger holds every plan.
    history = ledger.history("acp-scripted-1").entries
    assert [(h.kind, h.client) for h in history if h.kind == "proposed"] == [
        ("proposed", "acp-proxy")
    ] * 3
    assert [h.kind for h in history if h.kind != "proposed"] == [
        "committed",
        "rejected",
        "committed",
    ]
    rejection = next(h for h in history if h.kind == "rejected")
    assert [v.code for v in rejection.violations or []] == ["multiple_in_progress"]
    assert [s.title for s in ledger.plan("acp-scripted-1").steps] == [
        "Inspect the failing test",
        "Fix the parser",
        "Update the docs",
    ]


def test_reloading_a_proxied_session_leaves_its_history_as_it_was(
    ledger: PlanLedger, sqlite_url: str, home: Path
) -> None:
    """An agent answering `session/load` replays the plans it sent: the editor gets them as
    the agent sent them, and the ledger records nothing again."""

    async def scenario() -> list[Any]:
        async with proxy(sqlite_url, home) as (conn, _, editor):
            await initialize(conn)
            session_id = (await conn.new_session(cwd="/")).session_id
            await prompt(conn, session_id, "plans")
            before = len(editor.plans(session_id))
            await conn.load_session(cwd="/", session_id=session_id)
            await wait_until(lambda: len(editor.plans(session_id)) >= before + 3)
            await conn.load_session(cwd="/", session_id=session_id)  # and once more
            await wait_until(lambda: len(editor.plans(session_id)) >= before + 6)
            return editor.plans(session_id)[before:]

    replayed = run(scenario())
    history = ledger.history("acp-scripted-1").entries
    assert [h.kind for h in history] == [
        "proposed",
        "committed",
        "proposed",
        "rejected",
        "proposed",
        "committed",
    ]  # the three plans of the prompt, each once
    # relayed as the agent sent them (the invalid one included: it is the agent's replay)
    assert [[e["status"] for e in plan] for plan in replayed[:3]] == [
        ["in_progress", "pending", "pending"],
        ["in_progress", "in_progress"],
        ["completed", "in_progress", "pending"],
    ]
    assert replayed[3:] == replayed[:3]


def test_the_viewer_shows_the_priorities_the_proxy_recorded(
    ledger: PlanLedger, sqlite_url: str, home: Path
) -> None:
    async def scenario() -> list[list[dict[str, str]]]:
        async with proxy(sqlite_url, home) as (conn, _, _editor):
            await initialize(conn)
            session_id = (await conn.new_session(cwd="/")).session_id
            await prompt(conn, session_id, "plans")
        async with viewer(sqlite_url, home) as (conn, _, editor):
            await initialize(conn)
            await conn.load_session(cwd="/", session_id=f"acp-{session_id}")
            await wait_until(lambda: len(editor.plans()) == 2)
            return editor.plans()

    plans = run(scenario())
    assert [e["priority"] for e in plans[1]] == ["high", "medium", "low"]


@pytest.mark.parametrize(("script", "status"), [("exit 3", 3), ("crash", 137)])
def test_the_proxy_exits_with_the_agent_status(
    sqlite_url: str, home: Path, script: str, status: int
) -> None:
    async def scenario() -> int | None:
        async with proxy(sqlite_url, home) as (conn, process, _):
            await initialize(conn)
            session_id = (await conn.new_session(cwd="/")).session_id
            with pytest.raises(ConnectionError):
                await prompt(conn, session_id, script)
            started = time.monotonic()
            await asyncio.wait_for(process.wait(), 10)
            assert time.monotonic() - started < 10
        return process.returncode

    assert run(scenario()) == status


def test_with_the_ledger_unusable_the_proxy_fails_open(tmp_path: Path, home: Path) -> None:
    unusable = f"sqlite:///{tmp_path / 'a-file' / 'ledger.sqlite3'}"
    (tmp_path / "a-file").write_text("not a folder")

    async def scenario() -> tuple[list[list[dict[str, str]]], int | None]:
        async with proxy(unusable, home) as (conn, process, editor):
            await initialize(conn)
            session_id = (await conn.new_session(cwd="/")).session_id
            assert (await prompt(conn, session_id, "plans")).stop_reason == "end_turn"
            await wait_until(lambda: len(editor.plans()) == 3)
        return editor.plans(), process.returncode

    plans, status = run(scenario())
    assert status == 0
    assert [e["status"] for e in plans[1]] == ["in_progress", "in_progress"]  # unrecorded
