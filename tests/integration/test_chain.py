"""The hash chain on both databases: every writer chains its events; every edit that keeps the
plan rules (a title, an explanation, two payloads swapped, an event inserted) is caught by
verify, by reads and by a rebuild, naming the session, the position and `chain_broken`; a
store written before the chain is chained once when it opens."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from domain.chain import GENESIS, canonical, first_break, link
from domain.errors import CorruptHistory
from planledger.service import PlanLedger, open_planledger
from planledger.storage.scan import ChainedEvent
from tests.integration.storage import (
    corrupt_at,
    delete_events,
    edit_event,
    insert_before,
    settled,
    swap_states,
)


def codex(*steps: tuple[str, str], explanation: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"plan": [{"step": text, "status": s} for text, s in steps]}
    if explanation is not None:
        body["explanation"] = explanation
    return body


@pytest.fixture
def ledger(database_url: str) -> Iterator[PlanLedger]:
    """Session `s1`: plan events 1 (created), 2-3 (a commit), 4-5 (a commit with an
    explanation), 6-7 (a rejection), 8-9 (a commit); a goal; session `s2` untouched."""
    app = open_planledger(database_url, home=None)
    for sid in ("s1", "s2"):
        app.open_session(sid)
        app.start_goal(sid, "g", "Ship it")
        app.submit(sid, codex(("Look", "in_progress"), ("Fix", "pending")))
        app.submit(sid, codex(("Look", "completed"), ("Fix", "in_progress"), explanation="why"))
        app.submit(sid, codex(("Look", "in_progress"), ("Fix", "in_progress")))  # rejected
        app.submit(sid, codex(("Look", "completed"), ("Fix", "completed")))
    settled(app.views)
    yield app
    app.close()


def rows(url: str, originator_id: str) -> list[ChainedEvent]:
    sql = "SELECT originator_id, originator_version, topic, state, chain FROM {} "
    sql += "WHERE originator_id = {} ORDER BY originator_version"
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            found = conn.execute(sql.format("stored_events", "?"), (originator_id,)).fetchall()
    else:
        dsn, schema = url.split("?schema=")
        with psycopg.connect(dsn) as conn:
            table = f'"{schema}".planledger_events'
            found = conn.execute(sql.format(table, "%s"), (originator_id,)).fetchall()
    return [ChainedEvent(o, v, t, bytes(s), c) for o, v, t, s, c in found]


def assert_linked(url: str, *originator_ids: str) -> None:
    """Every stored chain of these streams is the one `link` gives after the one before."""
    for originator_id in originator_ids:
        previous = GENESIS
        for row in rows(url, originator_id):
            expected = link(previous, row.topic, originator_id, row.originator_version, row.state)
            assert row.chain == expected, (originator_id, row.originator_version)
            previous = expected


def test_every_event_is_chained_over_its_canonical_bytes(
    ledger: PlanLedger, database_url: str
) -> None:
    for originator_id in ("plan:s1", "session:s1", "plan:s2"):
        for row in rows(database_url, originator_id):
            assert canonical(row.state) == row.state  # stored as canonical JSON
    assert_linked(database_url, "plan:s1", "session:s1", "plan:s2")
    assert ledger.verify().ok
    assert ledger.report("s1").chain_head == rows(database_url, "plan:s1")[-1].chain


def retitle(data: dict[str, Any]) -> None:
    data["snapshot"]["_data_"]["steps"][0]["title"] = "Look somewhere else"


def reexplain(data: dict[str, Any]) -> None:
    data["explanation"] = "a reason given later"


def inserted(url: str) -> None:
    """A proposal and its commit copied, chains and all, in before the rejection (6-7)."""
    proposal, commit = (row for row in rows(url, "plan:s1") if row.originator_version in (4, 5))
    for row in (commit, proposal):
        insert_before(url, "plan:s1", 6, row.topic, row.state, row.chain)


# The edit, where a replay finds it, and where the fold finds it (it meets events in store
# order: rows inserted later come last, after the events moved to make room for them).
TAMPERINGS: dict[str, tuple[Callable[[str], None], int, int]] = {
    "a step title": (lambda url: edit_event(url, "plan:s1", 5, retitle, rechain=False), 5, 5),
    "an explanation": (
        lambda url: edit_event(url, "plan:s1", 4, reexplain, rechain=False),
        4,
        4,
    ),
    "two payloads swapped": (lambda url: swap_states(url, "plan:s1", 2, 4), 2, 2),
    "an event inserted": (inserted, 6, 8),
}


@pytest.mark.parametrize("tampering", TAMPERINGS)
def test_an_edit_that_keeps_the_rules_breaks_the_chain_for_every_reader(
    ledger: PlanLedger,
    database_url: str,
    new_ledger: Callable[[str], PlanLedger],
    tampering: str,
) -> None:
    tamper, position, folded_at = TAMPERINGS[tampering]
    tamper(database_url)
    reader = new_ledger(database_url)
    report = reader.verify()
    assert [(p.session_id, p.position, p.rule) for p in report.problems] == [
        ("s1", position, "chain_broken")
    ]
    fresh = new_ledger(database_url)
    for read in (
        lambda: fresh.plan("s1"),
        lambda: fresh.plan("s1", revision=1),
        lambda: fresh.history("s1"),
    ):
        assert corrupt_at(read) == (position, "chain_broken")
    assert fresh.compaction("s1").state == "unreadable"
    assert fresh.plan("s2").revision == 3  # every other session reads on
    fresh.runner.rebuild()  # the fold judges the chain too
    assert fresh.runner.corrupt["s1"].rule == "chain_broken"
    assert fresh.runner.corrupt["s1"].position == folded_at
    assert set(fresh.runner.corrupt) == {"s1"}


def test_a_rewritten_history_with_a_valid_chain_is_left_to_the_rules(
    ledger: PlanLedger, database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    def reopened(data: dict[str, Any]) -> None:  # "Look" back in progress: breaks a rule
        data["snapshot"]["_data_"]["steps"][0]["status"] = "in_progress"
        data["snapshot"]["_data_"]["steps"][1]["status"] = "pending"

    edit_event(database_url, "plan:s1", 9, reopened)  # chained again, as an attacker might
    (problem,) = new_ledger(database_url).verify().problems
    assert problem.rule == "snapshot_mismatch" and problem.position == 9


def test_the_last_events_gone_are_caught_by_a_read_of_the_views_made_from_them(
    ledger: PlanLedger, database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    delete_events(database_url, "plan:s1", 9, rechain=False)
    reader = new_ledger(database_url)
    assert corrupt_at(lambda: reader.plan("s1")) == (9, "chain_broken")
    (problem,) = reader.verify().problems  # verify compares the stream with its views too
    assert (problem.session_id, problem.position, problem.rule) == ("s1", 9, "chain_broken")


def test_a_store_written_before_the_chain_is_chained_once_when_it_opens(
    ledger: PlanLedger, database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    before = {o: rows(database_url, o) for o in ("plan:s1", "session:s1", "plan:s2")}
    ledger.close()
    unchained(database_url)
    reopened = new_ledger(database_url)
    assert reopened.verify().ok
    for originator_id, old in before.items():
        again = rows(database_url, originator_id)
        assert [row.state for row in again] == [row.state for row in old]  # never rewritten
        assert first_break(again) is None
    reopened.submit("s1", codex(("Look", "completed"), ("Fix", "completed"), ("Ship", "pending")))
    assert reopened.verify().ok and reopened.plan("s1").revision == 4


def unchained(url: str) -> None:
    """The store as a ledger before the chain left it: no chains, states in the library's key
    order (not sorted), schema version 5."""
    unsorted = {
        key: json.dumps(json.loads(state), separators=(",", ":"), ensure_ascii=False).encode()
        for key, state in states(url).items()
    }
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            conn.executemany(
                "UPDATE stored_events SET state = ?, chain = NULL "
                "WHERE originator_id = ? AND originator_version = ?",
                [(state, *key) for key, state in unsorted.items()],
            )
            conn.execute("PRAGMA user_version = 5")
        return
    dsn, schema = url.split("?schema=")
    with psycopg.connect(dsn) as conn:
        conn.cursor().executemany(
            f'UPDATE "{schema}".planledger_events SET state = %s, chain = NULL '
            "WHERE originator_id = %s AND originator_version = %s",
            [(state, *key) for key, state in unsorted.items()],
        )
        conn.execute(f"UPDATE \"{schema}\".planledger_meta SET value = 5 WHERE key = 'schema'")


def states(url: str) -> dict[tuple[str, int], bytes]:
    sql = "SELECT originator_id, originator_version, state FROM {}"
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            found = conn.execute(sql.format("stored_events")).fetchall()
    else:
        dsn, schema = url.split("?schema=")
        with psycopg.connect(dsn) as conn:
            found = conn.execute(sql.format(f'"{schema}".planledger_events')).fetchall()
    return {(o, v): bytes(s) for o, v, s in found}


def test_a_session_event_inserted_after_the_views_caught_up_marks_its_session_corrupt(
    ledger: PlanLedger, database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    """A session stream's event inserted by SQL once the views passed its neighbours (the plan
    events beside it in the catch-up are already in their views): the catch-up of the next
    process marks the session corrupt where it breaks and reads on, never failing itself."""
    ledger.catch_up()
    opened = rows(database_url, "session:s1")[0]
    insert_before(database_url, "session:s1", 2, opened.topic, opened.state, opened.chain)
    settled(ledger.views)
    fresh = new_ledger(database_url)  # its catch-up meets the inserted event
    assert fresh.runner.corrupt["s1"].rule == "chain_broken"
    assert fresh.runner.corrupt["s1"].position == 2
    assert [(p.session_id, p.position, p.rule) for p in fresh.verify().problems] == [
        ("s1", 2, "chain_broken")
    ]
    with pytest.raises(CorruptHistory):
        fresh.plan("s1")
    assert fresh.plan("s2").revision == 3


@contextmanager
def chain_trigger_off(postgres_url: str) -> Iterator[None]:
    dsn, schema = postgres_url.split("?schema=")
    table = f'"{schema}".planledger_events'
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"ALTER TABLE {table} DISABLE TRIGGER planledger_chain")
        try:
            yield
        finally:
            conn.execute(f"ALTER TABLE {table} ENABLE TRIGGER planledger_chain")


def test_a_postgres_writer_chains_what_follows_its_own_writes_and_the_trigger_the_rest(
    postgres_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    """Where a writer knows the chain before (a new stream, or the stream's last event is its
    own), it writes the chain itself (the trigger is off meanwhile); where another writer
    wrote since, the trigger computes it; either way the chain is the one `link` gives."""
    writer, other = new_ledger(postgres_url), new_ledger(postgres_url)
    with chain_trigger_off(postgres_url):
        writer.open_session("s")
        writer.submit("s", codex(("Look", "in_progress"), ("Fix", "pending")))
        writer.submit("s", codex(("Look", "completed"), ("Fix", "in_progress")))
    assert len(rows(postgres_url, "plan:s")) == 5
    assert all(row.chain for row in rows(postgres_url, "plan:s"))
    other.submit("s", codex(("Look", "completed"), ("Fix", "completed")))
    # The writer's last chain is no longer the stream's: its retry leaves it to the trigger.
    writer.submit("s", codex(("Look", "completed"), ("Fix", "completed"), ("Ship", "pending")))
    assert_linked(postgres_url, "plan:s", "session:s")
    assert len(rows(postgres_url, "plan:s")) == 9
    assert new_ledger(postgres_url).verify().problems == []


def test_writers_taking_turns_on_one_session_store_the_chains_link_gives(
    database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    """Each writer remembers the chain of its own last write: after the other wrote, that
    chain is stale and must not be built on."""
    first, second = new_ledger(database_url), new_ledger(database_url)
    first.open_session("s")
    first.submit("s", codex(("Look", "in_progress"), ("Fix", "pending")))
    second.submit("s", codex(("Look", "completed"), ("Fix", "in_progress")))
    first.submit("s", codex(("Look", "completed"), ("Fix", "completed")))
    second.submit("s", codex(("Look", "completed"), ("Fix", "completed"), ("Ship", "pending")))
    first.set_mode("s", "plan")
    assert_linked(database_url, "plan:s", "session:s")
    assert len(rows(database_url, "plan:s")) == 9
    assert new_ledger(database_url).verify().problems == []
