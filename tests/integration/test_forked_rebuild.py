"""A rebuild spread over forked worker processes writes exactly the views a rebuild in one
process writes, whatever stops it part-way: too many sessions for a worker, a worker that
fails or dies, another runner moving the position."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from typing import Any

import pytest

from planledger.service import PlanLedger, open_planledger
from planledger.storage.stores import open_store
from projections import runner as runner_module
from projections.runner import Known, ProjectionRunner, event_rows
from tests.integration.storage import edit_event, settled
from tests.integration.test_projections import insert_raw, plan

SESSIONS = [f"f{n}" for n in range(12)]


@pytest.fixture
def store(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[PlanLedger]:
    """Sessions of both forms, with rejections, a goal, a mode change, a commit edited to
    break the rules and an unreadable event; every rebuild forked, in batches of 7 events."""
    service = open_planledger(database_url, home=None)
    for n, session_id in enumerate(SESSIONS):
        service.open_session(session_id)
        service.submit(session_id, plan("a"))
        service.submit(session_id, plan("b", "a"))
        service.submit(session_id, plan("b", "b"))  # rejected: duplicate id
        service.submit(session_id, {"plan": [{"step": "x", "status": "in_progress"}]})
        if n % 3 == 0:
            service.start_goal(session_id, "g", "Ship it")
            service.set_mode(session_id, "plan")
    commits = [e for e in service.history("f4").entries if e.kind == "committed"]
    version = commits[1].position  # plan("b", "a"): two steps, made both in progress

    def two_in_progress(data: dict[str, Any]) -> None:
        for step in data["snapshot"]["_data_"]["steps"]:
            step["status"] = "in_progress"

    edit_event(database_url, "plan:f4", version, two_in_progress)
    insert_raw(database_url, "plan:f7", 99, "domain.plan:Plan.PlanCommitted", b"{not json")
    monkeypatch.setattr(runner_module, "PARALLEL_MIN_EVENTS", 0)
    monkeypatch.setattr(runner_module, "FORKED_BATCH", 7)
    settled(service.views)
    yield service
    service.close()


def rebuilt(service: PlanLedger, workers: int) -> tuple[dict[str, Any], dict[str, Any], int]:
    """(what the views hold, the corrupt sessions found, the position reached)."""
    runner = ProjectionRunner(open_store(service.database), service.ledger.mapper, workers=workers)
    try:
        reached = runner.rebuild()
        corrupt = {sid: (e.position, e.rule, e.detail) for sid, e in runner.corrupt.items()}
    finally:
        runner.close()
    views = service.views
    found = {
        sid: (views.plan_view(sid), [e.model_dump() for e in views.history(sid)])
        for sid in SESSIONS
    }
    return found | {"sessions": views.session_list().model_dump()}, corrupt, reached


def test_forked_workers_write_the_views_one_process_writes(store: PlanLedger) -> None:
    alone = rebuilt(store, workers=1)
    assert set(alone[1]) == {"f4", "f7"}
    assert alone[1]["f7"][1] == "unreadable_event"
    batches: list[int] = []
    runner = ProjectionRunner(open_store(store.database), store.ledger.mapper, workers=3)
    runner.rebuild(lambda events, position: batches.append(events))
    runner.close()
    assert len(batches) > 5 and sum(batches) == len(store.views.read_event_rows(0, 10_000))
    assert rebuilt(store, workers=3) == alone
    assert rebuilt(store, workers=2) == alone


def test_a_worker_holding_too_many_sessions_hands_the_rest_to_this_process(
    store: PlanLedger, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone = rebuilt(store, workers=1)
    monkeypatch.setattr(runner_module, "MAX_WORKER_SESSIONS", 2)
    written: list[int] = []
    runner = ProjectionRunner(open_store(store.database), store.ledger.mapper, workers=2)
    real_write = runner.store.write_batch_rows

    def write(expected: int, new: int, parts: Any) -> None:
        written.append(new)
        real_write(expected, new, parts)

    monkeypatch.setattr(runner.store, "write_batch_rows", write)
    runner.rebuild()
    runner.close()
    last = store.views.status()[1]
    assert written[-1] == last and len(written) < last // 7  # the rest in one batch here
    assert rebuilt(store, workers=1) == alone  # (the views as that rebuild left them)


@pytest.mark.parametrize("failure", ["raises", "dies"])
def test_a_failing_worker_hands_the_rest_to_this_process(
    store: PlanLedger, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    alone = rebuilt(store, workers=1)
    real = ProjectionRunner.fold_part
    calls = {"n": 0}

    def failing(self: ProjectionRunner, state: Any, part: Any) -> Any:
        calls["n"] += 1  # in the worker: its own count
        if calls["n"] == 3:
            if failure == "raises":
                raise RuntimeError("a bug in the fold")
            os._exit(9)
        return real(self, state, part)

    monkeypatch.setattr(ProjectionRunner, "fold_part", failing)
    written: list[int] = []
    runner = ProjectionRunner(open_store(store.database), store.ledger.mapper, workers=2)
    real_write = runner.store.write_batch_rows

    def write(expected: int, new: int, parts: Any) -> None:
        written.append(new)
        real_write(expected, new, parts)

    monkeypatch.setattr(runner.store, "write_batch_rows", write)
    runner.rebuild()
    runner.close()
    assert len(written) == 3  # two batches forked, the third failed: the rest in one batch here
    assert written[-1] == store.views.status()[1]
    found = rebuilt(store, workers=1)  # (the views as that rebuild left them)
    assert found == alone


def test_another_runner_moving_the_position_hands_the_rest_to_this_process(
    store: PlanLedger, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone = rebuilt(store, workers=1)
    runner = ProjectionRunner(open_store(store.database), store.ledger.mapper, workers=2)
    other = ProjectionRunner(open_store(store.database), store.ledger.mapper, batch_size=5)
    real_write = runner.store.write_batch_rows
    writes = {"n": 0}

    def write(expected: int, new: int, parts: Any) -> None:
        writes["n"] += 1
        if writes["n"] == 3:
            batch = event_rows(other.store.read_event_rows(expected, 5))
            other.apply_batch(expected, batch, Known(expected))  # another runner got there first
        real_write(expected, new, parts)

    monkeypatch.setattr(runner.store, "write_batch_rows", write)
    runner.rebuild()
    corrupt = {sid: (e.position, e.rule, e.detail) for sid, e in runner.corrupt.items()}
    runner.close()
    other.close()
    assert writes["n"] == 4  # two forked, a third refused (stale), the rest in one batch here
    views = rebuilt(store, workers=1)
    assert set(corrupt) <= set(alone[1])
    assert views == alone


def test_workers_end_with_the_rebuild(store: PlanLedger) -> None:
    before = set(multiprocessing.active_children())
    rebuilt(store, workers=2)
    assert set(multiprocessing.active_children()) == before


def test_workers_end_when_the_rebuild_fails(
    store: PlanLedger, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = set(multiprocessing.active_children())
    runner = ProjectionRunner(open_store(store.database), store.ledger.mapper, workers=2)
    real_write = runner.store.write_batch_rows
    writes = {"n": 0}

    def write(expected: int, new: int, parts: Any) -> None:
        writes["n"] += 1
        if writes["n"] == 2:  # the workers are folding the next batch meanwhile
            raise RuntimeError("the disk is full")
        real_write(expected, new, parts)

    monkeypatch.setattr(runner.store, "write_batch_rows", write)
    with pytest.raises(RuntimeError, match="the disk is full"):
        runner.rebuild()
    runner.close()
    assert set(multiprocessing.active_children()) == before


@pytest.mark.parametrize("count", [2, 3])
def test_the_shares_of_a_batch_hold_each_event_once_a_session_in_one(
    store: PlanLedger, database_url: str, count: int
) -> None:
    # Rows written by hand, of ids the ledger never makes: a backslash (which PostgreSQL's
    # cast of text to bytea would parse), non-ASCII characters, one character after the colon.
    created = "domain.plan:Plan.PlanCreated"
    for session_id in ("a\\zé", "é", "x"):
        insert_raw(database_url, f"plan:{session_id}", 1, created, b"{}")
        insert_raw(database_url, f"session:{session_id}", 1, created, b"{}")
    views = store.views
    settled(views)
    events, last = views.batch_bounds(0, 10_000)
    assert events == len(views.read_event_rows(0, 10_000)) and last == views.status()[1]
    assert views.batch_bounds(last, 5) == (0, last)
    every = event_rows(views.read_event_rows(0, 10_000))
    reader = views.share_reader(count)
    shares = [event_rows(reader.read(0, last, share)) for share in range(count)]
    # A plan event's previous chain is the worker's to know (it reads its sessions from the
    # first); a session event's comes with it.
    plans = [row for share in shares for row in share if row.originator_id.startswith("plan:")]
    assert plans and all(row.previous is None for row in plans)
    unknown = [
        row._replace(previous=None) if row.originator_id.startswith("plan:") else row
        for row in every
    ]
    assert sorted(row for share in shares for row in share) == sorted(unknown)
    owners = {
        row.originator_id.partition(":")[2]: n for n, share in enumerate(shares) for row in share
    }
    for n, share in enumerate(shares):
        assert all(owners[row.originator_id.partition(":")[2]] == n for row in share)
        assert [row.id for row in share] == sorted(row.id for row in share)
    assert sum(1 for share in shares if share) >= 2  # the sessions f0..f11 spread
    middle = every[len(every) // 2].id
    assert sorted(
        row for s in range(count) for row in event_rows(reader.read(middle, last, s))
    ) == [row for row in unknown if row.id > middle]
