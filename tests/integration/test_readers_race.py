"""Readers racing writers (issue 24): the store-wide feed, read while several writers (each
with connections of its own, as processes have) commit at once, gives every event once, in
store order, on both databases. (With the writers' table lock taken out of the PostgreSQL
write path, and nothing else changed, it failed 4 runs of 4: the guard for the design that
replaces the lock.)"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from planledger.service import PlanLedger

WRITERS = 4
COMMITS = 12
ROUNDS = 3


def revision_plan(revision: int) -> dict[str, Any]:
    """Revision `revision` of a strict plan: the steps before it completed, it in progress."""

    def status(k: int) -> str:
        return "completed" if k < revision else "in_progress" if k == revision else "pending"

    steps = [{"id": f"s{k}", "title": f"Step {k}", "status": status(k)} for k in range(COMMITS)]
    return {"expected_revision": revision, "title": "Race", "steps": steps}


def every_position(reader: PlanLedger) -> list[int]:
    positions: list[int] = []
    while page := reader.events_after(positions[-1] if positions else 0):
        positions += [event.store_position for event in page]
    return positions


def test_the_feed_read_during_racing_writers_skips_nothing_and_repeats_nothing(
    database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    writers = [new_ledger(database_url) for _ in range(WRITERS)]
    reader = new_ledger(database_url)
    seen: list[int] = []
    pages = 0  # pages read while the writers wrote
    for round_ in range(ROUNDS):
        pages += race(writers, reader, [f"race{round_}-{n}" for n in range(WRITERS)], seen)
    final = every_position(reader)
    assert len(final) == ROUNDS * WRITERS * COMMITS * 2  # each proposal and its commit
    assert final == sorted(set(final))  # store order, each event once
    assert seen == final  # the racing reader saw the same: nothing skipped, nothing twice
    assert pages > ROUNDS  # it read while they wrote


def race(
    writers: list[PlanLedger], reader: PlanLedger, sessions: list[str], seen: list[int]
) -> int:
    """The writers each commit COMMITS revisions of a session of their own, all at once, while
    `reader` follows the feed from the last position in `seen`, adding what it reads; returns
    how many pages it read while they wrote."""
    for writer, session_id in zip(writers, sessions, strict=True):
        writer.open_session(session_id)
    start, stop = threading.Barrier(len(writers) + 1), threading.Event()
    pages: list[int] = []
    errors: list[BaseException] = []

    def follow() -> None:
        position = seen[-1] if seen else 0
        try:
            start.wait(timeout=30)
            while True:
                last_pass = stop.is_set()  # one more read after the writers are done
                page = reader.events_after(position)
                seen.extend(event.store_position for event in page)
                if page and not last_pass:
                    pages.append(len(page))
                position = page[-1].store_position if page else position
                if last_pass and not page:
                    return
        except BaseException as error:  # surfaced below
            errors.append(error)

    def write(writer: PlanLedger, session_id: str) -> None:
        try:
            start.wait(timeout=30)
            for revision in range(COMMITS):
                decision = writer.submit(session_id, revision_plan(revision))
                assert decision.status == "committed", decision
        except BaseException as error:
            errors.append(error)

    follower = threading.Thread(target=follow)
    pairs = zip(writers, sessions, strict=True)
    threads = [threading.Thread(target=write, args=pair) for pair in pairs]
    for thread in [follower, *threads]:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    stop.set()
    follower.join(timeout=60)
    assert not follower.is_alive() and not errors, errors
    return len(pages)
