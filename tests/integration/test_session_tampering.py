"""Tampering with a *session* stream (`session:<id>`: SessionOpened, CollaborationModeChanged,
goal events) by SQL, on both databases. The promise (SPEC, "Audit"): an edited, deleted
(against a checkpoint), inserted or reordered event is reported by `verify` naming session,
position and `chain_broken`; every reader treats the session as corrupt history; the other
sessions read on; and no process crashes when it opens the store (a catch-up), catches up or
rebuilds the views. A history rewritten with its chain computed again is left to the rules:
whatever they say, nothing crashes and verify says it the same way every time."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from starlette.testclient import TestClient

from planledger.clients.http.app import create_app
from planledger.service import PlanLedger, open_planledger
from planledger.service.keys import signing_key
from tests.integration.storage import (
    chain_again,
    corrupt_at,
    delete_events,
    edit_event,
    insert_before,
    settled,
    swap_states,
)
from tests.integration.test_chain import rows

S1 = "session:s1"
Tamper = Callable[[str], None]


@pytest.fixture
def ledger(database_url: str) -> Iterator[PlanLedger]:
    """Sessions `s1` and `s2` alike. Session stream: 1 SessionOpened (cwd `/work/<id>`),
    2 GoalStarted `g`, 3 mode `plan`, 4 GoalBlocked, 5 GoalResumed, 6 mode `work`. Plan
    stream: 1 created, 2-3 a commit, 4-5 a commit naming goal `g` (revision 2)."""
    app = open_planledger(database_url, home=None)
    for sid in ("s1", "s2"):
        app.open_session(sid, source="test", cwd=f"/work/{sid}")
        app.start_goal(sid, "g", "Ship it")
        app.set_mode(sid, "plan")
        app.move_goal(sid, "g", "block")
        app.move_goal(sid, "g", "resume")
        app.set_mode(sid, "work")
        for status, goal in (("in_progress", None), ("completed", "g")):
            decision = app.submit(sid, strict(status, goal))
            assert decision.status == "committed", decision
    settled(app.views)
    yield app
    app.close()


def strict(look: str, goal_id: str | None) -> dict[str, Any]:
    """A plan in the strict form: "Look" at `look`, "Fix" after it, naming `goal_id`."""
    fix = "pending" if look == "in_progress" else "in_progress"
    steps = [
        {"id": "look", "title": "Look", "status": look},
        {"id": "fix", "title": "Fix", "status": fix},
    ]
    return {"title": "Ship", "goal_id": goal_id, "steps": steps}


# -- the tamperings -------------------------------------------------------------------------


def edited(version: int, rechain: bool = False, **fields: Any) -> Tamper:
    """Fields of one s1 session event's state set to new values."""

    def change(data: dict[str, Any]) -> None:
        data.update(fields)

    return lambda url: edit_event(url, S1, version, change, rechain=rechain)


def copied(version: int, before: int) -> Tamper:
    """The s1 session event at `version` copied, chain and all, in before `before`."""

    def tamper(url: str) -> None:
        (row,) = (row for row in rows(url, S1) if row.originator_version == version)
        insert_before(url, S1, before, row.topic, row.state, row.chain)

    return tamper


def appended(version: int, rechain: bool = False) -> Tamper:
    """The s1 session event at `version` copied, chain and all, after the stream's last (7)."""

    def tamper(url: str) -> None:
        (row,) = (row for row in rows(url, S1) if row.originator_version == version)
        insert_before(url, S1, 7, row.topic, row.state, row.chain)
        if rechain:
            chain_again(url, S1)

    return tamper


def deleted(*versions: int, rechain: bool = False) -> Tamper:
    return lambda url: delete_events(url, S1, *versions, rechain=rechain)


def swapped(first: int, second: int) -> Tamper:
    return lambda url: swap_states(url, S1, first, second)


# Each breaks the chain: the tampering, the position verify and the readers name, and the
# position a rebuild's fold (which meets the events in store order: an inserted row comes
# last, after the events moved to make room for it) first finds broken.
BROKEN: dict[str, tuple[Tamper, int, int]] = {
    "opening: cwd edited": (edited(1, cwd="/elsewhere"), 1, 1),
    "opening: mode edited": (edited(1, mode="plan"), 1, 1),
    "opening: source edited": (edited(1, source="someone-else"), 1, 1),
    "mode change edited": (edited(3, mode="work"), 3, 3),
    "goal objective edited": (edited(2, objective="Ship something else"), 2, 2),
    "goal transition edited": (edited(4, goal_id="h"), 4, 4),
    "two mode changes swapped": (swapped(3, 6), 3, 3),
    "two goal events swapped": (swapped(4, 5), 4, 4),
    "opening and goal swapped": (swapped(1, 2), 1, 1),
    "a mode change deleted": (deleted(3), 4, 4),
    "a goal event deleted": (deleted(4), 5, 5),
    "a mode change inserted": (copied(3, before=5), 5, 6),
    "a goal event inserted": (copied(4, before=6), 6, 7),
    "an opening inserted": (copied(1, before=2), 2, 3),
}

