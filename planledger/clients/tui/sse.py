"""Server-sent events off the wire, turned back into the service's `FeedEvent`s."""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass

from planledger.service import FeedEvent
from projections.shapes import HistoryEntry, PlanView


@dataclass(frozen=True)
class ServerSentEvent:
    event: str
    data: str
    id: str | None = None


async def parse_events(lines: AsyncIterable[str]) -> AsyncIterator[ServerSentEvent]:
    """The events of a text/event-stream, one per blank-line-terminated block (comments and
    blocks without data, such as pings, are skipped)."""
    event, event_id = "message", None
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield ServerSentEvent(event, "\n".join(data), event_id)
            event, data = "message", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id":
            event_id = value


def feed_event(message: ServerSentEvent) -> FeedEvent:
    """A plan.* event's data (history entry + session_id, store_position, plan) as a FeedEvent."""
    data = json.loads(message.data)
    entry = HistoryEntry.model_validate(data)
    plan = data.get("plan")
    return FeedEvent(
        store_position=int(data["store_position"]),
        session_id=str(data["session_id"]),
        kind=entry.kind,
        entry=entry,
        plan=PlanView.model_validate(plan) if plan is not None else None,
    )
