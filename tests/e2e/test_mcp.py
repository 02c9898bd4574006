"""`planledger mcp` as a subprocess, driven by the SDK's own stdio client."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult, ResourceUpdatedNotification, TextResourceContents

from tests.e2e.test_cli import Cli, planledger_command

pytestmark = pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")
DEFAULT_SESSION = re.compile(r"^mcp-\d{8}T\d{6}-[0-9a-f]{6}$")
CODEX_EXAMPLE = {
    "explanation": "optional",
    "plan": [
        {"step": "Locate the failure", "status": "completed"},
        {"step": "Fix and run the regression", "status": "in_progress"},
    ],
}
STRICT_EXAMPLE = {
    "expected_revision": 0,
    "title": "Implement session export",
    "goal_id": None,
    "steps": [
        {"id": "inspect", "title": "Inspect durable state", "status": "completed"},
        {"id": "implement", "title": "Implement archive writer", "status": "in_progress"},
    ],
}
SCENARIO_SECONDS = 90


class Server:
    """One `planledger mcp` process on one database, with the CLI beside it."""

    def __init__(self, home: Path, database: str) -> None:
        self.home = home
        self.database = database
        self.cli = Cli(home, database)
        self.stderr = home / "mcp-stderr.log"

    @asynccontextmanager
    async def connect(
        self, *args: str, on_message: Callable[[Any], Awaitable[None]] | None = None
    ) -> AsyncIterator[ClientSession]:
        params = StdioServerParameters(
            command=planledger_command(),
            args=["--database", self.database, "mcp", *args],
            env={"PLANLEDGER_HOME": str(self.home), "PATH": os.environ.get("PATH", "")},
        )
        self.home.mkdir(parents=True, exist_ok=True)
        with self.stderr.open("a") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write, message_handler=on_message) as session,
            ):
                await session.initialize()
                yield session
        assert "Traceback" not in self.stderr.read_text(), self.stderr.read_text()


@pytest.fixture
def server(tmp_path: Path, sqlite_url: str) -> Server:
    return Server(tmp_path / "home", sqlite_url)


@pytest.fixture
def any_server(tmp_path: Path, database_url: str) -> Server:
    return Server(tmp_path / "home", database_url)


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        with anyio.fail_after(SCENARIO_SECONDS):
            await scenario()

    anyio.run(bounded)


def text(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def committed(session: ClientSession, tool: str, arguments: dict[str, Any]) -> Any:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, text(result)
    data = result.structured_content
    assert data is not None and data["status"] == "committed"
    return data


async def refused(
    session: ClientSession, tool: str, arguments: dict[str, Any], *codes: str
) -> CallToolResult:
    """A tool error whose text names every code (the server stays up: the next call works)."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error, text(result)
    for code in codes:
        assert code in text(result), (code, text(result))
    if result.structured_content is not None:  # a recorded rejection: every code in the text
        for violation in result.structured_content["violations"]:
            assert f"- {violation['code']}" in text(result)
    return result


def codes_of(result: CallToolResult) -> list[str]:
    assert result.structured_content is not None, text(result)
    return sorted({v["code"] for v in result.structured_content["violations"]})


# -- schemas ----------------------------------------------------------------------------------


def test_tools_list_with_schemas_that_accept_the_spec_examples(server: Server) -> None:
    async def scenario() -> None:
        async with server.connect() as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) == {"update_plan", "plan_update", "read_plan", "plan_history"}
        for tool in tools.values():
            assert tool.description and len(tool.description) > 80
            assert tool.output_schema is not None and tool.output_schema["type"] == "object"
            jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        codex = jsonschema.Draft202012Validator(tools["update_plan"].input_schema)
        strict = jsonschema.Draft202012Validator(tools["plan_update"].input_schema)
        codex.validate(CODEX_EXAMPLE)
        codex.validate({**CODEX_EXAMPLE, "expected_revision": 3, "session_id": "s1"})
        strict.validate(STRICT_EXAMPLE)
        strict.validate({**STRICT_EXAMPLE, "session_id": "s1"})
        assert not codex.is_valid(STRICT_EXAMPLE)
        assert not strict.is_valid(CODEX_EXAMPLE)
        assert not strict.is_valid({**STRICT_EXAMPLE, "mode": "plan"})
        bad_status = {"title": "t", "steps": [{"id": "a", "title": "A", "status": "blocked"}]}
        assert not strict.is_valid(bad_status)
        for rule in ("in_progress", "completed", "revision", "step_removed", "mode"):
            assert rule in str(tools["plan_update"].description), rule
        assert "complete list" in str(tools["update_plan"].description)
        assert {"session_id", "revision"} == set(tools["read_plan"].input_schema["properties"])
        for name in ("update_plan", "plan_update"):
            write = tools[name].output_schema or {}
            assert {"status", "revision", "violations", "session_id", "plan"} <= set(
                write["properties"]
            )
            assert "cancelled" in str(tools["update_plan"].input_schema)

    run(scenario)


