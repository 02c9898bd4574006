"""`planledger.tools`: the two plan tools' schemas, for a harness, without a database."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import jsonschema
import pytest

from planledger.tools import PLAN_UPDATE_SCHEMA, UPDATE_PLAN_SCHEMA, tool_definitions, tool_schema

CODEX = {
    "explanation": "optional",
    "plan": [
        {"step": "Locate the failure", "status": "completed"},
        {"step": "Fix and run the regression", "status": "in_progress"},
    ],
}
STRICT = {
    "expected_revision": 1,
    "title": "Implement session export",
    "goal_id": None,
    "steps": [
        {"id": "inspect", "title": "Inspect durable state", "status": "completed"},
        {"id": "implement", "title": "Implement archive writer", "status": "in_progress"},
    ],
}


def test_importing_the_schemas_loads_no_service_storage_or_mcp() -> None:
    code = (
        "import json, sys\n"
        "import planledger.tools as t\n"
        "heavy = ('planledger.service', 'planledger.storage', 'eventsourcing', 'psycopg', 'mcp')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy\n"
        "    or m.startswith(heavy))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(result.stdout) == []


@pytest.mark.parametrize(
    ("schema", "payload"),
    [
        (UPDATE_PLAN_SCHEMA, CODEX),
        (UPDATE_PLAN_SCHEMA, {"plan": []}),
        (UPDATE_PLAN_SCHEMA, {**CODEX, "expected_revision": 0}),
        (UPDATE_PLAN_SCHEMA, {"plan": [{"step": "Drop it", "status": "cancelled"}]}),
        (PLAN_UPDATE_SCHEMA, STRICT),
        (PLAN_UPDATE_SCHEMA, {"title": "T", "steps": [], "goal_id": "export"}),
    ],
)
def test_schemas_accept_the_spec_examples(schema: dict[str, Any], payload: Any) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(payload, schema, cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize(
    ("schema", "payload"),
    [
        (UPDATE_PLAN_SCHEMA, {"explanation": "no plan"}),
        (UPDATE_PLAN_SCHEMA, {**CODEX, "mode": "plan"}),
        (UPDATE_PLAN_SCHEMA, {"plan": [{"step": "  ", "status": "pending"}]}),
        (UPDATE_PLAN_SCHEMA, {"plan": [{"step": "a", "status": "blocked"}]}),
        (UPDATE_PLAN_SCHEMA, {"plan": [{"step": "a", "status": "pending", "id": "a"}]}),
        (UPDATE_PLAN_SCHEMA, {"plan": [{"step": "a", "status": "pending"}] * 101}),
        (UPDATE_PLAN_SCHEMA, {**CODEX, "expected_revision": -1}),
        (UPDATE_PLAN_SCHEMA, STRICT),
        (PLAN_UPDATE_SCHEMA, CODEX),
        (PLAN_UPDATE_SCHEMA, {**STRICT, "collaboration_mode": "plan"}),
        (
            PLAN_UPDATE_SCHEMA,
            {"title": "T", "steps": [{"id": "a", "title": "A", "status": "cancelled"}]},
        ),
        (
            PLAN_UPDATE_SCHEMA,
            {"title": "T", "steps": [{"id": "a b", "title": "A", "status": "pending"}]},
        ),
        (PLAN_UPDATE_SCHEMA, {"title": "x" * 201, "steps": []}),
        (PLAN_UPDATE_SCHEMA, {"steps": []}),
    ],
)
def test_schemas_refuse_what_the_rules_refuse(schema: dict[str, Any], payload: Any) -> None:
    assert not jsonschema.Draft202012Validator(schema).is_valid(payload)


def test_definitions_in_each_model_api_shape_are_fresh_copies() -> None:
    openai = tool_definitions("openai")
    assert [d["name"] for d in openai] == ["update_plan", "plan_update"]
    assert all(d["type"] == "function" and d["parameters"]["type"] == "object" for d in openai)
    anthropic = tool_definitions("anthropic")
    assert anthropic[1]["input_schema"] == PLAN_UPDATE_SCHEMA
    assert tool_definitions("mcp")[0]["inputSchema"] == UPDATE_PLAN_SCHEMA
    for definition in openai:
        assert "[revision_conflict]" in definition["description"]
        assert "[policy_mismatch]" in definition["description"]
    openai[0]["parameters"]["properties"].clear()
    mine = tool_schema("update_plan")
    mine["required"].append("session_id")
    assert UPDATE_PLAN_SCHEMA["properties"] and UPDATE_PLAN_SCHEMA["required"] == ["plan"]


def test_chat_completions_tools_wrap_each_function() -> None:
    """OpenAI's Chat Completions API takes `{"type": "function", "function": {name,
    description, parameters}}`; its Responses API (`openai`) the same keys unwrapped."""
    chat = tool_definitions("openai-chat")
    responses = tool_definitions("openai")
    assert [set(d) for d in chat] == [{"type", "function"}] * 2
    assert [d["function"] for d in chat] == [
        {k: d[k] for k in ("name", "description", "parameters")} for d in responses
    ]
    chat[0]["function"]["parameters"]["properties"].clear()
    assert UPDATE_PLAN_SCHEMA["properties"]  # fresh copies
    with pytest.raises(ValueError, match="unknown style"):
        tool_definitions("openai-completions")  # type: ignore[arg-type]
