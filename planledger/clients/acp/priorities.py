"""ACP plan-entry priorities, which the ledger's step model (id, title, status) does not hold.

The proxy records the priorities an agent sent with each proposal, keyed by proposal id and
step id, in small JSON files beside the store (`<home>/acp/<store key>/<session>/<proposal>.json`,
written atomically), so the viewer can render any commit with the priorities it was proposed
with. A step without a recorded priority renders as `medium`.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from planledger.storage.file_paths import store_key
from projections.acp import ACP_PRIORITIES, DEFAULT_PRIORITY


class PriorityBook:
    """Recorded priorities per (session, proposal); in memory only when there is no home."""

    def __init__(self, home: Path | None, database_url: str) -> None:
        self.root = home / "acp" / store_key(database_url) if home is not None else None
        self._memory: dict[tuple[str, str], dict[str, str]] = {}

    def record(self, session_id: str, proposal_id: str, priorities: Mapping[str, str]) -> None:
        """Keep the non-default priorities of one proposal (nothing is written when all are
        `medium`)."""
        kept = {
            step_id: priority
            for step_id, priority in priorities.items()
            if priority in ACP_PRIORITIES and priority != DEFAULT_PRIORITY
        }
        if not kept:
            return
        self._memory[(session_id, proposal_id)] = kept
        if self.root is None:
            return
        folder = self.root / session_id
        folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                json.dump({"priorities": kept}, file)
            os.replace(temporary, folder / f"{proposal_id}.json")
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    def forget(self, session_id: str, proposal_id: str) -> None:
        """Drop what was recorded for a proposal that was not committed."""
        self._memory.pop((session_id, proposal_id), None)
        if self.root is not None:
            with contextlib.suppress(OSError):
                (self.root / session_id / f"{proposal_id}.json").unlink()

    def lookup(self, session_id: str, proposal_id: str) -> dict[str, str]:
        """Step id -> priority recorded with a proposal; empty when none was (or it is
        unreadable: a priority is a hint, never a reason to fail a read)."""
        known = self._memory.get((session_id, proposal_id))
        if known is not None or self.root is None:
            return dict(known or {})
        try:
            text = (self.root / session_id / f"{proposal_id}.json").read_text(encoding="utf-8")
            data = json.loads(text)["priorities"]
        except (OSError, ValueError, KeyError, TypeError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {str(key): value for key, value in data.items() if value in ACP_PRIORITIES}
