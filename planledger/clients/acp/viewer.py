"""`planledger acp`: ledger sessions served to an ACP editor (replayed, live, time travel).

`session/load` replays a session's history before it answers (a message per commit naming its
revision and transitions, followed by that revision's plan; a message per rejection naming its
violation codes), then pushes every new commit by any writer while the session stays loaded.
`session/prompt` takes `show`, `history`, `revision N`, `verify` or a JSON plan payload.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any, ParamSpec, TypeVar, cast

from acp import (
    PROTOCOL_VERSION,
    Agent,
    Client,
    RequestError,
    run_agent,
    update_agent_message_text,
)
from acp.schema import (
    AgentCapabilities,
    AgentPlanUpdate,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
)

from domain.errors import ErrorKind, LedgerError
from domain.models import Step
from domain.session_fields import plain_cwd
from planledger.clients.acp import messages
from planledger.clients.acp.errors import request_error
from planledger.clients.acp.priorities import PriorityBook
from planledger.clients.acp.stdio import stdio_streams
from planledger.service import FeedEvent, PlanLedger
from planledger.storage.file_paths import resolved_url
from projections.acp import plan_update
from projections.shapes import HistoryEntry

P = ParamSpec("P")
T = TypeVar("T")
REVISION_COMMAND = re.compile(r"^revision\s+(\d{1,9})$", re.IGNORECASE)
ANSWERED_IN_TURN = frozenset(
    {ErrorKind.INVALID, ErrorKind.NOT_FOUND, ErrorKind.EXISTS, ErrorKind.REJECTED}
)
FOLLOW_RETRY_SECONDS = 1.0
SOURCE = "acp"
PAGE_SIZE = 50  # sessions a `session/list` page holds


def package_version() -> str:
    try:
        return version("plan-ledger")
    except PackageNotFoundError:
        return "0"


def _page_start(cursor: str | None) -> int:
    """Where a page starts: the `nextCursor` a page gave (an offset), else the first."""
    if cursor is None:
        return 0
    if not cursor.isdigit() or len(cursor) > 9:
        raise RequestError.invalid_params({"cursor": "not a cursor this agent gave"})
    return int(cursor)


def new_session_id() -> str:
    """`acp-<UTC yyyymmddThhmmss>-<6 hex>`."""
    return f"acp-{datetime.now(UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"


class LedgerViewer:
    """The ACP agent side of the viewer: every call goes through the service layer."""

    def __init__(self, service: PlanLedger, priorities: PriorityBook) -> None:
        self.service = service
        self.priorities = priorities
        self._conn: Client | None = None
        self._followers: dict[str, asyncio.Task[None]] = {}
        self._shown: dict[str, int] = {}  # store position of the last commit sent per session
        self._sending: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    # -- service calls, off the event loop, errors mapped once ------------------------------

    async def _call(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await asyncio.to_thread(function, *args, **kwargs)
        except LedgerError as error:
            raise request_error(error) from None

    # -- ACP methods ------------------------------------------------------------------------

    async def initialize(self, protocol_version: int, **_: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            agent_info=Implementation(
                name="planledger", title="Plan ledger", version=package_version()
            ),
        )

    async def new_session(self, cwd: str, **_: Any) -> NewSessionResponse:
        session_id = new_session_id()
        await self._call(self.service.open_session, session_id, source=SOURCE, cwd=plain_cwd(cwd))
        self._start_following(session_id, 0)
        return NewSessionResponse(session_id=session_id)

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **_: Any
    ) -> ListSessionsResponse:
        """The ledger's sessions, most recently active first, a page at a time (`cursor` is
        where the page starts); `cwd` keeps the sessions recorded in that directory."""
        start = _page_start(cursor)
        listed = (await self._call(self.service.sessions)).sessions
        if cwd is not None:
            listed = [item for item in listed if item.cwd == cwd]
        page = listed[start : start + PAGE_SIZE]
        here = os.getcwd()
        end = start + len(page)
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=item.session_id,
                    cwd=item.cwd or here,
                    title=item.title,
                    updated_at=item.updated_at.isoformat().replace("+00:00", "Z"),
                )
                for item in page
            ],
            next_cursor=str(end) if end < len(listed) else None,
        )

    async def load_session(self, cwd: str, session_id: str, **_: Any) -> LoadSessionResponse:
        await self._call(self.service.plan, session_id)  # not_found / corrupt as JSON-RPC errors
        self._stop_following(session_id)
        position = await self._replay(session_id)
        self._start_following(session_id, position)
        return LoadSessionResponse()

    async def prompt(self, session_id: str, prompt: Sequence[Any], **_: Any) -> PromptResponse:
        await self._call(self.service.plan, session_id)
        text = "".join(getattr(block, "text", "") for block in prompt).strip()
        try:
            await self._answer(session_id, text)
        except LedgerError as error:
            if error.kind not in ANSWERED_IN_TURN:
                raise request_error(error) from None
            await self._say(session_id, f"error: {error}")
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **_: Any) -> None:
        """Every turn answers at once: there is nothing to cancel."""

    async def close(self) -> None:
        for session_id in list(self._followers):
            self._stop_following(session_id)

    # -- replay and live follow -------------------------------------------------------------

    async def _replay(self, session_id: str) -> int:
        """Send the whole history in order; the store position reached."""
        position = 0
        while True:
            events = await self._call(self.service.events_after, position, session_id)
            if not events:
                return position
            for event in events:
                await self._send_history(session_id, event)
                position = event.store_position

    async def _send_history(self, session_id: str, event: FeedEvent) -> None:
        if event.kind == "committed":
            await self._say(session_id, messages.commit_text(event.entry))
            if event.plan is not None:
                await self._send_plan(session_id, event.plan.steps, event.entry.proposal_id)
        elif event.kind == "rejected":
            await self._say(session_id, messages.rejection_text(event.entry))

    def _start_following(self, session_id: str, after: int) -> None:
        self._followers[session_id] = asyncio.create_task(
            self._follow(session_id, after), name=f"acp-follow-{session_id}"
        )

    def _stop_following(self, session_id: str) -> None:
        task = self._followers.pop(session_id, None)
        if task is not None:
            task.cancel()

    async def _follow(self, session_id: str, after: int) -> None:
        """Push every new commit of the session as a plan update, until stopped."""
        while True:
            try:
                async for event in self.service.follow(session_id, after):
                    after = event.store_position
                    if event.kind != "committed" or event.plan is None:
                        continue
                    async with self._sending[session_id]:
                        if after <= self._shown.get(session_id, 0):
                            continue  # already sent by this connection's own prompt
                        await self._send_plan(session_id, event.plan.steps, event.entry.proposal_id)
                        self._shown[session_id] = after
            except ConnectionError:
                return  # the editor went away
            except Exception as error:
                print(f"planledger acp: following {session_id}: {error}", file=sys.stderr)
                await asyncio.sleep(FOLLOW_RETRY_SECONDS)

    # -- prompts ----------------------------------------------------------------------------

    async def _answer(self, session_id: str, text: str) -> None:
        command = text.lower()
        if text.startswith(("{", "[")):
            await self._submit(session_id, text)
        elif command == "show":
            view = await asyncio.to_thread(self.service.plan, session_id)
            await self._say(session_id, messages.plan_text(view))
            await self._send_plan(session_id, view.steps, await self._proposal_of(session_id))
        elif command == "history":
            history = await asyncio.to_thread(self.service.history, session_id)
            await self._say(session_id, messages.history_text(history.entries))
        elif command == "verify":
            report = await asyncio.to_thread(self.service.verify, [session_id])
            await self._say(session_id, messages.verify_text(report))
        elif match := REVISION_COMMAND.match(text):
            await self._time_travel(session_id, int(match.group(1)))
        else:
            await self._say(session_id, messages.HELP)

    async def _submit(self, session_id: str, text: str) -> None:
        try:
            payload = json.loads(text)
        except json.JSONDecodeError as error:
            await self._say(session_id, f"error: the plan is not JSON: {error}")
            return
        async with self._sending[session_id]:  # the live feed waits, then skips this commit
            decision = await asyncio.to_thread(
                self.service.submit, session_id, payload, client="acp"
            )
            await self._say(session_id, messages.decision_text(decision))
            if decision.status != "committed":
                return
            view = await asyncio.to_thread(self.service.plan, session_id, decision.revision)
            await self._send_plan(session_id, view.steps, decision.proposal_id)
            if decision.store_position is not None:
                shown = self._shown.get(session_id, 0)
                self._shown[session_id] = max(shown, decision.store_position)

    async def _time_travel(self, session_id: str, revision: int) -> None:
        view = await asyncio.to_thread(self.service.plan, session_id, revision)
        latest = await asyncio.to_thread(self.service.plan, session_id)
        await self._say(session_id, messages.plan_text(view, of_revisions=latest.revision))
        await self._send_plan(session_id, view.steps, await self._proposal_of(session_id, revision))

    async def _proposal_of(self, session_id: str, revision: int | None = None) -> str | None:
        """The proposal committed as `revision` (the latest commit when None)."""
        history = await asyncio.to_thread(self.service.history, session_id)
        commits: list[HistoryEntry] = [e for e in history.entries if e.kind == "committed"]
        for entry in reversed(commits):
            if revision is None or entry.revision == revision:
                return entry.proposal_id
        return None

    # -- sending ----------------------------------------------------------------------------

    def _client(self) -> Client:
        if self._conn is None:
            raise ConnectionError("no editor connected")
        return self._conn

    async def _say(self, session_id: str, text: str) -> None:
        await self._client().session_update(
            session_id=session_id, update=update_agent_message_text(text)
        )

    async def _send_plan(
        self, session_id: str, steps: Sequence[Step], proposal_id: str | None
    ) -> None:
        priorities = (
            await asyncio.to_thread(self.priorities.lookup, session_id, proposal_id)
            if proposal_id
            else {}
        )
        update = AgentPlanUpdate.model_validate(plan_update(steps, priorities))
        await self._client().session_update(session_id=session_id, update=update)


async def serve_viewer(service: PlanLedger) -> None:
    """Serve the viewer on stdin/stdout until the editor closes the connection."""
    viewer = LedgerViewer(service, PriorityBook(service.home, resolved_url(service.database)))
    try:
        editor_in, editor_out = await stdio_streams()
        await run_agent(cast(Agent, viewer), editor_out, editor_in)
    finally:
        await viewer.close()
