"""Readers racing writers (issue 24). The store-wide feed, read while several writers (each
with connections of its own, as processes have) commit at once, gives every event once, in
store order, on both databases; on PostgreSQL, whose writers take no table lock, a reader
never passes a transaction still in flight, forced here too. (With the readers' horizon taken
out, the forced test fails every run and the racing one 1 run of 4.) Transaction ids are
server-wide: another test's transaction in flight holds these readers back too, for as long
as it lasts, so a reader here reads on until it has reached the last write it waits for."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from planledger.service import PlanLedger, core
from planledger.storage.settings import database_settings, postgres_conninfo
from tests.integration.storage import settled as wait_settled

WRITERS = 4
COMMITS = 12
ROUNDS = 3


def revision_plan(revision: int) -> dict[str, Any]:
    """Revision `revision` of a strict plan: the steps before it completed, it in progress."""

    def status(k: int) -> str:
        return "completed" if k < revision else "in_progress" if k == revision else "pending"

    steps = [{"id": f"s{k}", "title": f"Step {k}", "status": status(k)} for k in range(COMMITS)]
    return {"expected_revision": revision, "title": "Race", "steps": steps}


def every_position(reader: PlanLedger, count: int) -> list[int]:
    """The first `count` positions of the feed (waiting, up to 30 s, for them to be read)."""
    positions: list[int] = []
    deadline = time.monotonic() + 30
    while len(positions) < count and time.monotonic() < deadline:
        page = reader.events_after(positions[-1] if positions else 0)
        positions += [event.store_position for event in page]
        if not page:
            time.sleep(0.01)
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
    expected = ROUNDS * WRITERS * COMMITS * 2  # each proposal and its commit
    final = every_position(reader, expected)
    assert len(final) == expected
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
    last_writes: list[int] = []  # the last position each writer wrote

    def follow() -> None:
        position = seen[-1] if seen else 0
        try:
            start.wait(timeout=30)
            while True:
                last_pass = stop.is_set()  # reads on after the writers are done
                page = reader.events_after(position)
                seen.extend(event.store_position for event in page)
                if page and not last_pass:
                    pages.append(len(page))
                position = page[-1].store_position if page else position
                if last_pass and not page:
                    if position >= max(last_writes, default=0) or time.monotonic() > deadline:
                        return
                    time.sleep(0.01)  # held back by a transaction still in flight
        except BaseException as error:  # surfaced below
            errors.append(error)

    def write(writer: PlanLedger, session_id: str) -> None:
        try:
            start.wait(timeout=30)
            for revision in range(COMMITS):
                decision = writer.submit(session_id, revision_plan(revision))
                assert decision.status == "committed", decision
            assert decision.store_position is not None
            last_writes.append(decision.store_position)
        except BaseException as error:
            errors.append(error)

    follower = threading.Thread(target=follow)
    pairs = zip(writers, sessions, strict=True)
    threads = [threading.Thread(target=write, args=pair) for pair in pairs]
    for thread in [follower, *threads]:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    deadline = time.monotonic() + 30  # (read by the follower once `stop` is set)
    stop.set()
    follower.join(timeout=60)
    assert not follower.is_alive() and not errors, errors
    return len(pages)


def test_no_reader_passes_a_transaction_still_in_flight(
    postgres_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    """PostgreSQL writers take no table lock, so a transaction that began writing first may
    commit last, with the lower store positions. Forced here: one holds its transaction open
    while another writer commits; no store-wide reader goes past the first until it ends, and
    then each reads its row before the other's."""
    writer, reader = new_ledger(postgres_url), new_ledger(postgres_url)
    writer.open_session("before")
    wait_settled(reader.views)
    settled = reader.health().store_position
    assert [row[0] for row in reader.views.read_event_rows(0, 100)][-1] == settled
    schema = postgres_url.rpartition("=")[2]
    with psycopg.connect(postgres_conninfo(database_settings(postgres_url))) as held:
        held.execute(  # begins writing: its position is taken now, below the next writer's
            f'INSERT INTO "{schema}".planledger_events '
            "(originator_id, originator_version, topic, state) VALUES ('held', 1, 't', '{}') "
            "RETURNING notification_id"
        )
        writer.submit("before", revision_plan(0))  # commits while `held` is in flight
        reader.runner.catch_up()  # (the ledger's catch-up would wait out CATCH_UP_WAIT)
        assert reader.health().store_position == settled
        assert reader.views.batch_bounds(settled, 100) == (0, settled)
        assert reader.views.read_event_rows(settled, 100) == []
        assert reader.events_after(0, "before") == []  # the feed waits too
        assert reader.plan("before").revision == 1  # (the writer stored its views)
        held.commit()
    wait_settled(reader.views)
    rows = reader.views.read_event_rows(settled, 100)
    assert [row[1] for row in rows] == ["held", "plan:before", "plan:before"]
    reader.catch_up()
    assert [e.kind for e in reader.events_after(0, "before")] == ["proposed", "committed"]
    assert reader.health().store_position == rows[-1][0]


