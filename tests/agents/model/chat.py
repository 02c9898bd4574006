"""OpenAI Chat Completions (`POST /v1/chat/completions`, OpenCode's `@ai-sdk/openai-compatible`
providers): requests read into a Conversation, replies as SSE chunks or one JSON completion."""

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
    system: list[str] = []
    messages: list[Message] = []
    names: dict[str, str] = {}  # tool call id -> tool name
    for message in body.get("messages") or []:
        role = message.get("role")
        content = message.get("content")
        if role in ("system", "developer"):
            system.append(text_of(content))
            continue
        parts: list[Part] = []
        if role == "tool":
            call_id = message.get("tool_call_id", "")
            parts.append(Result(call_id, names.get(call_id, ""), text_of(content)))
            messages.append(Message("user", tuple(parts)))
            continue
        text = text_of(content) if content else ""
        if text:
            parts.append(Text(text))
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except ValueError:
                arguments = {"raw": function.get("arguments")}
            names[call.get("id", "")] = function.get("name", "")
            parts.append(Call(function.get("name", ""), arguments, call.get("id", "")))
        messages.append(Message("assistant" if role == "assistant" else "user", tuple(parts)))
    tools = tuple(
        tool.get("function", {}).get("name", "")
        for tool in body.get("tools") or []
        if isinstance(tool, dict)
    )
    return Conversation("\n".join(system), tools, tuple(messages), raw=body)


def _tool_calls(reply: Reply, turn: int) -> list[dict[str, Any]]:
    return [
        {
            "index": index,
            "id": call.id or f"call_{turn:04d}_{index:02d}",
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.input)},
        }
        for index, call in enumerate(reply.calls)
    ]


USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}


def reply_json(reply: Reply, model: str, turn: int, body: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.calls:
        message["tool_calls"] = _tool_calls(reply, turn)
    elif not reply.text:
        message["content"] = "Done."
    return {
        "id": f"chatcmpl-{turn:06d}",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.calls else "stop",
            }
        ],
        "usage": USAGE,
    }


def reply_events(reply: Reply, model: str, turn: int, body: dict[str, Any]) -> Iterator[bytes]:
    head = {"id": f"chatcmpl-{turn:06d}", "object": "chat.completion.chunk", "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return f"data: {json.dumps({**head, 'choices': [choice], **extra})}\n\n".encode()

    yield chunk({"role": "assistant", "content": ""})
    if reply.text or not reply.calls:
        yield chunk({"content": reply.text or "Done."})
    if reply.calls:
        yield chunk({"tool_calls": _tool_calls(reply, turn)})
    usage = {**USAGE, "prompt_tokens": reply.input_tokens, "total_tokens": reply.input_tokens + 20}
    yield chunk({}, "tool_calls" if reply.calls else "stop", usage=usage)
    yield b"data: [DONE]\n\n"
