"""`planledger serve`: the spec's HTTP API over the service, with live events over SSE.

Every route calls the service and nothing else; errors become `{"error": {...}}` through the
error kind. The API, /docs (served offline), /openapi.json and the web page sit behind the
token when one is set; /healthz never does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool

from planledger.clients.http.bodies import Health
from planledger.clients.http.checkpointing import Checkpointing
from planledger.clients.http.errors import ErrorBody, install_error_handlers
from planledger.clients.http.guards import BodyLimit, TokenGuard
from planledger.clients.http.routes import audit, events, goals, plans, sessions
from planledger.clients.http.unavailable import install_storage_errors
from planledger.service import PlanLedger

MAX_BODY_BYTES = 256 * 1024  # a plan is at most 100 steps of 500 characters


def create_app(
    open_service: Callable[[], PlanLedger],
    token: str | None = None,
    checkpoints: Checkpointing | None = None,
) -> FastAPI:
    """The HTTP application; `open_service` is called once, when the server starts.
    `checkpoints`: sign a checkpoint of the store that often (GET /checkpoint serves it)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = await run_in_threadpool(open_service)
        service.follow_files()  # plan.json files follow every writer, off the request path
        app.state.service = service
        periodic = asyncio.create_task(checkpoints.run(service)) if checkpoints else None
        try:
            yield
        finally:
            if periodic is not None:
                periodic.cancel()
            await run_in_threadpool(service.close)

    app = FastAPI(
        title="plan ledger",
        version=_version(),
        description="A durable, event-sourced ledger for the execution plans of AI coding agents.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        responses={401: {"model": ErrorBody}, 413: {"model": ErrorBody}, 422: {"model": ErrorBody}},
    )
    app.state.token = token
    for router in (sessions.router, plans.router, goals.router, events.router, audit.router):
        app.include_router(router)
    from planledger.clients.web import install as install_web_page  # web imports http's parts

    install_web_page(app)
    install_error_handlers(app, MAX_BODY_BYTES)
    install_storage_errors(app)
    _install_docs(app, secured=token is not None)

    @app.get("/healthz", response_model=Health, responses={503: {"model": Health}})
    async def healthz(request: Request) -> Any:
        """ok while the database answers and the live feed follows it; else 503 saying why."""
        service: PlanLedger = request.app.state.service
        health = await run_in_threadpool(service.health)
        status = 503 if health.error else 200
        body = Health(
            status="unavailable" if health.error else "degraded" if health.warnings else "ok",
            store_position=health.store_position,
            error=health.error,
            warnings=list(health.warnings) or None,
        )
        return JSONResponse(body.model_dump(exclude_none=True), status_code=status)

    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)
    app.add_middleware(TokenGuard, token=token)
    return app


def _install_docs(app: FastAPI, secured: bool) -> None:
    """/openapi.json (declaring the bearer scheme) and /docs with Swagger UI's assets served
    from the installed swagger-ui-bundle, so the docs work offline."""
    import swagger_ui_bundle  # type: ignore[import-untyped]

    app.mount("/docs/assets", StaticFiles(directory=swagger_ui_bundle.swagger_ui_path), "docs")

    @app.get("/openapi.json", include_in_schema=False)
    def openapi() -> JSONResponse:
        schema = app.openapi()
        components = schema.setdefault("components", {})
        components.setdefault("securitySchemes", {})["bearer"] = {
            "type": "http",
            "scheme": "bearer",
            "description": "PLANLEDGER_TOKEN or a named token (`planledger tokens add`), when "
            "the server requires one",
        }
        schema["security"] = [{"bearer": []}] if secured else [{}, {"bearer": []}]
        return JSONResponse(schema)

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="plan ledger API",
            swagger_js_url="/docs/assets/swagger-ui-bundle.js",
            swagger_css_url="/docs/assets/swagger-ui.css",
            swagger_favicon_url="/docs/assets/favicon-32x32.png",
        )


def _version() -> str:
    from importlib.metadata import version

    return version("plan-ledger")
