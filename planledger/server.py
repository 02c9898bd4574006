"""`planledger serve`: the HTTP API of the spec, with live plan events as server-sent events.

Writes go through the ledger; reads come from the projections, which a runner thread keeps up
to date (woken by LISTEN/NOTIFY on PostgreSQL). A POST that commits answers only once its own
commit is visible in the views, so a client reads its writes on any later GET.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field, field_validator
from sse_starlette.sse import EventSourceResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from domain.errors import (
    CorruptHistory,
    GoalExists,
    GoalNotFound,
    IllegalTransition,
    InvalidId,
    LedgerError,
    RevisionNotFound,
    SessionExists,
    SessionNotFound,
)
from domain.ids import ID_PATTERN
from domain.session import Mode
from planledger.ledger import Contention, InvalidInput, Ledger
from planledger.settings import DatabaseSettings
from projections.compaction import CompactionSnapshot
from projections.runner import ProjectionHalted, ProjectionRunner
from projections.shapes import Decision, GoalView, History, PlanView, SessionView

MAX_BODY_BYTES = 256 * 1024  # a plan is at most 100 steps of 500 characters
ID_REGEX = ID_PATTERN.pattern.replace("\\Z", "$")

SessionId = Annotated[
    str, PathParam(pattern=ID_REGEX, max_length=128, description="The session id.")
]
GoalId = Annotated[str, PathParam(pattern=ID_REGEX, max_length=128)]

STATUS_OF: list[tuple[type[Exception], int]] = [
    (SessionNotFound, 404),
    (GoalNotFound, 404),
    (RevisionNotFound, 404),
    (SessionExists, 409),
    (GoalExists, 409),
    (IllegalTransition, 409),
    (Contention, 503),
    (InvalidId, 422),
    (InvalidInput, 422),
    (CorruptHistory, 500),
    (ProjectionHalted, 500),
]


class ErrorBody(BaseModel):
    error: str


class OpenSessionBody(BaseModel):
    session_id: str = Field(pattern=ID_REGEX, max_length=128)
    mode: Literal["work", "plan"] = "work"


class ModeBody(BaseModel):
    mode: Literal["work", "plan"]


class StartGoalBody(BaseModel):
    goal_id: str = Field(pattern=ID_REGEX, max_length=128)
    objective: str = Field(min_length=1, max_length=2000, pattern=r"\S")

    @field_validator("objective")
    @classmethod
    def not_blank(cls, objective: str) -> str:
        # The ledger's own test (str.strip) also counts e.g. U+001C as blank.
        if not objective.strip():
            raise ValueError("a goal needs a non-blank objective")
        return objective


class ValidationErrorBody(BaseModel):
    detail: list[dict[str, Any]]


class CommittedBody(Decision):
    status: Literal["committed"]
    plan: PlanView


class RejectedBody(Decision):
    status: Literal["rejected"]


class ConflictBody(Decision):
    status: Literal["conflict"]


class Health(BaseModel):
    status: Literal["ok", "halted"]
    position: int
    error: str | None = None


class PositionFeed:
    """Hands the runner's progress (a thread) to waiting SSE streams (the event loop)."""

    def __init__(self, position: int) -> None:
        self.position = position
        self._changed = asyncio.Event()

    def publish(self, position: int) -> None:
        self.position = position
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_past(self, position: int, timeout: float) -> None:
        if self.position > position:
            return
        with suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)