# -- the core flow, on SQLite and PostgreSQL ---------------------------------------------------


def test_core_flow_then_cli_history_shows_exactly_the_calls(any_server: Server) -> None:
    cli = any_server.cli
    assert cli("session", "open", "strict-one").returncode == 0
    assert cli("goal", "start", "strict-one", "export", "Ship export").returncode == 0
    expected: dict[str, list[tuple[str, list[str]]]] = {}  # session -> [(status, codes)]

    async def scenario() -> None:
        async with any_server.connect() as session:
            # The default session: opened by the server at start, named mcp-<UTC time>-<hex>.
            view = (await session.call_tool("read_plan", {})).structured_content
            assert view is not None
            default = view["session_id"]
            assert DEFAULT_SESSION.match(default), default
            assert view["revision"] == 0 and view["steps"] == [] and view["title"] is None
            calls = expected.setdefault(default, [])

            # Commit in the Codex form; the text is the plan as lines.
            data = await committed(session, "update_plan", CODEX_EXAMPLE)
            calls.append(("committed", []))
            assert data["revision"] == 1 and data["session_id"] == default
            assert [s["status"] for s in data["plan"]["steps"]] == ["completed", "in_progress"]
            result = await session.call_tool("update_plan", {**CODEX_EXAMPLE, "plan": []})
            assert not result.is_error and "revision 2" in text(result)
            calls.append(("committed", []))
            result = await session.call_tool("update_plan", CODEX_EXAMPLE)
            assert "[x] Locate the failure" in text(result)
            assert "[>] Fix and run the regression" in text(result)
            calls.append(("committed", []))

            # Several violations at once, each named by its code.
            several = {
                "plan": [
                    {"step": "One", "status": "in_progress"},
                    {"step": "Two", "status": "in_progress"},
                    {"step": "   ", "status": "pending"},
                    {"step": "Four", "status": "done"},
                    {"step": "x" * 501, "status": "pending"},
                ],
                "mode": "plan",
            }
            codes = [
                "multiple_in_progress",
                "blank_step_title",
                "invalid_status",
                "too_long",
                "mode_change_forbidden",
            ]
            result = await refused(session, "update_plan", several, *codes)
            assert codes_of(result) == sorted(codes)
            assert result.structured_content is not None
            assert result.structured_content["status"] == "rejected"
            assert result.structured_content["plan"]["revision"] == 3
            calls.append(("rejected", sorted(codes)))
            many = {"plan": [{"step": f"s{i}", "status": "pending"} for i in range(101)]}
            await refused(session, "update_plan", many, "too_many_steps")
            calls.append(("rejected", ["too_many_steps"]))
            strict_here = {"title": "T", "steps": [{"id": "a", "title": "A", "status": "pending"}]}
            result = await refused(session, "plan_update", strict_here, "policy_mismatch")
            calls.append(("rejected", codes_of(result)))

            # A stale expected_revision is a conflict; the plan stays where it was.
            result = await refused(
                session,
                "update_plan",
                {**CODEX_EXAMPLE, "expected_revision": 1},
                "revision_conflict",
            )
            assert result.structured_content is not None
            assert result.structured_content["status"] == "conflict"
            assert result.structured_content["current_revision"] == 3
            calls.append(("rejected", ["revision_conflict"]))
            await refused(
                session,
                "update_plan",
                {**CODEX_EXAMPLE, "expected_revision": 10**30},
                "revision_conflict",
            )
            calls.append(("rejected", ["revision_conflict"]))
            await committed(session, "update_plan", {**CODEX_EXAMPLE, "expected_revision": 3})
            calls.append(("committed", []))

            # Malformed arguments of each type: recorded as rejections, each code named.
            step = {"step": "a", "status": "pending"}
            recorded_malformed: list[tuple[dict[str, Any], str]] = [
                ({"plan": "do it all"}, "invalid_field"),
                ({"plan": [5]}, "invalid_field"),
                ({"plan": [{"step": 7, "status": "pending"}]}, "invalid_field"),
                ({"plan": [{"step": "a", "status": 3}]}, "invalid_status"),
                ({"plan": [{"step": "a", "status": None}]}, "missing_field"),
                ({"plan": [step], "expected_revision": "one"}, "invalid_field"),
                ({"plan": [step], "expected_revision": -1}, "invalid_field"),
                ({"plan": [step], "expected_revision": True}, "invalid_field"),
                ({"plan": [step], "expected_revision": 1.5}, "invalid_field"),
                ({"plan": [step], "explanation": ["why"]}, "invalid_field"),
                ({"plan": [step], "priority": "high"}, "unknown_field"),
                ({"plan": [{**step, "id": "x"}]}, "unknown_field"),
                ({"plan": [{"status": "pending"}]}, "blank_step_title"),
                ({"plan": [{"step": "\x00", "status": "pending"}]}, "invalid_text"),
            ]
            for arguments, code in recorded_malformed:
                result = await refused(session, "update_plan", arguments, code)
                calls.append(("rejected", codes_of(result)))

            # Calls that are not this tool's form, or bad tool arguments: refused, not recorded.
            await refused(session, "update_plan", {}, "missing_field")
            huge = {"plan": [{"step": "x" * 300_000, "status": "pending"}]}
            await refused(session, "update_plan", huge, "arguments_too_large")
            await refused(session, "update_plan", strict_here, "missing_field", "unknown_field")
            await refused(session, "plan_update", CODEX_EXAMPLE, "missing_field", "unknown_field")
            await refused(
                session, "update_plan", {**CODEX_EXAMPLE, "session_id": 5}, "invalid_field"
            )
            await refused(
                session, "update_plan", {**CODEX_EXAMPLE, "session_id": "../x"}, "invalid_id"
            )
            await refused(
                session,
                "update_plan",
                {**CODEX_EXAMPLE, "session_id": "never"},
                "session_not_found",
            )
            await refused(session, "read_plan", {"revision": "x"}, "invalid_field")
            await refused(session, "read_plan", {"revision": -1}, "invalid_field")
            await refused(session, "read_plan", {"revision": 99}, "revision_not_found")
            await refused(session, "read_plan", {"extra": 1}, "unknown_field")
            await refused(session, "read_plan", {"session_id": "never"}, "session_not_found")
            await refused(session, "plan_history", {"session_id": ["x"]}, "invalid_field")
            await refused(session, "plan_history", {"verbose": True}, "unknown_field")

            # The strict form, in a session the CLI opened (named by the call).
            strict_calls = expected.setdefault("strict-one", [])
            data = await committed(
                session, "plan_update", {**STRICT_EXAMPLE, "session_id": "strict-one"}
            )
            strict_calls.append(("committed", []))
            assert data["session_id"] == "strict-one" and data["plan"]["policy"] == "strict"
            assert data["plan"]["title"] == "Implement session export"
            reopen_and_drop = {
                "session_id": "strict-one",
                "title": " ",
                "goal_id": "nope",
                "steps": [
                    {"id": "inspect", "title": "Inspect", "status": "pending"},
                    {"id": "inspect", "title": "Again", "status": "cancelled"},
                    {"id": "bad id!", "title": "", "status": "pending"},
                ],
            }
            codes = [
                "blank_title",
                "unknown_goal",
                "duplicate_step_id",
                "invalid_step_id",
                "blank_step_title",
                "invalid_status",
                "step_removed",
                "completed_step_reopened",
                "no_step_in_progress",
            ]
            result = await refused(session, "plan_update", reopen_and_drop, *codes)
            strict_calls.append(("rejected", codes_of(result)))
            kept = STRICT_EXAMPLE["steps"]
            malformed_strict: list[tuple[dict[str, Any], str]] = [
                ({"title": 7, "steps": kept}, "invalid_field"),
                ({"title": "T", "steps": {"a": 1}}, "invalid_field"),
                ({"title": "T", "steps": kept, "goal_id": 5}, "invalid_field"),
                (
                    {"title": "T", "steps": kept, "collaboration_mode": "plan"},
                    "mode_change_forbidden",
                ),
                ({"title": "T", "steps": kept, "explanation": "x"}, "unknown_field"),
                ({"title": "T", "steps": [{**kept[0], "id": 5}, kept[1]]}, "invalid_field"),
            ]
            for arguments, code in malformed_strict:
                result = await refused(
                    session, "plan_update", {**arguments, "session_id": "strict-one"}, code
                )
                strict_calls.append(("rejected", codes_of(result)))
            done = {
                **STRICT_EXAMPLE,
                "expected_revision": 1,
                "goal_id": "export",
                "session_id": "strict-one",
                "steps": [{**s, "status": "completed"} for s in STRICT_EXAMPLE["steps"]],
            }
            await committed(session, "plan_update", done)
            strict_calls.append(("committed", []))

            # read_plan at a revision, and the history the tool reports.
            old = await session.call_tool("read_plan", {"session_id": default, "revision": 2})
            assert old.structured_content is not None and old.structured_content["steps"] == []
            histories = {}
            for sid in expected:
                result = await session.call_tool("plan_history", {"session_id": sid})
                assert not result.is_error and result.structured_content is not None
                histories[sid] = result.structured_content

        # The CLI shows exactly what the MCP calls did, and the same history the tool gave.
        for sid, calls in expected.items():
            history = cli.json("plan", "history", sid)
            assert history == histories[sid]
            entries = history["entries"]
            proposals = [e for e in entries if e["kind"] == "proposed"]
            decisions = [e for e in entries if e["kind"] != "proposed"]
            assert len(proposals) == len(decisions) == len(calls)
            assert all(e["client"] == "mcp" for e in proposals)
            for entry, (status, codes) in zip(decisions, calls, strict=True):
                assert entry["kind"] == status, (entry, status)
                assert sorted({v["code"] for v in entry.get("violations", [])}) == codes
            revisions = [e["revision"] for e in decisions if e["kind"] == "committed"]
            assert revisions == list(range(1, len(revisions) + 1))
        listed = {s["session_id"] for s in cli.json("session", "list")["sessions"]}
        assert listed == set(expected)
        shown = cli.json("plan", "show", "strict-one")
        assert shown["revision"] == 2 and shown["goal_id"] == "export"
        assert cli("verify").returncode == 0

    run(scenario)


