"""Exit codes, the same everywhere, and the one place that turns an error into one line on
stderr and its code."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import NoReturn

from domain.errors import ErrorKind, LedgerError

EXIT_OK, EXIT_FAILED, EXIT_INVALID, EXIT_REJECTED, EXIT_CONFLICT, EXIT_UNAVAILABLE = range(6)
EXIT_OF_KIND = {
    ErrorKind.CORRUPT: EXIT_FAILED,
    ErrorKind.NOT_FOUND: EXIT_INVALID,
    ErrorKind.EXISTS: EXIT_INVALID,
    ErrorKind.INVALID: EXIT_INVALID,
    ErrorKind.REJECTED: EXIT_REJECTED,
    ErrorKind.CONFLICT: EXIT_CONFLICT,
    ErrorKind.UNAVAILABLE: EXIT_UNAVAILABLE,
}


def fail(message: str, code: int) -> NoReturn:
    sys.stderr.write(f"planledger: error: {message}\n")
    raise SystemExit(code)


def warn(message: str) -> None:
    sys.stderr.write(f"planledger: warning: {message}\n")


def guarded(body: Callable[[], int], where: Callable[[], str]) -> int:
    """Run a command; every error becomes one line on stderr and the spec's exit code.
    `where` names the database for a "storage unavailable" message."""
    try:
        return body()
    except KeyboardInterrupt:
        fail("interrupted", EXIT_FAILED)
    except LedgerError as error:
        fail(str(error), EXIT_OF_KIND[error.kind])
    except Exception as error:
        if os.environ.get("PLANLEDGER_DEBUG"):
            raise
        from planledger.storage.errors import unavailable_cause

        cause = unavailable_cause(error)
        if cause is not None:
            fail(f"storage unavailable ({where()}): {cause}; retry later", EXIT_UNAVAILABLE)
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        fail(
            f"{type(error).__name__}: {first} (set PLANLEDGER_DEBUG=1 for a traceback)",
            EXIT_FAILED,
        )