def test_a_store_written_with_the_table_lock_migrates_on_first_start(
    postgres_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    """A store of schema 6 (positions 1, 2, ... from the table's sequence) keeps its positions;
    the first start moves new ones into their transactions' range, above them all."""
    before = new_ledger(postgres_url)
    before.open_session("old")
    before.submit("old", revision_plan(0))
    plan = before.plan("old")
    before.close()
    schema = postgres_url.rpartition("=")[2]
    events = f'"{schema}".planledger_events'
    with psycopg.connect(postgres_conninfo(database_settings(postgres_url))) as conn:
        sequence = conn.execute(
            "SELECT pg_get_serial_sequence(%s, 'notification_id')", (events,)
        ).fetchone()[0]
        conn.execute(
            f"ALTER TABLE {events} ALTER COLUMN notification_id SET DEFAULT nextval('{sequence}')"
        )
        conn.execute(
            f"UPDATE {events} e SET notification_id = n.row FROM (SELECT notification_id, "
            f"row_number() OVER (ORDER BY notification_id) AS row FROM {events}) n "
            "WHERE e.notification_id = n.notification_id"
        )
        count = conn.execute(f"SELECT count(*) FROM {events}").fetchone()[0]
        conn.execute("SELECT setval(%s, %s)", (sequence, count))
        conn.execute(f"UPDATE \"{schema}\".planledger_meta SET value = 6 WHERE key = 'schema'")
    after = new_ledger(postgres_url)  # migrates, and rebuilds the views it dropped
    assert after.plan("old") == plan
    assert after.verify().ok
    decision = after.submit("old", revision_plan(1))
    assert decision.store_position is not None and decision.store_position > count
    after.catch_up()
    positions = [event.store_position for event in after.events_after(0)]
    assert positions[:-2] == [3, 4] == list(range(3, count + 1))  # (1, 2: the openings)
    assert positions[-2:] == [decision.store_position - 1, decision.store_position]


def test_a_write_stored_without_its_views_waits_for_them(
    postgres_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    """A write whose session's view is behind (here: reset, as a rebuild starts) is stored
    without its views and caught up before it returns, also while an earlier transaction
    still in flight holds the runner back."""
    writer = new_ledger(postgres_url)
    writer.open_session("behind")
    writer.submit("behind", revision_plan(0))
    writer.views.reset()
    with psycopg.connect(postgres_conninfo(database_settings(postgres_url))) as held:
        held.execute("SELECT pg_current_xact_id()")  # in flight, below the next write
        release = threading.Timer(0.3, held.commit)
        release.start()
        decision = writer.submit("behind", revision_plan(1))
        release.join()
    assert decision.status == "committed"
    found = writer.views.plan_view("behind")
    assert found is not None and found[0].revision == 2


def test_a_transaction_holding_the_readers_back_is_a_health_warning(
    postgres_url: str, new_ledger: Callable[[str], PlanLedger], monkeypatch: Any
) -> None:
    """A transaction holding an id keeps every reader of the store's order below it: health
    names it once events wait behind it (and for longer than HELD_BACK_WARNING), and a write
    that could not be read back within CATCH_UP_WAIT says why. (Ids are server-wide: other
    tests' transactions may be named too, so each check looks for this one's.)"""
    monkeypatch.setattr(core, "CATCH_UP_WAIT", 0.2)
    writer = new_ledger(postgres_url)
    writer.open_session("held")
    writer.submit("held", revision_plan(0))
    with psycopg.connect(postgres_conninfo(database_settings(postgres_url))) as held:
        held.execute("SELECT pg_current_xact_id()")
        pid = held.info.backend_pid
        monkeypatch.setattr(core, "HELD_BACK_WARNING", 0.0)

        def named(warnings: Sequence[str]) -> list[str]:
            return [warning for warning in warnings if f"process {pid} " in warning]

        assert named(writer.health().warnings) == []  # nothing waits behind it yet
        writer.views.reset()  # (the next write is stored without its views)
        decision = writer.submit("held", revision_plan(1))
        assert decision.status == "committed"
        (note,) = named(writer.warnings)
        assert "idle in transaction" in note
        assert len(named(writer.health().warnings)) == 1
        monkeypatch.setattr(core, "HELD_BACK_WARNING", 3600.0)
        assert named(writer.health().warnings) == []  # not held for that long
        monkeypatch.setattr(core, "HELD_BACK_WARNING", 0.0)
        held.commit()
        assert named(writer.health().warnings) == []
