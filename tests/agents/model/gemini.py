"""Gemini `generateContent` / `streamGenerateContent?alt=sse`: requests read into a
Conversation, replies as JSON or SSE."""

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
    instruction = body.get("systemInstruction") or body.get("system_instruction") or {}
    if isinstance(instruction, str):
        system = instruction
    else:
        system = "\n".join(p.get("text", "") for p in instruction.get("parts", []) if "text" in p)
    messages: list[Message] = []
    for content in body.get("contents", []):
        parts: list[Part] = []
        for part in content.get("parts", []):
            if "text" in part and not part.get("thought"):
                parts.append(Text(part["text"]))
            elif "functionCall" in part:
                call = part["functionCall"]
                parts.append(Call(call.get("name", ""), call.get("args") or {}, call.get("id", "")))
            elif "functionResponse" in part:
                answer = part["functionResponse"]
                response = answer.get("response") or {}
                parts.append(
                    Result(
                        answer.get("id", ""),
                        answer.get("name", ""),
                        text_of(response),
                        isinstance(response, dict) and "error" in response,
                    )
                )
        role = "assistant" if content.get("role") == "model" else "user"
        messages.append(Message(role, tuple(parts)))
    tools = tuple(
        declaration.get("name", "")
        for tool in body.get("tools") or []
        for declaration in tool.get("functionDeclarations") or []
    )
    return Conversation(system, tools, tuple(messages), raw=body)


def reply_json(reply: Reply, model: str, turn: int, body: dict[str, Any]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if reply.text or not reply.calls:
        parts.append({"text": reply.text or "Done."})
    for index, call in enumerate(reply.calls):
        call_id = call.id or f"call_{turn:04d}_{index:02d}"
        parts.append({"functionCall": {"name": call.name, "args": call.input, "id": call_id}})
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": 100,
            "candidatesTokenCount": 20,
            "totalTokenCount": 120,
        },
        "modelVersion": model,
        "responseId": f"resp_{turn:06d}",
    }


def reply_events(reply: Reply, model: str, turn: int, body: dict[str, Any]) -> Iterator[bytes]:
    yield f"data: {json.dumps(reply_json(reply, model, turn, body))}\r\n\r\n".encode()
