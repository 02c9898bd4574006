"""Anthropic Messages (`POST /v1/messages`): requests read into a Conversation, replies as SSE."""

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


def read_request(body: dict[str, Any]) -> Conversation:
    system = body.get("system") or ""
    if isinstance(system, list):
        system = "\n".join(block.get("text", "") for block in system if isinstance(block, dict))
    names: dict[str, str] = {}
    messages: list[Message] = []
    for message in body.get("messages", []):
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        parts: list[Part] = []
        for block in blocks or []:
            kind = block.get("type")
            if kind == "text":
                parts.append(Text(block.get("text", "")))
            elif kind == "tool_use":
                names[block["id"]] = block["name"]
                parts.append(Call(block["name"], block.get("input") or {}, block["id"]))
            elif kind == "tool_result":
                call_id = block.get("tool_use_id", "")
                parts.append(
                    Result(
                        call_id,
                        names.get(call_id, ""),
                        text_of(block.get("content")),
                        bool(block.get("is_error")),
                    )
                )
        messages.append(Message(message.get("role", "user"), tuple(parts)))
    tools = tuple(tool.get("name", "") for tool in body.get("tools") or [])
    return Conversation(system, tools, tuple(messages), raw=body)


def _blocks(reply: Reply, turn: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    for index, call in enumerate(reply.calls):
        call_id = call.id or f"toolu_{turn:04d}_{index:02d}"
        blocks.append({"type": "tool_use", "id": call_id, "name": call.name, "input": call.input})
    if not blocks:
        blocks.append({"type": "text", "text": "Done."})
    return blocks


def reply_json(reply: Reply, model: str, turn: int, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"msg_{turn:06d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _blocks(reply, turn),
        "stop_reason": "tool_use" if reply.calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }


def reply_events(reply: Reply, model: str, turn: int, body: dict[str, Any]) -> Iterator[bytes]:
    """The reply as the stream of server-sent events the Messages API sends."""
    message = reply_json(reply, model, turn, body)
    blocks = message["content"]
    start = {**message, "content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": 100, "output_tokens": 1}
    yield _event("message_start", {"type": "message_start", "message": start})
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opening = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield _event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": opening},
        )
        yield _event(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        )
        yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
    yield _event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": 20},
        },
    )
    yield _event("message_stop", {"type": "message_stop"})


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
