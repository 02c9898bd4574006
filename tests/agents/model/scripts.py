"""Scripts: what the scripted model answers, as a function of the conversation it is sent."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from tests.agents.model.conversation import Call, Conversation, Reply
from tests.agents.model.server import Request, Script

SEARCHES = frozenset({"ToolSearch", "tool_search"})  # Claude Code's, Codex's deferred tools
SUMMARY = "Summary of the conversation so far: the user asked for a plan and work began."


def by_prompt(
    turns: Mapping[str, Sequence[Reply | Callable[[Conversation], Reply]]],
    *,
    summary: str = SUMMARY,
    deferred_tools: bool = True,
) -> Script:
    """Answer the latest user text that contains a key of `turns` with its replies in order:
    the Nth model turn after that prompt gets the Nth reply (a Reply, or a function of the
    conversation), then "Done.". So a resumed or forked session, which resends its history, is
    answered as that history calls for.

    A request that offers no tools is a side request (a title, a summary): it gets `summary`.
    With `deferred_tools` (Claude Code's ToolSearch, Codex's tool_search), a reply that calls a
    tool the request does not offer yet is preceded by the search a real model makes to load it."""

    def script(request: Request) -> Reply:
        conversation = request.conversation
        if not conversation.tools:
            return Reply(text=summary)
        found = _latest_prompt(conversation, turns)
        if found is None:
            return Reply(text="Done.")
        key, after = found
        own_turns = [
            m
            for m in conversation.messages[after:]
            if m.role == "assistant" and not _only_tool_search(m.calls())
        ]
        replies = turns[key]
        if len(own_turns) >= len(replies):
            return Reply(text="Done.")
        chosen = replies[len(own_turns)]
        reply = chosen(conversation) if callable(chosen) else chosen
        missing = sorted({c.name for c in reply.calls} - set(conversation.tools))
        if deferred_tools and missing and "ToolSearch" in conversation.tools:
            query = "select:" + ",".join(missing)
            return Reply(calls=(Call("ToolSearch", {"query": query, "max_results": 10}),))
        if deferred_tools and missing and "tool_search" in conversation.tools:  # Codex
            query = " ".join(name.replace("__", " ") for name in missing)
            return Reply(calls=(Call("tool_search", {"query": query, "limit": 8}),))
        return reply

    return script


def _latest_prompt(
    conversation: Conversation, turns: Mapping[str, object]
) -> tuple[str, int] | None:
    for index in range(len(conversation.messages) - 1, -1, -1):
        message = conversation.messages[index]
        if message.role != "user":
            continue
        for text in message.texts():
            for key in turns:
                if key in text:
                    return key, index + 1
    return None


def _only_tool_search(calls: Sequence[Call]) -> bool:
    return bool(calls) and all(call.name in SEARCHES for call in calls)
