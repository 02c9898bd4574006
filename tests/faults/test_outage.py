"""A PostgreSQL outage seen by a running server: the HTTP server and the MCP server answer
"storage unavailable" within seconds (a 503, a tool error), never leave a call waiting on a
pool, and the first call after the database is back succeeds, without a restart. The outage
is a TCP proxy in front of the shared PostgreSQL that resets every connection it relayed and
every new one (the real server keeps running for the other tests)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.e2e.test_mcp import Server as McpServer
from tests.e2e.test_mcp import run, text
from tests.faults.proxy import PostgresProxy, postgres_proxy
from tests.faults.support import codex, servers, wait_until

pytestmark = [pytest.mark.faults, pytest.mark.postgres]

UNAVAILABLE_BOUND = 6.0  # the spec: "a 503 within about 3 s"; twice that on a shared machine
PATIENCE = 60.0  # how long the test waits for an answer, so that a slow one is measured


def timed(call: Any, *args: Any, **kwargs: Any) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    answer = call(*args, **kwargs, timeout=PATIENCE)
    return answer, time.monotonic() - started


def assert_unavailable(response: httpx.Response, seconds: float) -> None:
    assert response.status_code == 503, f"{response.status_code}: {response.text}"
    body = response.json()
    assert set(body) == {"error"}, body
    assert body["error"]["code"] == "storage_unavailable", body
    assert body["error"]["message"], body
    assert seconds < UNAVAILABLE_BOUND, f"the 503 took {seconds:.1f}s"


@pytest.fixture
def proxy() -> Any:
    with postgres_proxy() as running:
        yield running


def test_http_answers_503_during_an_outage_and_heals_when_it_ends(
    postgres_url: str, proxy: PostgresProxy, tmp_path: Path
) -> None:
    with (
        servers(proxy.url(postgres_url), tmp_path) as (server,),
        server.client() as api,
    ):
        assert api.post("/sessions", json={"session_id": "s1"}).status_code == 201
        assert api.post("/sessions/s1/plan", json=codex(1)).status_code == 200
        proxy.go_down()
        unsure = []
        for n in (2, 3):  # the pools' connections are gone, then no new one can be made
            response, seconds = timed(api.post, "/sessions/s1/plan", json=codex(n))
            assert_unavailable(response, seconds)
            # A write's outcome is not known: the answer names the proposal id to retry with.
            assert "may or may not have been recorded" in response.json()["error"]["message"]
            unsure.append(response.json()["error"]["details"]["proposal_id"])
            response, seconds = timed(api.get, "/sessions/s1/plan")
            assert_unavailable(response, seconds)
        response, seconds = timed(api.post, "/sessions", json={"session_id": "s2"})
        assert_unavailable(response, seconds)
        health = api.get("/healthz")
        assert health.status_code == 503 and health.json()["status"] == "unavailable"

        proxy.come_back()
        response = api.post("/sessions/s1/plan", json=codex(4))
        assert response.status_code == 200, response.text
        assert response.json()["revision"] == 2, response.text  # nothing of the outage stored
        assert api.post("/sessions", json={"session_id": "s2"}).status_code == 201
        assert api.get("/sessions/s1/plan").json()["revision"] == 2
        retried = api.post("/sessions/s1/plan", json={**codex(2), "proposal_id": unsure[0]})
        assert (retried.status_code, retried.json()["proposal_id"]) == (200, unsure[0])
        again = api.post("/sessions/s1/plan", json={**codex(2), "proposal_id": unsure[0]})
        assert again.json()["revision"] == retried.json()["revision"] == 3  # recorded once

        def healthy() -> bool | None:  # the live feed's own connection comes back too
            return True if api.get("/healthz").status_code == 200 else None

        wait_until(healthy, 10.0, "/healthz back to 200")
    assert "Traceback" not in server.output(), server.output()[-3000:]


def test_mcp_tool_calls_are_tool_errors_during_an_outage_and_heal(
    postgres_url: str, proxy: PostgresProxy, tmp_path: Path
) -> None:
    server = McpServer(tmp_path / "home", proxy.url(postgres_url))

    async def scenario() -> None:
        async with server.connect("--session", "s1") as session:
            first = await session.call_tool("update_plan", codex(1))
            assert not first.is_error, text(first)
            proxy.go_down()
            for tool, arguments in (("update_plan", codex(2)), ("read_plan", {})):
                started = time.monotonic()
                with anyio.fail_after(PATIENCE):  # a call left waiting fails here
                    result = await session.call_tool(tool, arguments)
                seconds = time.monotonic() - started
                assert result.is_error, text(result)
                assert "storage_unavailable" in text(result), text(result)
                assert seconds < UNAVAILABLE_BOUND, f"{tool} took {seconds:.1f}s"
            proxy.come_back()
            healed = await session.call_tool("update_plan", codex(3))
            assert not healed.is_error, text(healed)
            assert healed.structured_content is not None
            assert healed.structured_content["revision"] == 2

    run(scenario)
