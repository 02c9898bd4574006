"""What a hook reads in Claude Code's transcript (`transcript_path`) beyond the plan calls the
importer takes: calls still waiting for their answer, the parent a fork copied its history
from, and the hook contexts the model holds since the last compaction."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from planledger.importers.claude import copied_from

TAIL_BYTES = 256 * 1024  # a call waiting for its answer is in the last lines written


def _lines(path: Path, tail: bool = False) -> Iterator[dict[str, Any]]:
    try:
        with path.open("rb") as file:
            if tail:
                size = file.seek(0, os.SEEK_END)
                file.seek(max(0, size - TAIL_BYTES))
                if size > TAIL_BYTES:
                    file.readline()  # a partial line
            for raw in file:
                try:
                    record = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    yield record
    except OSError:
        return


def _blocks(record: dict[str, Any], kind: str) -> Iterator[dict[str, Any]]:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == kind:
                yield block


def waiting_call(path: Path, tool: str, matches: Callable[[dict[str, Any]], bool]) -> bool:
    """Whether a `tool` call whose input `matches` was made and has no answer yet (Claude Code
    fires TaskCreated and TaskCompleted while the call runs, before PostToolUse)."""
    waiting: set[str] = set()
    for record in _lines(path, tail=True):
        for block in _blocks(record, "tool_use"):
            tool_input = block.get("input")
            if block.get("name") == tool and isinstance(tool_input, dict) and matches(tool_input):
                waiting.add(str(block.get("id")))
        for block in _blocks(record, "tool_result"):
            waiting.discard(str(block.get("tool_use_id")))
    return bool(waiting)


def fork_parent(path: Path) -> str | None:
    """The Claude session this transcript's session was forked from (None: not a fork, or
    its transcript is not written yet)."""
    parent = None
    for record in _lines(path):
        if record.get("type") != "assistant":
            continue
        copied = copied_from(record)
        if copied is None:
            break  # the session's own answers come after what a fork copied
        parent = copied  # the last copied answer is the parent's (earlier ones may be older)
    return parent


def held_contexts(path: Path) -> list[str]:
    """The hook contexts the model holds: those of `SessionStart` hooks however old (Claude
    Code 2.1.332 keeps them in its system context across compaction, so one given at a resume
    is still there after a `/compact`), the others given since the last compaction."""
    session_start: list[str] = []
    since_compaction: list[str] = []
    for record in _lines(path):
        if record.get("type") == "system" and record.get("subtype") == "compact_boundary":
            since_compaction.clear()
        attachment = record.get("attachment")
        if isinstance(attachment, dict) and attachment.get("type") == "hook_additional_context":
            content = attachment.get("content")
            texts = [t for t in (content if isinstance(content, list) else [content]) if t]
            held = (
                session_start if attachment.get("hookEvent") == "SessionStart" else since_compaction
            )
            held.extend(text for text in texts if isinstance(text, str))
    return session_start + since_compaction


def calls_since_compaction(path: Path) -> set[str]:
    """The ids of the tool calls the model still sees (made since the last compaction)."""
    ids: set[str] = set()
    for record in _lines(path):
        if record.get("type") == "system" and record.get("subtype") == "compact_boundary":
            ids.clear()
        ids.update(str(block.get("id")) for block in _blocks(record, "tool_use"))
    return ids
