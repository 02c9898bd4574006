"""A model request in one shape for every dialect, and the reply a script gives to it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Call:
    """A tool call the model made (or makes, in a reply)."""

    name: str
    input: dict[str, Any]
    id: str = ""


@dataclass(frozen=True)
class Result:
    """A tool's answer as the agent hands it back to the model."""

    id: str
    name: str
    text: str
    is_error: bool = False


Part = Text | Call | Result


@dataclass(frozen=True)
class Message:
    role: str  # "user" or "assistant"
    parts: tuple[Part, ...]

    def texts(self) -> list[str]:
        return [part.text for part in self.parts if isinstance(part, Text)]

    def calls(self) -> list[Call]:
        return [part for part in self.parts if isinstance(part, Call)]

    def results(self) -> list[Result]:
        return [part for part in self.parts if isinstance(part, Result)]


@dataclass(frozen=True)
class Conversation:
    """What the agent sent the model: system text, the tools offered, the messages so far."""

    system: str
    tools: tuple[str, ...]
    messages: tuple[Message, ...]
    raw: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)

    def prompts(self) -> list[str]:
        """Every user text of the conversation, in order."""
        return [text for m in self.messages if m.role == "user" for text in m.texts()]

    def results(self) -> list[Result]:
        return [r for m in self.messages if m.role == "user" for r in m.results()]

    def calls(self) -> list[Call]:
        return [c for m in self.messages if m.role == "assistant" for c in m.calls()]

    def all_text(self) -> str:
        """The system text and every text and tool result, for "was the model told X" checks."""
        pieces = [self.system]
        for message in self.messages:
            for part in message.parts:
                if isinstance(part, Text | Result):
                    pieces.append(part.text)
        return "\n".join(pieces)

    def count(self, needle: str) -> int:
        return self.all_text().count(needle)

    def count_in_messages(self, needle: str) -> int:
        """How often the messages (not the system text) hold `needle`: Claude Code 2.1.332
        also copies the latest SessionStart context into its system prompt."""
        return self.all_text().count(needle) - self.system.count(needle)


@dataclass(frozen=True)
class Reply:
    """One model turn: some text, then tool calls (none: the turn ends)."""

    text: str = ""
    calls: tuple[Call, ...] = ()
    input_tokens: int = 100  # the usage reported (a large one makes an agent compact)

    @staticmethod
    def call(name: str, **arguments: Any) -> Reply:
        return Reply(calls=(Call(name, arguments),))


def text_of(content: Any) -> str:
    """The text of a tool result's content, whatever nesting the dialect uses."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(item) for item in content)
    if isinstance(content, dict):
        for key in ("text", "content", "output", "result", "error"):
            if key in content:
                return text_of(content[key])
        return json.dumps(content)
    return "" if content is None else str(content)
