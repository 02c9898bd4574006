"""What an import found and did: per-session counts and the lines it could not read.

The lines it could not read are bounded (`ErrorLog`): a file of a million bad lines is reported
in as few words as a file of twenty."""

from __future__ import annotations

from typing import Protocol

from pydantic import Field

from domain.models import Model

MAX_LISTED = 20  # errors of one file listed in full; the rest are counted
MAX_MESSAGE_CHARS = 300
CUT_MARK = "…"


class LineError(Model):
    """A line (1-based; 0 for the file as a whole) that could not be read, and why."""

    path: str
    line: int
    message: str


class SessionImport(Model):
    """One ledger session's share of an import: `calls` = committed + rejected + skipped."""

    session_id: str
    source: str = Field(description="The file holding the session's first call.")
    calls: int = 0
    committed: int = 0
    rejected: int = Field(default=0, description="Recorded as rejected (conflicts included).")
    skipped: int = Field(default=0, description="Already recorded: nothing written.")
    files: list[str] = Field(default_factory=list, description="Every file with its calls.")


class ImportReport(Model):
    """The `--json` shape of `planledger import`. `errors` lists the first errors of each file,
    then for a file with more, one entry counting the rest; `error_count` counts them all."""

    sessions: list[SessionImport] = Field(default_factory=list)
    errors: list[LineError] = Field(default_factory=list)
    error_count: int = Field(default=0, exclude=True, description="Listed or only counted.")

    @property
    def ok(self) -> bool:
        return not self.errors


class Errors(Protocol):
    """Where a reader puts what it cannot read: a plain list, or a bounded `ErrorLog`."""

    def append(self, error: LineError, /) -> None: ...


class ErrorLog:
    """The errors of a run, bounded: the first `listed` of each file kept (each message cut to
    MAX_MESSAGE_CHARS), the rest of that file only counted, with their first and last line."""

    def __init__(self, listed: int = MAX_LISTED) -> None:
        self.listed = listed
        self.kept: list[LineError] = []
        self.per_file: dict[str, int] = {}
        self.unlisted: dict[str, tuple[int, int, int]] = {}  # path: (count, first, last line)

    def __len__(self) -> int:
        return len(self.kept) + sum(count for count, _, _ in self.unlisted.values())

    def append(self, error: LineError, /) -> None:
        seen = self.per_file.get(error.path, 0)
        self.per_file[error.path] = seen + 1
        if seen < self.listed:
            self.kept.append(error.model_copy(update={"message": cut(error.message)}))
            return
        count, first, last = self.unlisted.get(error.path, (0, error.line, error.line))
        self.unlisted[error.path] = (count + 1, min(first, error.line), max(last, error.line))

    def merge(self, other: ErrorLog) -> None:
        """Add the errors of `other`, a log of other files (a share of a run read elsewhere)."""
        for error in other.kept:
            self.append(error)
        for path, (count, first, last) in other.unlisted.items():
            self.per_file[path] = self.per_file.get(path, 0) + count
            known, low, high = self.unlisted.get(path, (0, first, last))
            self.unlisted[path] = (known + count, min(low, first), max(high, last))

    def report(self) -> list[LineError]:
        """The errors kept, then one entry per file whose other errors were only counted."""
        return self.kept + [
            LineError(
                path=path,
                line=first,
                message=f"and {count:,} more unreadable line{'s' if count > 1 else ''}, "
                f"up to line {last:,} (not listed)",
            )
            for path, (count, first, last) in self.unlisted.items()
        ]


def cut(message: str) -> str:
    """`message` on one line, at most MAX_MESSAGE_CHARS long."""
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 1] + CUT_MARK
    return message if "\n" not in message else " ".join(message.split())
