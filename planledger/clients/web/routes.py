"""The web page's routes: the session list, one session, and the browser's token handoff."""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from domain.errors import CorruptHistory, ErrorKind, LedgerError
from planledger.clients.http.deps import service_of
from planledger.clients.http.guards import TOKEN_COOKIE
from planledger.clients.web import pages

STATIC_PREFIX = "/ui/static"
PAGE_HEADERS = {
    # Only this server's own script, styles and API: hostile text cannot load or run anything.
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}

router = APIRouter(include_in_schema=False)


@router.get("/ui")
def session_list(request: Request) -> Response:
    """Every session, newest first, each a link to its page (`?source=` keeps one source's,
    `?q=` those whose title or id holds the words)."""
    handoff = token_handoff(request)
    if handoff is not None:
        return handoff
    sessions = service_of(request).sessions()
    source = request.query_params.get("source") or None
    query = request.query_params.get("q") or None
    return page(pages.session_list_page(sessions, STATIC_PREFIX, source=source, query=query))


@router.get("/ui/sessions/{session_id}")
def session_page(request: Request, session_id: str) -> Response:
    """One session: the script renders its plan, history and slider, then follows it live."""
    handoff = token_handoff(request)
    if handoff is not None:
        return handoff
    service = service_of(request)
    # Read first: the history the script fetches next holds every event up to this position,
    # and the stream it opens from here brings every later one.
    after = service.store_position()
    try:
        view = service.session(session_id)
    except CorruptHistory as error:
        return page(pages.corrupt_page(error, STATIC_PREFIX), status_code=409)
    except LedgerError as error:
        if error.kind not in (ErrorKind.NOT_FOUND, ErrorKind.INVALID):
            raise
        return page(pages.not_found_page(session_id, STATIC_PREFIX), status_code=404)
    return page(pages.session_page(view, after, STATIC_PREFIX))


def page(html: str, status_code: int = 200) -> HTMLResponse:
    return HTMLResponse(html, status_code=status_code, headers=PAGE_HEADERS)


def token_handoff(request: Request) -> Response | None:
    """`?token=` with a token the guard let in (the server's, or a named one): keep it in an
    HttpOnly cookie (which the guard, the page's fetches and its EventSource then carry) and
    redirect to the address without it."""
    expected: str | None = getattr(request.state, "handoff_token", None)
    if expected is None:
        return None  # no token in the address, or the guard let it in by its cookie
    rest = [(key, value) for key, value in request.query_params.multi_items() if key != "token"]
    target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
    response = RedirectResponse(target, status_code=303, headers={"Cache-Control": "no-store"})
    response.set_cookie(TOKEN_COOKIE, expected, httponly=True, samesite="strict", path="/")
    return response
