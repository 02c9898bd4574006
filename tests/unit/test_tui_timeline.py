"""The terminal UI's pure parts: the timeline it walks, the texts it shows, the SSE it reads."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone

from domain.models import Violation
from planledger.clients.tui.sse import ServerSentEvent, feed_event, parse_events
from planledger.clients.tui.texts import entry_details, plan_text, transitions_text, when
from planledger.clients.tui.timeline import Timeline
from projections.shapes import HistoryEntry, Transition
from tests.unit.tui_samples import entry, plan


def history(commits: int) -> list[HistoryEntry]:
    """proposed + committed per revision, with one rejection after revision 1."""
    entries, position = [], 2
    for revision in range(1, commits + 1):
        entries += [entry(position, "proposed"), entry(position + 1, "committed", revision)]
        position += 2
        if revision == 1:
            entries += [entry(position, "proposed"), entry(position + 1, "rejected")]
            position += 2
    return entries


def test_a_loaded_timeline_shows_the_latest_revision_live() -> None:
    timeline = Timeline(history(3))
    assert (timeline.selected, timeline.latest, timeline.following) == (3, 3, True)
    assert timeline.header() == "revision 3 of 3 · live"
    second = timeline.commit(2)
    assert second is not None and second.revision == 2
    assert timeline.in_force == [0, 1, 1, 1, 1, 2, 2, 3]


def test_keys_move_one_revision_and_stop_at_either_end() -> None:
    timeline = Timeline(history(3))
    timeline.back()
    assert (timeline.selected, timeline.following) == (2, False)
    assert timeline.header() == "revision 2 of 3 · 1 newer (End: latest, live)"
    timeline.home()
    timeline.back()
    assert timeline.selected == 1
    timeline.forward()
    timeline.forward()
    timeline.forward()
    assert (timeline.selected, timeline.following) == (3, True)


def test_a_commit_moves_a_following_view_but_not_one_scrubbed_back() -> None:
    timeline = Timeline(history(2))
    timeline.add(entry(20, "committed", 3), plan(3, "in_progress"))
    assert (timeline.selected, timeline.plan(3)) == (3, plan(3, "in_progress"))
    timeline.home()
    timeline.add(entry(21, "committed", 4))
    assert (timeline.selected, timeline.latest, timeline.newer) == (1, 4, 3)
    timeline.end()
    timeline.add(entry(22, "committed", 5))
    assert timeline.selected == 5


def test_an_entry_already_known_is_not_added_twice() -> None:
    timeline = Timeline(history(2))
    count = len(timeline.entries)
    assert not timeline.add(entry(3, "committed", 1))
    assert len(timeline.entries) == count
    assert timeline.add(entry(99, "proposed"))


def test_a_session_without_commits_is_at_revision_zero_of_zero() -> None:
    timeline = Timeline([entry(2, "proposed"), entry(3, "rejected")])
    timeline.back()
    timeline.forward()
    assert timeline.header() == "revision 0 of 0 · live"
    assert plan_text(None, 0).plain == "no plan committed yet"
    assert transitions_text(timeline.commit(0)).plain == "nothing committed yet"


def test_the_plan_text_marks_each_status() -> None:
    text = plan_text(plan(2, "completed", "in_progress", "pending", "cancelled"), 2).plain
    assert text.splitlines() == [
        "Plan r2  strict",
        "[x] Step 0  s0",
        "[>] Step 1  s1",
        "[ ] Step 2  s2",
        "[-] Step 3  s3",
    ]
    assert plan_text(None, 5).plain == "loading revision 5…"


def test_transitions_and_history_details() -> None:
    commit = entry(3, "committed", 1).model_copy(
        update={
            "transitions": [
                Transition.model_validate({"step_id": "a", "from": None, "to": "in_progress"}),
                Transition.model_validate(
                    {"step_id": "b", "from": "in_progress", "to": "completed"}
                ),
            ]
        }
    )
    lines = transitions_text(commit).plain.splitlines()
    assert lines[0] == "committed 2026-01-02 03:07"  # to the minute, never the seconds
    assert lines[2:] == ["∅   → [>] a", "[>] → [x] b"]
    assert entry_details(commit) == "a: ∅→in_progress, b: in_progress→completed"
    rejected = entry(4, "rejected").model_copy(
        update={"violations": [Violation(code="step_removed", message="m", step_id="a")]}
    )
    assert entry_details(rejected) == "step_removed"
    two_hours_east = timezone(timedelta(hours=2))
    assert when(datetime(2026, 1, 2, 5, 6, 59, tzinfo=two_hours_east)) == "2026-01-02 03:06"


async def lines_of(text: str) -> AsyncIterator[str]:
    for line in text.split("\n"):
        yield line


def test_server_sent_events_are_parsed_into_feed_events() -> None:
    data = {
        "session_id": "s",
        "store_position": 42,
        "id": 42,
        **entry(7, "committed", 3).model_dump(mode="json", by_alias=True),
        "plan": plan(3, "in_progress").model_dump(mode="json"),
    }
    stream = (
        ": ping\n\n"
        f"id: 42\nevent: plan.committed\ndata: {json.dumps(data)}\n\n"
        'event: plan.proposed\ndata: {"a":\ndata: 1}\n\n'
    )

    async def collect() -> list[ServerSentEvent]:
        return [message async for message in parse_events(lines_of(stream))]

    messages = asyncio.run(collect())
    assert [(m.event, m.id) for m in messages] == [
        ("plan.committed", "42"),
        ("plan.proposed", "42"),
    ]
    assert json.loads(messages[1].data) == {"a": 1}
    event = feed_event(messages[0])
    assert (event.store_position, event.kind, event.entry.revision) == (42, "committed", 3)
    assert event.plan == plan(3, "in_progress")
