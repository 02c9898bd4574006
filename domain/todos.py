"""Agents' todo lists (Claude Code's TodoWrite, Gemini's write_todos, ACP plan entries) as the
Codex form: one mapping for the importers, the hooks and the ACP proxy, so the same call is the
same proposal (and the same fingerprint) whichever of them records it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def codex_steps(items: Sequence[Any], text_key: str = "content") -> list[Any]:
    """Each item's `text_key` as the step and its `status` as is; everything else is left out
    (the Codex form rejects fields it does not define). An item that is not an object passes
    as it is, so the rules name it."""
    return [
        {"step": item.get(text_key), "status": item.get("status")}
        if isinstance(item, dict)
        else item
        for item in items
    ]
