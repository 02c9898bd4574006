"""Agents' plan tools as the ledger's forms: todo lists (Claude Code's TodoWrite, Gemini's
write_todos, ACP plan entries) in the Codex form, Claude Code's task tools in the task form. One
mapping for the importers, the hooks and the ACP proxy, so the same call is the same proposal
(and the same fingerprint) whichever of them records it."""

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


# Claude Code's task tools' fields, and the task form's name for each (SPEC "Three input forms").
TASK_CREATE_FIELDS = {"subject": "title", "description": "detail", "activeForm": "active_form"}
TASK_UPDATE_FIELDS = {
    "taskId": "id",
    "status": "status",
    "subject": "title",
    "description": "detail",
    "activeForm": "active_form",
    "owner": "owner",
    "addBlockedBy": "add_blocked_by",
    "addBlocks": "add_blocks",
}


def task_create_payload(tool_input: Any, task_id: Any = None) -> dict[str, Any]:
    """A TaskCreate call in the task form, with the id Claude Code gave the task (None: the
    ledger numbers it). Fields the task form does not define (`metadata`) are left out."""
    payload = _renamed(tool_input, TASK_CREATE_FIELDS, {"op": "create"})
    if task_id is not None:
        payload["id"] = task_id
    return payload


def task_update_payload(tool_input: Any) -> dict[str, Any]:
    """A TaskUpdate call in the task form (only the fields it sent)."""
    return _renamed(tool_input, TASK_UPDATE_FIELDS, {"op": "update"})


def _renamed(tool_input: Any, names: dict[str, str], payload: dict[str, Any]) -> dict[str, Any]:
    if isinstance(tool_input, dict):
        for name, field in names.items():
            if name in tool_input:
                payload[field] = tool_input[name]
    return payload


def gemini_todo_payload(todos: Sequence[Any]) -> dict[str, Any]:
    """A `write_todos` call (`todos: [{description, status}]`) in the Codex form, Gemini's
    statuses (`blocked` too) kept as sent: one mapping for the hook, the importer and the ACP
    proxy, so all make the same proposal."""
    return {"plan": codex_steps(todos, "description")}


def opencode_todo_payload(todos: Sequence[Any]) -> dict[str, Any]:
    """An OpenCode `todowrite` list (`todos: [{content, status, priority}]`) in the Codex form:
    one mapping for the plugin's hook, the importer and the ACP proxy (the priorities are not
    part of the plan)."""
    return {"plan": codex_steps(todos, "content")}


def gemini_call_id(turn: str, index: int) -> str:
    """The proposal id of the `index`-th write_todos call of Gemini's model turn `turn` (the
    turn's id in the chat recording): the hook and `import gemini` both name a call so."""
    return f"{turn}-{index}"
