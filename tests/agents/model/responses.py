"""OpenAI Responses (`POST /v1/responses`, Codex's `wire_api = "responses"`): requests read into
a Conversation, replies as SSE events or one JSON response.

Codex 0.171 defers an MCP server's tools: the model first calls `tool_search` (a
`tool_search_call` item, executed by Codex), whose `tool_search_output` offers them as a
namespace (`{"type": "namespace", "name": "mcp__planledger", "tools": [...]}`); the model then
calls one as a `function_call` carrying that `namespace`. In a Conversation such a tool is named
`<namespace>__<tool>` (`mcp__planledger__update_plan`), and a reply's call of such a name is
sent back split the same way."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tests.agents.model.conversation import (
    Call,
    Conversation,
    Message,
    Part,
    Reply,
    Result,
    Text,
    text_of,
)

TOOL_SEARCH = "tool_search"  # Codex's deferred tools (MCP servers'), found with a client call


def read_request(body: dict[str, Any]) -> Conversation:
    system = body.get("instructions") or ""
    messages: list[Message] = []
    found: list[Any] = []  # tools offered by tool_search outputs
    for item in body.get("input") or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            texts = _texts(item.get("content"))
            if role in ("system", "developer"):
                system += "\n" + "\n".join(texts)
                continue
            parts: tuple[Part, ...] = tuple(Text(text) for text in texts)
            messages.append(Message("assistant" if role == "assistant" else "user", parts))
        elif kind == "tool_search_call":
            arguments = item.get("arguments")
            call = Call(
                TOOL_SEARCH, arguments if isinstance(arguments, dict) else {}, item["call_id"]
            )
            messages.append(Message("assistant", (call,)))
        elif kind == "tool_search_output":
            found += item.get("tools") or []
            names = ", ".join(_tool_names(item.get("tools") or []))
            messages.append(Message("user", (Result(item.get("call_id", ""), TOOL_SEARCH, names),)))
        elif kind in ("function_call", "custom_tool_call"):
            namespace = item.get("namespace")
            name = f"{namespace}__{item.get('name', '')}" if namespace else item.get("name", "")
            raw = item.get("arguments", item.get("input", ""))
            try:
                arguments = json.loads(raw) if isinstance(raw, str) else raw
            except ValueError:
                arguments = {"raw": raw}
            call = Call(name, arguments if isinstance(arguments, dict) else {}, item["call_id"])
            messages.append(Message("assistant", (call,)))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            result = Result(item.get("call_id", ""), "", text_of(output), _failed(output))
            messages.append(Message("user", (result,)))
    tools = [*(body.get("tools") or []), *found]
    return Conversation(system, tuple(_tool_names(tools)), tuple(messages), body)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [
        part["text"]
        for part in content or []
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    ]


def _failed(output: Any) -> bool:
    return isinstance(output, dict) and output.get("success") is False


def _tool_names(tools: list[Any]) -> Iterator[str]:
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                yield f"{tool.get('name', '')}__{inner.get('name', '')}"
        elif "name" in tool:
            yield tool["name"]
        elif tool.get("type") == TOOL_SEARCH:
            yield TOOL_SEARCH


def _namespaces(body: dict[str, Any]) -> list[str]:
    offered = [*(body.get("tools") or [])]
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "tool_search_output":
            offered += item.get("tools") or []
    return [
        tool.get("name", "")
        for tool in offered
        if isinstance(tool, dict) and tool.get("type") == "namespace"
    ]


def output_items(reply: Reply, turn: int, body: dict[str, Any]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.text or not reply.calls:
        items.append(
            {
                "type": "message",
                "id": f"msg_{turn:06d}",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {"type": "output_text", "text": reply.text or "Done.", "annotations": []}
                ],
            }
        )
    for index, call in enumerate(reply.calls):
        if call.name == TOOL_SEARCH:  # executed by the client, its answer a tool_search_output
            items.append(
                {
                    "type": "tool_search_call",
                    "id": f"ts_{turn:04d}_{index:02d}",
                    "call_id": call.id or f"call_{turn:04d}_{index:02d}",
                    "execution": "client",
                    "status": "completed",
                    "arguments": call.input,
                }
            )
            continue
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_{turn:04d}_{index:02d}",
            "call_id": call.id or f"call_{turn:04d}_{index:02d}",
            "name": call.name,
            "arguments": json.dumps(call.input),
            "status": "completed",
        }
        for namespace in _namespaces(body):
            if namespace and call.name.startswith(f"{namespace}__"):
                item["namespace"], item["name"] = namespace, call.name[len(namespace) + 2 :]
        items.append(item)
    return items


USAGE = {
    "input_tokens": 100,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 20,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 120,
}


def reply_json(reply: Reply, model: str, turn: int, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"resp_{turn:06d}",
        "object": "response",
        "status": "completed",
        "model": model,
        "output": output_items(reply, turn, body),
        "usage": {
            **USAGE,
            "input_tokens": reply.input_tokens,
            "total_tokens": reply.input_tokens + 20,
        },
    }


def reply_events(reply: Reply, model: str, turn: int, body: dict[str, Any]) -> Iterator[bytes]:
    response = reply_json(reply, model, turn, body)
    yield _event(
        "response.created", {"response": {**response, "status": "in_progress", "output": []}}
    )
    for index, item in enumerate(response["output"]):
        yield _event("response.output_item.added", {"output_index": index, "item": item})
        if item["type"] == "message":
            text = item["content"][0]["text"]
            delta = {
                "output_index": index,
                "item_id": item["id"],
                "content_index": 0,
                "delta": text,
            }
            yield _event("response.output_text.delta", delta)
        yield _event("response.output_item.done", {"output_index": index, "item": item})
    yield _event("response.completed", {"response": response})


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()