# -- sessions -----------------------------------------------------------------------------------


def test_session_option_opens_a_missing_session_and_reuses_an_existing_one(server: Server) -> None:
    async def scenario() -> None:
        async with server.connect("--session", "work-1") as session:
            data = await committed(session, "update_plan", CODEX_EXAMPLE)
            assert data["session_id"] == "work-1"
            resources = [str(r.uri) for r in (await session.list_resources()).resources]
            assert resources == ["plan://work-1"]
        async with server.connect("--session", "work-1") as session:
            view = (await session.call_tool("read_plan", {})).structured_content
            assert view is not None and view["session_id"] == "work-1" and view["revision"] == 1
        listed = [s["session_id"] for s in server.cli.json("session", "list")["sessions"]]
        assert listed == ["work-1"]

    run(scenario)
    bad = server.cli("mcp", "--session", ".hidden")
    assert bad.returncode == 2 and "invalid session id" in bad.stderr


def test_read_plan_shows_a_task_lists_blockers_and_owners(server: Server) -> None:
    """A task list recorded by Claude Code's hooks, read by a model through MCP: the SDK's
    client validates the structured content against the tool's output schema."""
    server.cli.json("session", "open", "tasks")
    for payload in (
        {"op": "create", "title": "Write the test"},
        {"op": "create", "title": "Fix the bug"},
        {"op": "update", "id": "2", "add_blocked_by": ["1"], "owner": "sub-agent"},
    ):
        server.cli.json("plan", "update", "tasks", stdin=json.dumps(payload))

    async def scenario() -> None:
        async with server.connect() as session:
            read = await session.call_tool("read_plan", {"session_id": "tasks"})
            view = read.structured_content
            assert view is not None and view["policy"] == "tasks"
            assert view["steps"][1] == {
                "id": "2",
                "title": "Fix the bug",
                "status": "pending",
                "blocked_by": ["1"],
                "owner": "sub-agent",
            }
            assert "blocked by 1" in read.content[0].text  # what the model reads

    run(scenario)


