"""The web page of `planledger serve`: server-rendered HTML, one small script, the JSON API and
the SSE stream. Everything it loads is served from this package, so it works offline."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from planledger.clients.web.routes import STATIC_PREFIX, router

STATIC_DIR = Path(__file__).parent / "static"


def install(app: FastAPI) -> None:
    """Add the pages (`/ui`, `/ui/sessions/{id}`) and their assets (`/ui/static/...`)."""
    app.include_router(router)
    app.mount(STATIC_PREFIX, StaticFiles(directory=STATIC_DIR), name="ui-static")
