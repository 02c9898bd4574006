"""Importers: the plan calls of sessions other agents already ran (Codex, Claude Code, Gemini
CLI, OpenCode).

`import_paths(service, agent, paths)` reads the transcripts and records each call as a
proposal through the service, returning an `ImportReport`. The names are loaded on first use
(planledger.importers.run, .report): a hook that reads one agent's transcript loads that
agent's reader alone.
"""

from __future__ import annotations

import importlib
from typing import Any

WHERE = {
    "Agent": "run",
    "import_paths": "run",
    "ImportReport": "report",
    "LineError": "report",
    "SessionImport": "report",
}
__all__ = sorted(WHERE)


def __getattr__(name: str) -> Any:
    if name not in WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{WHERE[name]}"), name)