# -- the resource and its live updates ----------------------------------------------------------


def test_resource_read_and_live_updates_from_the_cli_and_another_server(
    any_server: Server,
) -> None:
    cli = any_server.cli
    assert cli("session", "open", "watched").returncode == 0
    assert cli("session", "open", "other").returncode == 0
    updates: list[tuple[float, str]] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            updates.append((time.monotonic(), str(message.params.uri)))

    def cli_update(session_id: str, payload: dict[str, Any]) -> float:
        result = cli("plan", "update", session_id, stdin=json.dumps(payload))
        assert result.returncode == 0, result.stderr
        return time.monotonic()

    async def wait_for(count: int, deadline: float) -> None:
        while len(updates) < count and time.monotonic() < deadline:
            await anyio.sleep(0.02)

    async def scenario() -> None:
        async with any_server.connect(on_message=on_message) as session:
            templates = (await session.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["plan://{session_id}"]
            read = await session.read_resource("plan://watched")
            content = read.contents[0]
            assert isinstance(content, TextResourceContents)
            assert content.mime_type == "application/json"
            assert json.loads(content.text)["revision"] == 0
            with pytest.raises(Exception, match="session_not_found"):
                await session.read_resource("plan://never-opened")
            with pytest.raises(Exception, match="session_not_found"):
                await session.subscribe_resource("plan://never-opened")

            await session.subscribe_resource("plan://watched")
            for revision, writer in ((1, "cli"), (2, "another mcp server")):
                status = "in_progress" if revision == 1 else "completed"
                body = {"plan": [{"step": "Step", "status": status}]}
                if writer == "cli":
                    done = await anyio.to_thread.run_sync(cli_update, "watched", body)
                else:
                    async with any_server.connect("--session", "watched") as other:
                        await committed(other, "update_plan", body)
                        done = time.monotonic()
                await wait_for(revision, done + 1.0)
                assert len(updates) == revision, updates
                arrived, uri = updates[-1]
                assert uri == "plan://watched" and arrived - done < 1.0
                read = await session.read_resource("plan://watched")
                content = read.contents[0]
                assert isinstance(content, TextResourceContents)
                view = json.loads(content.text)
                assert view["revision"] == revision and view["steps"][0]["status"] == status

            # Another session's commit sends nothing; after unsubscribing, neither does ours.
            done = await anyio.to_thread.run_sync(
                cli_update, "other", {"plan": [{"step": "X", "status": "pending"}]}
            )
            await session.unsubscribe_resource("plan://watched")
            await anyio.to_thread.run_sync(
                cli_update, "watched", {"plan": [{"step": "Step", "status": "pending"}]}
            )
            await wait_for(3, time.monotonic() + 1.0)
            assert len(updates) == 2, updates

    run(scenario)


# -- the transport ----------------------------------------------------------------------------

BAD_LINES = {
    "this is not JSON": -32700,  # PARSE_ERROR
    '{"jsonrpc": "2.0", "id": 1, "method": ': -32700,  # cut short
    '{"hello": "world"}': -32600,  # INVALID_REQUEST: JSON, but not a JSON-RPC message
    "[1, 2]": -32600,
}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-test-client", "version": "0"},
    },
}


