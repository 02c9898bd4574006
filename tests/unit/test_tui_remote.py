"""The server source's reading of the API, on a mock transport: what it asks, and how each
error body becomes the error the service would have raised (and so the CLI's exit code)."""

from __future__ import annotations

import httpx
import pytest

from domain.errors import ErrorKind, LedgerError, RevisionNotFound, SessionNotFound
from planledger.clients.tui.remote import HttpSource
from tests.unit.tui_samples import entry, plan

SESSION = {"session_id": "s", "mode": "work", "goals": [], "should_continue": False}


def history() -> dict[str, object]:
    entries = [entry(2, "proposed"), entry(3, "committed", 1), entry(4, "committed", 2)]
    return {
        "session_id": "s",
        "entries": [e.model_dump(mode="json", by_alias=True) for e in entries],
    }


def serve(routes: dict[str, httpx.Response], seen: list[httpx.Request]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        key = request.url.path + (f"?{request.url.query.decode()}" if request.url.query else "")
        return routes.get(key, httpx.Response(500, text="no route"))

    return httpx.MockTransport(handle)


def error(status: int, code: str, message: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": message}})


def test_load_reads_the_position_first_then_the_session_history_and_current_plan() -> None:
    seen: list[httpx.Request] = []
    routes = {
        "/healthz": httpx.Response(503, json={"status": "degraded", "store_position": 41}),
        "/sessions/s": httpx.Response(200, json=SESSION),
        "/sessions/s/plan/history": httpx.Response(200, json=history()),
        "/sessions/s/plan": httpx.Response(
            200, json=plan(2, "in_progress").model_dump(mode="json")
        ),
        "/sessions/s/plan?revision=1": httpx.Response(
            200, json=plan(1, "pending").model_dump(mode="json")
        ),
    }
    source = HttpSource("http://ledger.test/", "s", token="tok", transport=serve(routes, seen))
    loaded = source.load()
    assert [r.url.path for r in seen] == [
        "/healthz",
        "/sessions/s",
        "/sessions/s/plan/history",
        "/sessions/s/plan",
    ]
    assert all(r.headers["authorization"] == "Bearer tok" for r in seen)
    assert loaded.cursor == 41 and [e.position for e in loaded.entries] == [2, 3, 4]
    assert loaded.plans == {2: plan(2, "in_progress")}
    assert source.plan_at(1) == plan(1, "pending")
    source.close()


@pytest.mark.parametrize(
    ("response", "kind", "kind_class", "text"),
    [
        (error(404, "session_not_found", "x"), ErrorKind.NOT_FOUND, SessionNotFound, "'s'"),
        (error(404, "revision_not_found", "no r9"), ErrorKind.NOT_FOUND, RevisionNotFound, "r9"),
        (error(409, "corrupt_history", "bad at 3"), ErrorKind.CORRUPT, LedgerError, "bad at 3"),
        (
            error(401, "unauthorized", "no token"),
            ErrorKind.INVALID,
            LedgerError,
            "PLANLEDGER_TOKEN",
        ),
        (error(503, "storage_unavailable", "db down"), ErrorKind.UNAVAILABLE, LedgerError, "down"),
        (httpx.Response(502, text="bad gateway"), ErrorKind.UNAVAILABLE, LedgerError, "502"),
    ],
)
def test_error_bodies_become_ledger_errors(
    response: httpx.Response, kind: ErrorKind, kind_class: type[LedgerError], text: str
) -> None:
    source = HttpSource("http://ledger.test", "s", transport=serve({"/sessions/s": response}, []))
    with pytest.raises(kind_class) as raised:
        source.session()
    assert raised.value.kind == kind and text in str(raised.value)


def test_an_unreachable_server_is_unavailable() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    source = HttpSource("http://ledger.test", "s", transport=httpx.MockTransport(refuse))
    with pytest.raises(LedgerError) as raised:
        source.load()
    assert raised.value.kind == ErrorKind.UNAVAILABLE
    assert "cannot reach http://ledger.test" in str(raised.value)