TIMINGS = ("as written", "caught up", "rebuilt")


def tampered(
    ledger: PlanLedger,
    url: str,
    new_ledger: Callable[[str], PlanLedger],
    tamper: Tamper,
    timing: str,
) -> PlanLedger:
    """Tamper with the store (after a catch-up unless `as written`), then open it again as
    another process would (its opening catches the views up) and, for `rebuilt`, rebuild."""
    if timing != "as written":
        ledger.catch_up()
    tamper(url)
    fresh = new_ledger(url)
    if timing == "rebuilt":
        fresh.runner.rebuild()
    fresh.catch_up()  # nothing left to do, and nothing to fail on
    return fresh


def problems_of(app: PlanLedger, session_ids: list[str] | None = None) -> list[tuple[Any, ...]]:
    return [(p.session_id, p.position, p.rule) for p in app.verify(session_ids).problems]


def assert_others_read_on(app: PlanLedger) -> None:
    """s2 reads as it was written; the session list holds each session once."""
    assert app.plan("s2").revision == 2
    assert app.plan("s2", revision=1).revision == 1
    assert len(app.history("s2").entries) == 4
    assert app.session("s2").mode == "work"
    assert app.compaction("s2").state == "present"
    listed = [item.session_id for item in app.sessions().sessions]
    assert sorted(listed) == ["s1", "s2"]


# -- a broken chain -------------------------------------------------------------------------


@pytest.mark.parametrize("timing", TIMINGS)
@pytest.mark.parametrize("tampering", BROKEN)
def test_a_broken_session_chain_is_corrupt_history_for_verify_and_the_plan_readers(
    ledger: PlanLedger,
    database_url: str,
    new_ledger: Callable[[str], PlanLedger],
    tampering: str,
    timing: str,
) -> None:
    """verify names s1, the position and `chain_broken`; plan, history and compaction of s1
    refuse it (before verify marks it and after); s2 reads on; nothing crashes."""
    tamper, position, folded_at = BROKEN[tampering]
    fresh = tampered(ledger, database_url, new_ledger, tamper, timing)
    assert set(fresh.runner.corrupt) <= {"s1"}
    assert all(error.rule == "chain_broken" for error in fresh.runner.corrupt.values())
    # The reads before verify: from the chain itself, or from the mark a fold left.
    marked = {position, folded_at} if fresh.runner.corrupt else {position}
    for read in (
        lambda: fresh.plan("s1"),
        lambda: fresh.plan("s1", revision=1),
        lambda: fresh.history("s1"),
    ):
        at, rule = corrupt_at(read)
        assert rule == "chain_broken" and at in marked
    assert fresh.compaction("s1").state == "unreadable"
    assert_others_read_on(fresh)
    expected = [("s1", position, "chain_broken")]
    assert problems_of(fresh) == expected  # one pass over the store
    assert problems_of(fresh, ["s1"]) == expected  # stream by stream
    assert problems_of(fresh, ["s2"]) == []
    reader = new_ledger(database_url)  # after verify marked it
    assert corrupt_at(lambda: reader.plan("s1")) == (position, "chain_broken")
    assert_others_read_on(reader)
    reader.runner.rebuild()  # a rebuild after it all: still no crash, still the same answer
    assert problems_of(reader) == expected
    assert_others_read_on(reader)


@pytest.mark.parametrize("tampering", BROKEN)
def test_a_rebuild_names_the_session_whose_chain_broke(
    ledger: PlanLedger,
    database_url: str,
    new_ledger: Callable[[str], PlanLedger],
    tampering: str,
) -> None:
    """`projections rebuild` exits 1 naming each corrupt session (runner.corrupt): the fold
    judges the session stream's chain too, and names s1 alone, however often it runs."""
    tamper, _, folded_at = BROKEN[tampering]
    tamper(database_url)
    fresh = new_ledger(database_url)
    for _ in range(2):
        fresh.runner.rebuild()
        assert set(fresh.runner.corrupt) == {"s1"}
        corrupt = fresh.runner.corrupt["s1"]
        assert (corrupt.position, corrupt.rule) == (folded_at, "chain_broken")