def test_lines_that_are_not_messages_get_json_rpc_errors_and_it_keeps_serving(
    tmp_path: Path, sqlite_url: str
) -> None:
    """Raw stdio, no SDK client: every bad line (before and after the handshake) is answered
    with a JSON-RPC 2.0 error whose id is null, in order, and the next request is served."""
    home = tmp_path / "home"
    home.mkdir()
    errors = home / "mcp-stderr.log"
    with errors.open("w") as errlog:
        process = subprocess.Popen(
            [planledger_command(), "--database", sqlite_url, "mcp", "--session", "s1"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
            text=True,
            env={"PLANLEDGER_HOME": str(home), "PATH": os.environ.get("PATH", "")},
        )
    assert process.stdin is not None and process.stdout is not None
    replies: queue.Queue[str] = queue.Queue()
    stdout = process.stdout
    threading.Thread(target=lambda: [replies.put(line) for line in stdout], daemon=True).start()

    def send(*lines: str) -> None:
        assert process.stdin is not None
        process.stdin.write("".join(f"{line}\n" for line in lines))
        process.stdin.flush()

    def reply() -> Any:
        try:
            return json.loads(replies.get(timeout=30))
        except queue.Empty:
            process.kill()
            pytest.fail(f"no reply within 30 s; stderr: {errors.read_text()[-2000:]}")

    def expect_errors(lines: dict[str, int]) -> None:
        for line, code in lines.items():
            answer = reply()
            assert answer["jsonrpc"] == "2.0" and answer["id"] is None, (line, answer)
            assert answer["error"]["code"] == code, (line, answer)
            assert answer["error"]["message"], (line, answer)

    try:
        send(*BAD_LINES, json.dumps(INITIALIZE))
        expect_errors(BAD_LINES)
        initialized = reply()
        assert initialized["id"] == 1, initialized
        assert initialized["result"]["serverInfo"]["name"] == "planledger", initialized
        send(
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            "still not JSON",
            json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        )
        expect_errors({"still not JSON": -32700})
        listed = reply()
        assert listed["id"] == 2, listed
        assert {tool["name"] for tool in listed["result"]["tools"]} >= {"update_plan", "read_plan"}
        assert process.poll() is None, "the server exited"
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    assert process.returncode == 0, errors.read_text()
    assert "Traceback" not in errors.read_text(), errors.read_text()