class BodyLimit:
    """Refuse request bodies over `limit` bytes (413), declared or streamed."""

    def __init__(self, app: Callable[..., Awaitable[None]], limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await too_large(self.limit)(scope, receive, send)
            return
        seen = 0

        async def limited_receive() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        try:
            await self.app(scope, limited_receive, send)
        except BodyTooLarge:
            await too_large(self.limit)(scope, receive, send)


class BodyTooLarge(HTTPException):
    """Raised while the body is read; an HTTPException, so FastAPI passes it on (not a 400)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413)
        self.limit = limit


def too_large(limit: int) -> JSONResponse:
    return JSONResponse({"error": f"request body larger than {limit} bytes"}, status_code=413)


def create_app(
    database: DatabaseSettings, token: str | None = None, home: Path | None = None
) -> FastAPI:
    """The HTTP application: one ledger, one projection runner following the event store."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        ledger = Ledger(database)
        # The views runner writes no files: a POST waits for the views, not for plan.json,
        # which a second thread brings up to the views after every advance.
        runner = ProjectionRunner(database, ledger.mapper)
        files = ProjectionRunner(database, ledger.mapper, home=home) if home else None
        feed = PositionFeed(runner.position)
        loop = asyncio.get_running_loop()
        runner.on_advance.append(lambda p: loop.call_soon_threadsafe(feed.publish, p))
        stop, advanced = threading.Event(), threading.Event()
        runner.on_advance.append(lambda _: advanced.set())
        app.state.ledger, app.state.runner, app.state.feed = ledger, runner, feed
        app.state.follower_error = None
        threads = [
            threading.Thread(
                target=follow, args=(runner, stop, app.state), name="views", daemon=True
            )
        ]
        if files is not None:
            threads.append(
                threading.Thread(
                    target=write_files, args=(files, stop, advanced), name="plan-json", daemon=True
                )
            )
        for thread in threads:
            thread.start()
        try:
            yield
        finally:
            stop.set()
            advanced.set()
            for thread in threads:
                await run_in_threadpool(thread.join, 5)
            for closing in (runner, files, ledger):
                if closing is not None:
                    closing.close()

    async def require_token(authorization: Annotated[str | None, Header()] = None) -> None:
        # async: no I/O, so no hop to the thread pool on every request
        if token is None:
            return
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.encode(), token.encode()):
            raise Unauthorized

    app = FastAPI(
        title="plan ledger",
        version="0.1.0",
        description="A durable, event-sourced ledger for the execution plans of AI coding agents.",
        lifespan=lifespan,
        responses={401: {"model": ErrorBody}, 413: {"model": ErrorBody}},
    )
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)
    guarded = [Depends(require_token)]

    @app.exception_handler(Unauthorized)
    async def unauthorized(_: Request, __: Exception) -> JSONResponse:
        return JSONResponse(
            {"error": "missing or wrong bearer token"},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )

    @app.exception_handler(BodyTooLarge)
    async def body_too_large(_: Request, error: Exception) -> JSONResponse:
        return too_large(error.limit if isinstance(error, BodyTooLarge) else MAX_BODY_BYTES)

    @app.exception_handler(LedgerError)
    async def ledger_error(_: Request, error: Exception) -> JSONResponse:
        status = next((code for kind, code in STATUS_OF if isinstance(error, kind)), 400)
        return JSONResponse({"error": str(error)}, status_code=status)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, error: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": jsonable_errors(error)}, status_code=422)

    def ledger_of(request: Request) -> Ledger:
        ledger: Ledger = request.app.state.ledger
        return ledger

    def runner_of(request: Request) -> ProjectionRunner:
        runner: ProjectionRunner = request.app.state.runner
        return runner

    not_found = {404: {"model": ErrorBody}}

    @app.get(
        "/healthz",
        response_model=Health,
        response_model_exclude_none=True,
        responses={503: {"model": Health}},
    )
    async def healthz(request: Request) -> Health | JSONResponse:
        """ok while the projection runner follows the event store; 503 once it has stopped."""
        position = runner_of(request).position
        stopped: str | None = request.app.state.follower_error
        if stopped is not None:
            halted = Health(status="halted", position=position, error=stopped)
            return JSONResponse(halted.model_dump(), status_code=503)
        return Health(status="ok", position=position)

    @app.post(
        "/sessions",
        status_code=201,
        response_model=SessionView,
        dependencies=guarded,
        responses={409: {"model": ErrorBody}},
    )
    def open_session(request: Request, body: OpenSessionBody) -> SessionView:
        return ledger_of(request).open_session(body.session_id, Mode(body.mode))

    @app.get(
        "/sessions/{session_id}",
        response_model=SessionView,
        dependencies=guarded,
        responses=not_found,
    )
    def show_session(request: Request, session_id: SessionId) -> SessionView:
        return ledger_of(request).session(session_id)

    @app.put(
        "/sessions/{session_id}/mode",
        response_model=SessionView,
        dependencies=guarded,
        responses=not_found,
    )
    def set_mode(request: Request, session_id: SessionId, body: ModeBody) -> SessionView:
        return ledger_of(request).set_mode(session_id, Mode(body.mode))

    @app.post(
        "/sessions/{session_id}/plan",
        response_model=CommittedBody,
        dependencies=guarded,
        responses={
            404: {"model": ErrorBody},
            409: {"model": ConflictBody, "description": "expected_revision was stale"},
            422: {
                "model": RejectedBody | ValidationErrorBody,
                "description": "rejected, with every violation "
                "(or a body that is not a JSON object)",
            },
        },
    )
    def propose_plan(request: Request, session_id: SessionId, body: dict[str, Any]) -> Response:
        """Propose a plan in either form (plan_update or update_plan), decided at once."""
        ledger, runner = ledger_of(request), runner_of(request)
        decision = ledger.submit(session_id, body, client="http")
        # Every decision (a rejection too) is in the views before the answer: read-your-writes.
        visible = decision.position is None or runner.wait_for(decision.position, 2.0)
        if decision.status == "committed":
            view = runner.store.plan_view(session_id) if visible else None
            if view is None or view.revision != decision.revision:
                # Not projected yet, or another writer has committed since: this commit's plan.
                view = ledger.plan(session_id, decision.revision)
            return model_response(CommittedBody(**decision.model_dump(), plan=view))
        status = 409 if decision.status == "conflict" else 422
        return JSONResponse(decision.model_dump(mode="json"), status_code=status)

    @app.get(
        "/sessions/{session_id}/plan",
        response_model=PlanView,
        dependencies=guarded,
        responses=not_found,
    )
    def show_plan(
        request: Request,
        session_id: SessionId,
        revision: Annotated[int | None, Query(ge=0, le=2**62)] = None,
    ) -> Response:
        if revision is not None:
            return model_response(ledger_of(request).plan(session_id, revision))
        view = runner_of(request).store.plan_view(session_id)
        if view is None:
            ledger_of(request).session(session_id)  # 404 when unknown
            view = ledger_of(request).plan(session_id)  # not projected yet
        return model_response(view)

    @app.get(
        "/sessions/{session_id}/plan/history",
        response_model=History,
        dependencies=guarded,
        responses=not_found,
    )
    def plan_history(request: Request, session_id: SessionId) -> JSONResponse:
        runner = runner_of(request)
        if runner.store.plan_view(session_id) is None:
            ledger_of(request).session(session_id)  # 404 when unknown
        history = History(session_id=session_id, entries=runner.store.history(session_id))
        return JSONResponse(history.as_json())

    @app.get(
        "/sessions/{session_id}/plan/compaction",
        response_model=CompactionSnapshot,
        dependencies=guarded,
        responses=not_found,
    )
    def plan_compaction(
        request: Request,
        session_id: SessionId,
        max_chars: Annotated[int, Query(ge=0, le=100_000)] = 2000,
    ) -> JSONResponse:
        snapshot = ledger_of(request).compaction(session_id, max_chars)
        return JSONResponse(snapshot.as_json())

    @app.post(
        "/sessions/{session_id}/goals",
        status_code=201,
        response_model=SessionView,
        dependencies=guarded,
        responses={**not_found, 409: {"model": ErrorBody}},
    )
    def start_goal(request: Request, session_id: SessionId, body: StartGoalBody) -> SessionView:
        return ledger_of(request).start_goal(session_id, body.goal_id, body.objective)

    @app.get(
        "/sessions/{session_id}/goals",
        response_model=list[GoalView],
        dependencies=guarded,
        responses=not_found,
    )
    def list_goals(request: Request, session_id: SessionId) -> list[GoalView]:
        return ledger_of(request).session(session_id).goals

    @app.post(
        "/sessions/{session_id}/goals/{goal_id}/{action}",
        response_model=SessionView,
        dependencies=guarded,
        responses={**not_found, 409: {"model": ErrorBody, "description": "illegal transition"}},
    )
    def move_goal(
        request: Request,
        session_id: SessionId,
        goal_id: GoalId,
        action: Literal["complete", "block", "resume", "cancel"],
    ) -> SessionView:
        return ledger_of(request).move_goal(session_id, goal_id, action)

    @app.get(
        "/sessions/{session_id}/events",
        dependencies=guarded,
        response_class=EventSourceResponse,
        responses={
            200: {
                "content": {"text/event-stream": {}},
                "description": "plan.proposed, plan.committed and plan.rejected events; "
                "each `id:` is the event's position, resume with Last-Event-ID",
            },
            **not_found,
        },
    )
    async def plan_events(
        request: Request,
        session_id: SessionId,
        last_event_id: Annotated[int | None, Header(ge=0, le=2**62)] = None,
        after: Annotated[int | None, Query(ge=0, le=2**62)] = None,
    ) -> EventSourceResponse:
        ledger, runner, feed = ledger_of(request), runner_of(request), request.app.state.feed
        await run_in_threadpool(ledger.session, session_id)  # 404 before streaming
        start = last_event_id if last_event_id is not None else (after or 0)
        return EventSourceResponse(
            stream_events(runner, feed, session_id, start), ping=15, send_timeout=30
        )

    return app