@pytest.mark.parametrize("timing", ("caught up", "rebuilt"))
@pytest.mark.parametrize("tampering", BROKEN)
def test_the_session_readers_refuse_a_broken_session_chain(
    ledger: PlanLedger,
    database_url: str,
    new_ledger: Callable[[str], PlanLedger],
    tampering: str,
    timing: str,
) -> None:
    """`session show`, `should_continue` (the session's own readers) refuse the session as
    the plan readers do: they would otherwise show the tampered mode, origin or goals."""
    tamper, position, _ = BROKEN[tampering]
    fresh = tampered(ledger, database_url, new_ledger, tamper, timing)
    for read in (lambda: fresh.session("s1"), lambda: fresh.should_continue("s1")):
        assert corrupt_at(read) == (position, "chain_broken")


def test_http_reads_of_a_broken_session_chain_answer_409(
    ledger: PlanLedger, database_url: str
) -> None:
    """Over HTTP: the tampered session's plan reads answer 409 `corrupt_history`, every other
    session and the session list answer 200."""
    ledger.catch_up()
    edited(1, cwd="/elsewhere")(database_url)
    app = create_app(lambda: open_planledger(database_url, home=None))
    with TestClient(app) as client:
        for path in ("/plan", "/plan/history", "/plan?revision=1"):
            answer = client.get(f"/sessions/s1{path}")
            assert answer.status_code == 409, (path, answer.text)
            assert answer.json()["error"]["code"] == "corrupt_history"
        assert client.get("/sessions/s1/plan/compaction").json()["state"] == "unreadable"
        for path in ("/plan", "/plan/history", ""):
            assert client.get(f"/sessions/s2{path}").status_code == 200
        listed = client.get("/sessions")
        assert listed.status_code == 200
        assert sorted(item["session_id"] for item in listed.json()["sessions"]) == ["s1", "s2"]


def test_http_session_reads_of_a_broken_session_chain_answer_409(
    ledger: PlanLedger, database_url: str
) -> None:
    """Over HTTP: GET /sessions/s1 and its goals answer 409 `corrupt_history` too."""
    ledger.catch_up()
    edited(1, cwd="/elsewhere")(database_url)
    app = create_app(lambda: open_planledger(database_url, home=None))
    with TestClient(app) as client:
        for path in ("", "/goals"):
            answer = client.get(f"/sessions/s1{path}")
            assert answer.status_code == 409, (path, answer.text)
            assert answer.json()["error"]["code"] == "corrupt_history"


# -- a history rewritten with its chain -----------------------------------------------------

# Each rewrite chains the stream again: the chain holds, and what follows is the rules'
# (the problems they find: none, or the one they stop at).
REWRITES: dict[str, tuple[Tamper, list[tuple[str, int, str]]]] = {
    "opening: cwd edited": (edited(1, rechain=True, cwd="/elsewhere"), []),
    "opening: mode edited": (edited(1, rechain=True, mode="plan"), []),
    "opening: an unknown mode": (
        edited(1, rechain=True, mode="bogus"),
        [("s1", 1, "unreadable_event")],
    ),
    "opening: a non-printable cwd": (edited(1, rechain=True, cwd="/a\nb\tc"), []),
    "opening: a NUL in the cwd": (edited(1, rechain=True, cwd="/a\x00b"), []),
    "last mode change: a NUL in the mode": (
        edited(6, rechain=True, mode="wo\x00rk"),
        [("s1", 6, "unreadable_event")],
    ),
    "opening: another session's id": (edited(1, rechain=True, session_id="s2"), []),
    "mode change: an unknown mode": (
        edited(3, rechain=True, mode="bogus"),
        [("s1", 3, "unreadable_event")],
    ),
    "goal objective edited": (edited(2, rechain=True, objective="Ship something else"), []),
    "goal renamed at its start": (
        edited(2, rechain=True, goal_id="h"),
        [("s1", 4, "illegal_goal_transition")],
    ),
    "goal block deleted": (deleted(4, rechain=True), [("s1", 5, "missing_event")]),
    "goal started again at the end": (
        appended(2, rechain=True),
        [("s1", 7, "goal_restarted")],
    ),
    "opening again at the end": (appended(1, rechain=True), [("s1", 7, "unreadable_event")]),
    "last mode change deleted": (deleted(6, rechain=True), []),
}


