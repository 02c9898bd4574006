"""Forced races on PostgreSQL: writers released together by a barrier, then counted."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import psycopg

from planledger.service import PlanLedger, open_planledger
from planledger.service.results import Decision
from tests.integration.storage import settled

WRITERS = 6
ROUNDS = 5


def race(writers: list[PlanLedger], make: Callable[[int], dict[str, Any]]) -> list[Decision]:
    """Every writer submits at the same moment; returns their decisions."""
    barrier = threading.Barrier(len(writers))
    decisions: list[Decision | None] = [None] * len(writers)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            decisions[index] = writers[index].submit("race", make(index), client=f"w{index}")
        except BaseException as error:  # surfaced below, never swallowed
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(writers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    assert all(d is not None for d in decisions)
    return [d for d in decisions if d is not None]


def step_plan(revision: int, writer: int) -> dict[str, Any]:
    return {
        "expected_revision": revision,
        "title": "Race",
        "steps": [
            {"id": f"r{n}", "title": f"Round {n}", "status": "completed"} for n in range(revision)
        ]
        + [
            {
                "id": f"r{revision}",
                "title": f"Round {revision} by w{writer}",
                "status": "in_progress",
            }
        ],
    }


def test_exactly_one_writer_wins_each_revision(postgres_url: str) -> None:
    writers = [
        open_planledger(postgres_url, home=None) for _ in range(WRITERS)
    ]  # one pool each, like processes
    writers[0].open_session("race")
    for revision in range(ROUNDS):
        decisions = race(writers, lambda w, r=revision: step_plan(r, w))
        statuses = Counter(d.status for d in decisions)
        assert statuses == {"committed": 1, "conflict": WRITERS - 1}, statuses
        for decision in decisions:
            assert decision.revision == revision + 1
            if decision.status == "conflict":
                assert [v.code for v in decision.violations] == ["revision_conflict"]
                assert decision.current_revision == revision + 1
    history = writers[0].history("race").entries
    committed = [e.revision for e in history if e.kind == "committed"]
    assert committed == list(range(1, ROUNDS + 1))  # contiguous, one commit per revision
    rejected = [e for e in history if e.kind == "rejected"]
    assert len(rejected) == ROUNDS * (WRITERS - 1)  # every loser recorded and told why
    assert writers[0].verify(["race"]).ok
    assert sum(w.ledger.lost_races for w in writers) > 0  # the save race itself was exercised
    for writer in writers:
        writer.close()


def test_without_expected_revision_losers_are_redecided(postgres_url: str) -> None:
    writers = [open_planledger(postgres_url, home=None) for _ in range(WRITERS)]
    writers[0].open_session("race")

    def codex_plan(writer: int) -> dict[str, Any]:
        return {"plan": [{"step": f"Writer {writer} step", "status": "in_progress"}]}

    decisions = race(writers, codex_plan)
    assert [d.status for d in decisions] == ["committed"] * WRITERS
    assert sorted(d.revision for d in decisions) == list(range(1, WRITERS + 1))
    assert writers[0].plan("race").revision == WRITERS
    assert writers[0].verify(["race"]).ok
    assert sum(w.ledger.lost_races for w in writers) > 0
    for writer in writers:
        writer.close()


def test_a_writer_holds_few_connections(postgres_url: str) -> None:
    """Sixteen writer processes fit in a server's default 100 connections: a process's event
    store pool starts with one connection and grows only while its calls overlap."""
    writer = open_planledger(postgres_url, home=None)
    writer.open_session("few")
    for revision in range(5):
        assert writer.submit("few", step_plan(revision, 0)).status == "committed"
    stats = writer.ledger.recorder.datastore.pool.get_stats()  # type: ignore[attr-defined]
    assert stats["pool_min"] == 1 and stats["pool_max"] == 10
    assert stats["pool_size"] <= 2, stats  # one call at a time: no more were opened
    writer.close()


def test_a_held_tracking_row_stalls_no_writer_and_the_position_moves_after(
    postgres_url: str,
) -> None:
    """Writers store their sessions' views with their events, so a process's runner, which
    then has only the position to move, never waits for a runner of another process that
    holds the tracking row (it used to lock the row for every batch: every writing process
    queued behind whichever held it)."""
    writer = open_planledger(postgres_url, home=None)
    writer.open_session("held")
    conninfo = postgres_url.replace("?schema=", "?options=-csearch_path%3D")
    with psycopg.connect(conninfo) as holder:  # another runner, mid-batch
        holder.execute("SELECT position FROM planledger_tracking FOR UPDATE")
        caught_up: list[int] = []
        thread = threading.Thread(
            target=lambda: caught_up.append(
                # (the runner's own catch-up: the ledger's would wait for the horizon, which
                # the holder holds back)
                (writer.submit("held", step_plan(0, 0)), writer.runner.catch_up())[1]
            ),
            daemon=True,
        )
        thread.start()
        thread.join(timeout=10)
        assert caught_up, "the commit and its catch-up waited for the held row"
        assert writer.plan("held").revision == 1
        (stored,) = holder.execute("SELECT position FROM planledger_tracking").fetchone() or ()
        holder.rollback()
    settled(writer.views)  # (the events the hold kept above the horizon: other tests' too)
    reached = writer.catch_up()
    assert writer.views.position("views") == reached == writer.views.status()[1] > stored
    writer.close()
