"""Importers: the plan calls of sessions other agents already ran (Codex, Claude Code).

`import_paths(service, "codex" | "claude", paths)` reads the transcripts and records each
call as a proposal through the service, returning an `ImportReport`.
"""

from planledger.importers.report import ImportReport, LineError, SessionImport
from planledger.importers.run import Agent, import_paths

__all__ = ["Agent", "ImportReport", "LineError", "SessionImport", "import_paths"]
