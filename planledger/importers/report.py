"""What an import found and did: per-session counts and the lines it could not read."""

from __future__ import annotations

from pydantic import BaseModel, Field


class LineError(BaseModel):
    """A line (1-based; 0 for the file as a whole) that could not be read, and why."""

    path: str
    line: int
    message: str


class SessionImport(BaseModel):
    """One ledger session's share of an import: `calls` = committed + rejected + skipped."""

    session_id: str
    source: str = Field(description="The file holding the session's first call.")
    calls: int = 0
    committed: int = 0
    rejected: int = Field(default=0, description="Recorded as rejected (conflicts included).")
    skipped: int = Field(default=0, description="Already recorded: nothing written.")
    files: list[str] = Field(default_factory=list, description="Every file with its calls.")


class ImportReport(BaseModel):
    """The `--json` shape of `planledger import`."""

    sessions: list[SessionImport] = Field(default_factory=list)
    errors: list[LineError] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors
