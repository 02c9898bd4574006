"""One error shape for every HTTP failure: `{"error": {"code", "message", "details"?}}`."""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from domain.errors import ErrorKind, LedgerError, NotJson

STATUS_OF_KIND = {
    ErrorKind.NOT_FOUND: 404,
    ErrorKind.EXISTS: 409,
    ErrorKind.INVALID: 422,
    ErrorKind.REJECTED: 409,
    ErrorKind.CONFLICT: 409,
    ErrorKind.CORRUPT: 409,
    ErrorKind.UNAVAILABLE: 503,
}
# A body that is not JSON (malformed, or holding NaN or Infinity, which a lenient parser lets
# through) is a bad request, not a proposal: 400, and nothing is recorded.
NOT_JSON = NotJson.code
STATUS_OF_CODE = {NOT_JSON: 400}


class ErrorDetail(BaseModel):
    code: str
    message: str
    details: Any = None


class ErrorBody(BaseModel):
    error: ErrorDetail


def error_response(
    status: int, code: str, message: str, details: Any = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    error: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        error["details"] = details
    return JSONResponse({"error": error}, status_code=status, headers=headers)


class Unauthorized(Exception):
    pass


class BodyTooLarge(HTTPException):
    """Raised while the body is read; an HTTPException, so FastAPI passes it on (not a 400)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413)
        self.limit = limit


def too_large(limit: int) -> JSONResponse:
    return error_response(413, "body_too_large", f"request body larger than {limit} bytes")


def unauthorized() -> JSONResponse:
    return error_response(
        401,
        "unauthorized",
        "missing or wrong bearer token",
        headers={"WWW-Authenticate": "Bearer"},
    )


def forbidden(name: str) -> JSONResponse:
    return error_response(
        403, "forbidden", f"the token {name!r} may only read: writes need a write or admin token"
    )


def unavailable(error: Exception) -> JSONResponse:
    first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
    return error_response(503, "storage_unavailable", f"storage unavailable: {first}; retry later")


def jsonable_errors(error: RequestValidationError) -> list[dict[str, Any]]:
    """FastAPI's validation errors, made JSON-safe (inputs can hold bytes or odd objects, and
    strings with lone surrogates, which cannot be encoded as UTF-8: they become "?")."""
    text = json.dumps(error.errors(), default=str, ensure_ascii=False)
    errors: list[dict[str, Any]] = json.loads(text.encode("utf-8", "replace").decode("utf-8"))
    return errors


def install_error_handlers(app: FastAPI, body_limit: int) -> None:
    @app.exception_handler(Unauthorized)
    async def _unauthorized(_: Request, __: Exception) -> JSONResponse:
        return unauthorized()

    @app.exception_handler(BodyTooLarge)
    async def _too_large(_: Request, error: Exception) -> JSONResponse:
        return too_large(error.limit if isinstance(error, BodyTooLarge) else body_limit)

    @app.exception_handler(LedgerError)
    async def _ledger_error(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, LedgerError)
        status = STATUS_OF_CODE.get(error.code, STATUS_OF_KIND[error.kind])
        return error_response(status, error.code, str(error))

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, error: RequestValidationError) -> JSONResponse:
        details = jsonable_errors(error)
        first = details[0] if details else {}
        if first.get("type") == "json_invalid":
            reason = first.get("ctx", {}).get("error", "malformed")
            return error_response(400, NOT_JSON, f"the request body is not JSON: {reason}")
        where = ".".join(str(part) for part in first.get("loc", ()))
        message = f"{where}: {first.get('msg', 'invalid request')}" if where else "invalid request"
        return error_response(422, "invalid_request", message, details)

    @app.exception_handler(HTTPException)
    async def _http(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, HTTPException)
        code = {400: "invalid_input", 404: "not_found", 405: "method_not_allowed"}.get(
            error.status_code, "http_error"
        )
        return error_response(
            error.status_code, code, str(error.detail), headers=dict(error.headers or {})
        )