class Unauthorized(Exception):
    pass


def model_response(model: BaseModel, status_code: int = 200) -> Response:
    """Serialise in pydantic-core and return as is: the model is already validated, and a
    returned Response skips FastAPI's second validation pass (and its thread-pool hop)."""
    return Response(model.model_dump_json(), status_code=status_code, media_type="application/json")


def jsonable_errors(error: RequestValidationError) -> list[dict[str, Any]]:
    """FastAPI's validation errors, made JSON-safe (inputs can hold bytes or odd objects, and
    strings with lone surrogates, which cannot be encoded as UTF-8: they become "?")."""
    text = json.dumps(error.errors(), default=str, ensure_ascii=False)
    errors: list[dict[str, Any]] = json.loads(text.encode("utf-8", "replace").decode("utf-8"))
    return errors


async def stream_events(
    runner: ProjectionRunner, feed: PositionFeed, session_id: str, after: int
) -> AsyncIterator[dict[str, Any]]:
    """Every history entry of the session after `after`, in order, then live ones."""
    last = after
    while True:
        seen = feed.position
        rows = await run_in_threadpool(runner.store.history_after, session_id, last)
        for notification_id, entry, view in rows:
            data = {
                "session_id": session_id,
                **entry.model_dump(mode="json", by_alias=True, exclude_none=True),
            }
            if entry.transitions is not None:
                data["transitions"] = [
                    t.model_dump(mode="json", by_alias=True) for t in entry.transitions
                ]
            if view is not None:
                data["plan"] = view.model_dump(mode="json")
            data["id"] = notification_id
            yield {
                "id": str(notification_id),
                "event": f"plan.{entry.kind}",
                "data": json.dumps(data),
            }
            last = notification_id
        if not rows:
            await feed.wait_past(seen, timeout=15)


def write_files(files: ProjectionRunner, stop: threading.Event, advanced: threading.Event) -> None:
    """The plan.json thread: after every advance of the views, bring the files up to them."""
    while not stop.is_set():
        advanced.wait(timeout=1.0)
        advanced.clear()
        try:
            files.sync_files()
        except Exception as error:  # keep serving; the next advance tries again
            print(f"planledger serve: plan.json files not written: {error}", flush=True)


def follow(runner: ProjectionRunner, stop: threading.Event, state: Any) -> None:
    """The runner thread: follow the event store until stopped; why it stopped goes to health."""
    try:
        runner.run(stop, idle_timeout=0.5)
    except Exception as error:  # a halted projection, or a lost database
        state.follower_error = str(error)
        print(f"planledger serve: the read side stopped: {error}", flush=True)
