"""The two plan tools as plain JSON schemas, for a harness to hand to a model.

Importable without a database: nothing here touches the service, storage or the MCP SDK.

    from planledger.tools import tool_definitions
    tools = tool_definitions("openai")      # Responses API; "openai-chat" for Chat
                                            # Completions, "anthropic", or "mcp"

A harness sends the model's arguments, as they came, to `PlanLedger.submit(session_id, args)`;
the ledger decides them and names every violation, so the schemas are guidance for the model,
not the check.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from domain.models import MAX_STEP_ID_CHARS, MAX_STEP_TITLE_CHARS, MAX_STEPS, MAX_TITLE_CHARS

NOT_BLANK = r"\S"

_EXPECTED_REVISION: dict[str, Any] = {
    "type": ["integer", "null"],
    "minimum": 0,
    "description": "Optional: the plan revision your update is based on (as last returned). "
    "The call is refused with revision_conflict if the plan has moved on since.",
}

UPDATE_PLAN_DESCRIPTION = f"""\
Record your plan for the current task in the durable plan ledger (the update_plan form).
Call it when you start a task with several steps, and again each time a step starts, finishes \
or is dropped. Send the complete list every time: a step you leave out is no longer part of the \
plan; an empty list clears it.
The ledger commits the list only if all hold (violation code in brackets):
- every step has non-blank text [blank_step_title] of at most {MAX_STEP_TITLE_CHARS} characters \
[too_long];
- status is pending, in_progress, completed or cancelled [invalid_status];
- at most one step is in_progress [multiple_in_progress];
- at most {MAX_STEPS} steps [too_many_steps];
- expected_revision, when given, equals the plan's current revision [revision_conflict];
- no other fields [unknown_field]; mode or collaboration_mode never [mode_change_forbidden]: \
only the user switches modes;
- a plan started with plan_update keeps using plan_update [policy_mismatch].
A refused call changes nothing and lists every violation as `code: message`: fix them all and \
call again with the whole list."""

PLAN_UPDATE_DESCRIPTION = f"""\
Record or update your plan (a title and steps with stable ids) in the durable plan ledger \
(the plan_update form).
Call it when you start a task with several steps, and again each time a step changes status. \
Send the complete plan every time.
The ledger commits it only if all hold (violation code in brackets):
1. the title is not blank [blank_title];
2. every step has a non-blank id and title [blank_step_id, blank_step_title];
3. step ids are unique [duplicate_step_id];
4. at most one step is in_progress [multiple_in_progress];
5. while any step is pending, exactly one is in_progress [no_step_in_progress];
6. a fully completed plan has no step in_progress: never invent an active step;
7. every step id of an earlier revision is still present [step_removed] (retitle, reorder or \
add steps freely);
8. a completed step never goes back to pending or in_progress [completed_step_reopened];
9. status is pending, in_progress or completed [invalid_status]: no blocked, no cancelled;
10. expected_revision, when given, equals the plan's current revision [revision_conflict].
Also: title at most {MAX_TITLE_CHARS} characters, step title at most {MAX_STEP_TITLE_CHARS} \
[too_long]; step id at most {MAX_STEP_ID_CHARS} characters of A-Za-z0-9._- [invalid_step_id]; \
at most {MAX_STEPS} steps [too_many_steps]; goal_id, when given, names a goal of the session \
[unknown_goal]; no other fields [unknown_field]; mode or collaboration_mode never \
[mode_change_forbidden]: only the user switches modes; a plan started with update_plan keeps \
using update_plan [policy_mismatch].
A refused call changes nothing and lists every violation as `code: message`: fix them all and \
call again."""

UPDATE_PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "explanation": {
            "type": ["string", "null"],
            "description": "Optional: why the plan changed, in one or two sentences.",
        },
        "plan": {
            "type": "array",
            "maxItems": MAX_STEPS,
            "description": "The complete list of steps, in order.",
            "items": {
                "type": "object",
                "properties": {
                    "step": {
                        "type": "string",
                        "pattern": NOT_BLANK,
                        "maxLength": MAX_STEP_TITLE_CHARS,
                        "description": "What the step does, in a short sentence.",
                    },
                    "status": {
                        "type": "string",
                        "enum": ["pending", "in_progress", "completed", "cancelled"],
                    },
                },
                "required": ["step", "status"],
                "additionalProperties": False,
            },
        },
        "expected_revision": _EXPECTED_REVISION,
    },
    "required": ["plan"],
    "additionalProperties": False,
}

PLAN_UPDATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {
            "type": "string",
            "pattern": NOT_BLANK,
            "maxLength": MAX_TITLE_CHARS,
            "description": "What the plan achieves, in a few words.",
        },
        "steps": {
            "type": "array",
            "maxItems": MAX_STEPS,
            "description": "The complete list of steps, in order; keep every id you used before.",
            "items": {
                "type": "object",
                "properties": {
                    "id": {
                        "type": "string",
                        "pattern": f"^[A-Za-z0-9._-]{{1,{MAX_STEP_ID_CHARS}}}$",
                        "description": "A stable id for the step, e.g. `inspect` or `write-tests`.",
                    },
                    "title": {
                        "type": "string",
                        "pattern": NOT_BLANK,
                        "maxLength": MAX_STEP_TITLE_CHARS,
                    },
                    "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                },
                "required": ["id", "title", "status"],
                "additionalProperties": False,
            },
        },
        "expected_revision": _EXPECTED_REVISION,
        "goal_id": {
            "type": ["string", "null"],
            "description": "Optional: the id of the session goal this plan serves.",
        },
    },
    "required": ["title", "steps"],
    "additionalProperties": False,
}

TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "update_plan": (UPDATE_PLAN_DESCRIPTION, UPDATE_PLAN_SCHEMA),
    "plan_update": (PLAN_UPDATE_DESCRIPTION, PLAN_UPDATE_SCHEMA),
}

Style = Literal["openai", "openai-chat", "anthropic", "mcp"]


def tool_schema(name: str) -> dict[str, Any]:
    """A fresh copy of the input schema of `update_plan` or `plan_update`."""
    return copy.deepcopy(TOOLS[name][1])


def tool_definitions(style: Style = "openai") -> list[dict[str, Any]]:
    """Both tools in a model API's own shape: OpenAI's Responses API function tools
    (`openai`), its Chat Completions tools (`openai-chat`: `{"type": "function", "function":
    {...}}`), Anthropic tools, or MCP tool definitions (`name`, `description`, `inputSchema`).
    Each call returns fresh copies."""
    if style not in ("openai", "openai-chat", "anthropic", "mcp"):
        raise ValueError(f"unknown style {style!r}: use openai, openai-chat, anthropic or mcp")
    definitions = []
    for name, (description, schema) in TOOLS.items():
        parameters = copy.deepcopy(schema)
        if style == "openai-chat":
            function = {"name": name, "description": description, "parameters": parameters}
            definitions.append({"type": "function", "function": function})
        elif style == "openai":
            definitions.append(
                {
                    "type": "function",
                    "name": name,
                    "description": description,
                    "parameters": parameters,
                }
            )
        elif style == "anthropic":
            definitions.append(
                {"name": name, "description": description, "input_schema": parameters}
            )
        else:
            definitions.append(
                {"name": name, "description": description, "inputSchema": parameters}
            )
    return definitions