@pytest.mark.parametrize("timing", TIMINGS)
@pytest.mark.parametrize("rewrite", REWRITES)
def test_a_rewritten_session_history_with_a_valid_chain_is_left_to_the_rules(
    ledger: PlanLedger,
    database_url: str,
    new_ledger: Callable[[str], PlanLedger],
    rewrite: str,
    timing: str,
) -> None:
    """No crash on open, catch-up or rebuild; verify answers the same in one pass and stream
    by stream, before and after a rebuild and from another process; a session it finds corrupt
    is refused by the plan readers from then on; s2 reads on."""
    tamper, expected = REWRITES[rewrite]
    fresh = tampered(ledger, database_url, new_ledger, tamper, timing)
    assert set(fresh.runner.corrupt) <= {"s1"}
    assert_others_read_on(fresh)
    found = problems_of(fresh)
    assert found == expected
    assert problems_of(fresh, ["s1"]) == found
    fresh.runner.rebuild()
    assert set(fresh.runner.corrupt) <= {"s1"}
    assert problems_of(fresh) == found
    reader = new_ledger(database_url)
    assert problems_of(reader) == found
    assert_others_read_on(reader)
    if found:
        assert corrupt_at(lambda: reader.plan("s1")) == found[0][1:]
    else:
        assert reader.plan("s1").revision == 2


# -- deletions, against a checkpoint --------------------------------------------------------


@pytest.fixture
def key(tmp_path: Path) -> Ed25519PrivateKey:
    made, _ = signing_key(None, tmp_path / "home")
    return made


def test_the_last_session_event_deleted_is_caught_against_a_checkpoint(
    ledger: PlanLedger,
    database_url: str,
    new_ledger: Callable[[str], PlanLedger],
    key: Ed25519PrivateKey,
) -> None:
    """The last mode change deleted: the chain and the rules still hold, a checkpoint made
    before tells; the views rebuild without a crash."""
    made = ledger.checkpoint(key)
    deleted(6, rechain=True)(database_url)
    fresh = new_ledger(database_url)
    assert fresh.verify().ok  # only the checkpoint knows
    report = fresh.verify(checkpoint=made, trusted=key.public_key())
    assert [(p.session_id, p.position, p.rule) for p in report.problems] == [
        ("s1", 6, "checkpoint_mismatch")
    ]
    fresh.runner.rebuild()  # no crash; the checkpoint still tells, from another process
    again = new_ledger(database_url).verify(checkpoint=made, trusted=key.public_key())
    assert again.problems == report.problems
    _, rule = corrupt_at(lambda: new_ledger(database_url).plan("s1"))  # verify marked it
    assert rule == "checkpoint_mismatch"
    assert_others_read_on(fresh)


# -- verify's session list ------------------------------------------------------------------


def opening_copied_twice(url: str) -> None:
    copied(1, before=2)(url)
    copied(1, before=4)(url)


COPIES: dict[str, Tamper] = {
    "an opening copied into the middle": copied(1, before=2),
    "an opening copied to the end": appended(1),
    "an opening copied twice": opening_copied_twice,
}


@pytest.mark.parametrize("timing", TIMINGS)
@pytest.mark.parametrize("copy", COPIES)
def test_verify_lists_each_session_once(
    ledger: PlanLedger,
    database_url: str,
    new_ledger: Callable[[str], PlanLedger],
    copy: str,
    timing: str,
) -> None:
    """A SessionOpened copied into its stream by hand: `verify` still checks each session
    once (`session_ids` without duplicates) and reports s1 once."""
    fresh = tampered(ledger, database_url, new_ledger, COPIES[copy], timing)
    assert fresh.ledger.session_ids() == ["s1", "s2"]
    report = fresh.verify()
    assert report.sessions_checked == 2
    assert [(p.session_id, p.rule) for p in report.problems] == [("s1", "chain_broken")]
    assert_others_read_on(fresh)


def test_a_store_whose_session_row_cannot_be_written_still_opens(
    ledger: PlanLedger, database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    """A rechained opening whose cwd holds a NUL (JSON allows it; a PostgreSQL text column
    does not): verify, a rebuild and every later opening of the store go on without a crash,
    and s2 reads on."""
    ledger.catch_up()
    edited(1, rechain=True, cwd="/a\x00b")(database_url)
    new_ledger(database_url).runner.rebuild()
    for _ in range(2):  # later processes: their opening catches the views up
        reopened = new_ledger(database_url)
        reopened.verify()
        assert_others_read_on(reopened)
