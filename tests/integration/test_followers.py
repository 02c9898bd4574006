"""Long-running processes on one PostgreSQL store: one follower (the holder of an advisory
lock) catches the views up after every writer and wakes the others, whose feeds follow the
position it moved; when it ends, another takes the lead; a role that may not write never
takes it; a lost wake-up delays the feeds by at most the leader's IDLE_CHECK."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import psycopg

from planledger.service import PlanLedger
from planledger.storage.commit_notifier import CommitNotifier
from planledger.storage.postgres_recorder import ViewsPostgresRecorder
from planledger.storage.postgres_views import LEAD_KEY
from planledger.storage.settings import database_settings, postgres_conninfo
from tests.conftest import as_reader
from tests.integration.test_readers_race import revision_plan

WAIT = 10.0  # seconds (other tests' transactions on the server may hold the horizon back)
FEED_IDLE = 60.0  # a feed's own wake-up: far later than WAIT, so only a wake-up shows it


def leaders(url: str) -> int:
    """How many connections hold this store's lead."""
    schema = url.rpartition("=")[2]
    with psycopg.connect(postgres_conninfo(database_settings(url))) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND classid = %s AND objid = hashtext(%s)::oid",
            (LEAD_KEY, f'"{schema}".planledger_tracking'),
        ).fetchone()
    return int(row[0]) if row else 0


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def commit_reaches_every_feed(writer: PlanLedger, feeds: list[PlanLedger], revision: int) -> None:
    """Each follower's live feed, waiting on its own wake-ups, yields `writer`'s commit."""

    async def next_commit(ledger: PlanLedger, after: int) -> int:
        async for event in ledger.follow("s", after, idle_timeout=FEED_IDLE):
            if event.kind == "committed":
                return event.store_position
        raise AssertionError("the feed ended")

    async def run() -> None:
        after = writer.store_position()
        following = [asyncio.create_task(next_commit(ledger, after)) for ledger in feeds]
        await asyncio.sleep(0.2)  # (each feed has read what there was, and waits)
        decision = await asyncio.to_thread(writer.submit, "s", revision_plan(revision))
        seen = await asyncio.wait_for(asyncio.gather(*following), WAIT)
        assert seen == [decision.store_position] * len(feeds)

    asyncio.run(run())


def test_one_follower_catches_up_for_all_and_another_leads_when_it_ends(
    postgres_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    writer = new_ledger(postgres_url)  # a one-shot writer: it leaves the position to them
    writer.open_session("s")
    first, second = new_ledger(postgres_url), new_ledger(postgres_url)
    for ledger in (first, second):
        ledger.follow_files()  # (no home: the live feed's follower alone)
    wait_until(lambda: leaders(postgres_url) == 1, "no follower took the lead")
    commit_reaches_every_feed(writer, [first, second], 0)
    assert leaders(postgres_url) == 1

    first.close()  # if it led, its connection ends, and the lock with it
    wait_until(lambda: leaders(postgres_url) == 1, "the other follower did not take the lead")
    commit_reaches_every_feed(writer, [second], 1)


def test_a_follower_that_may_not_write_never_leads(
    postgres_url: str, reader_role: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    writer = new_ledger(postgres_url)
    writer.open_session("s")
    reader = new_ledger(as_reader(postgres_url, reader_role))
    reader.follow_files()
    time.sleep(1.5)  # (it has tried by now: LEAD_RETRY)
    assert leaders(postgres_url) == 0
    leader = new_ledger(postgres_url)
    leader.follow_files()
    wait_until(lambda: leaders(postgres_url) == 1, "the follower that may write did not lead")
    commit_reaches_every_feed(writer, [leader, reader], 0)


def test_a_commit_held_above_the_horizon_reaches_the_feeds_once_the_hold_ends(
    postgres_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    """The leader looks again while events wait above the horizon: a commit made while an
    earlier transaction was in flight reaches the feeds when that one ends, with no later
    commit to wake anyone."""
    writer = new_ledger(postgres_url)
    writer.open_session("s")
    leader = new_ledger(postgres_url)
    leader.follow_files()
    wait_until(lambda: leaders(postgres_url) == 1, "no follower took the lead")
    with psycopg.connect(postgres_conninfo(database_settings(postgres_url))) as held:
        held.execute("SELECT pg_current_xact_id()")  # in flight, below the next commit
        threading.Timer(0.5, held.commit).start()
        commit_reaches_every_feed(writer, [leader], 0)


def test_a_commit_whose_wake_up_was_lost_reaches_the_feeds(
    postgres_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    """A writer killed between its commit and its NOTIFY (here: one that never sends) leaves
    no wake-up: the leader still looks at the store every IDLE_CHECK seconds."""
    writer = new_ledger(postgres_url)
    recorder = writer.ledger.recorder
    assert isinstance(recorder, ViewsPostgresRecorder)
    recorder.notifier = CommitNotifier(lambda: None)
    writer.open_session("s")
    leader = new_ledger(postgres_url)
    leader.follow_files()
    wait_until(lambda: leaders(postgres_url) == 1, "no follower took the lead")
    commit_reaches_every_feed(writer, [leader], 0)
