"""The terminal UI's source on a running `planledger serve`: its JSON API and its SSE stream."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx

from domain.errors import ErrorKind, LedgerError, RevisionNotFound, SessionNotFound
from planledger.clients.tui.source import Loaded
from planledger.clients.tui.sse import feed_event, parse_events
from planledger.service import FeedEvent
from planledger.service.results import SessionView
from projections.shapes import History, PlanView

TIMEOUT = httpx.Timeout(10.0, read=45.0)  # the server pings an idle stream every 15 s


class ServerUnavailable(LedgerError):
    kind = ErrorKind.UNAVAILABLE
    code = "server_unavailable"


class ServerRefused(LedgerError):
    kind = ErrorKind.INVALID
    code = "server_refused"


class ServerCorrupt(LedgerError):
    kind = ErrorKind.CORRUPT
    code = "corrupt_history"


class HttpSource:
    """Reads a session from a server: history, session and current plan once, a plan at an
    earlier revision when asked, and new events from `GET /sessions/{id}/events`."""

    def __init__(
        self,
        base_url: str,
        session_id: str,
        token: str | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.session_id = session_id
        self.label = self.base_url
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(
            base_url=self.base_url, headers=self._headers, timeout=TIMEOUT, transport=transport
        )
        self._path = f"/sessions/{session_id}"

    def load(self) -> Loaded:
        # The store position first: every event after it comes through `follow`, every event
        # before it is in the history read next (the overlap is dropped by entry position).
        cursor = int(self._get("/healthz", ok=(200, 503)).get("store_position", 0))
        session = self.session()
        history = History.model_validate(self._get(f"{self._path}/plan/history"))
        current = PlanView.model_validate(self._get(f"{self._path}/plan"))
        plans = {current.revision: current} if current.revision else {}
        return Loaded(session=session, entries=history.entries, plans=plans, cursor=cursor)

    def session(self) -> SessionView:
        return SessionView.model_validate(self._get(self._path))

    def plan_at(self, revision: int) -> PlanView:
        return PlanView.model_validate(self._get(f"{self._path}/plan", revision=revision))

    async def follow(self, after: int) -> AsyncIterator[FeedEvent]:
        headers = {**self._headers, "Accept": "text/event-stream", "Last-Event-ID": str(after)}
        url = f"{self.base_url}{self._path}/events"
        try:
            async with (
                httpx.AsyncClient(timeout=TIMEOUT) as client,
                client.stream("GET", url, headers=headers) as response,
            ):
                if response.status_code != 200:
                    await response.aread()
                    raise self._error(response)
                async for message in parse_events(response.aiter_lines()):
                    if message.event.startswith("plan."):
                        yield feed_event(message)
        except httpx.HTTPError as error:
            raise ServerUnavailable(f"lost the event stream of {self.base_url}: {error}") from None
        raise ServerUnavailable(f"{self.base_url} closed the event stream")

    def close(self) -> None:
        self._client.close()

    def _get(self, path: str, ok: tuple[int, ...] = (200,), **params: Any) -> Any:
        try:
            response = self._client.get(path, params=params)
        except httpx.HTTPError as error:
            raise ServerUnavailable(f"cannot reach {self.base_url}: {error}") from None
        if response.status_code not in ok:
            raise self._error(response)
        return response.json()

    def _error(self, response: httpx.Response) -> LedgerError:
        """The server's `{"error": {"code", "message"}}` as the error the service would raise."""
        try:
            error = response.json()["error"]
            code, message = str(error["code"]), str(error["message"])
        except (ValueError, KeyError, TypeError):
            code, message = "http_error", response.text[:200]
        where = f"{self.base_url} answered {response.status_code}"
        if code == "session_not_found":
            return SessionNotFound(self.session_id)
        if code == "revision_not_found":
            return RevisionNotFound(message)
        if code == "corrupt_history":
            return ServerCorrupt(message)
        if response.status_code == 401:
            return ServerRefused(f"{where}: {message} (set PLANLEDGER_TOKEN)")
        if response.status_code >= 500:
            return ServerUnavailable(f"{where}: {message}")
        return ServerRefused(f"{where}: {code}: {message}")
