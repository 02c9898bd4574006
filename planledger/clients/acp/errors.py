"""A `LedgerError`'s kind mapped once to a JSON-RPC error for the editor."""

from __future__ import annotations

from acp import RequestError

from domain.errors import ErrorKind, LedgerError

RESOURCE_NOT_FOUND = -32002
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
CONFLICT = -32009
UNAVAILABLE = -32010

JSONRPC_CODE_OF_KIND = {
    ErrorKind.NOT_FOUND: RESOURCE_NOT_FOUND,
    ErrorKind.EXISTS: INVALID_PARAMS,
    ErrorKind.INVALID: INVALID_PARAMS,
    ErrorKind.REJECTED: INVALID_PARAMS,
    ErrorKind.CONFLICT: CONFLICT,
    ErrorKind.CORRUPT: INTERNAL_ERROR,
    ErrorKind.UNAVAILABLE: UNAVAILABLE,
}


def request_error(error: LedgerError) -> RequestError:
    """The JSON-RPC error an editor receives; `data` names the ledger's code and kind."""
    return RequestError(
        JSONRPC_CODE_OF_KIND[error.kind],
        str(error),
        {"code": error.code, "kind": error.kind.value},
    )
