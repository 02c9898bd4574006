"""The read side converges to a rebuild through crashes, duplicates, gaps and in-flight writes."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from domain.errors import SessionNotFound
from planledger.service.ledger import Ledger
from planledger.storage.views import open_store
from projections.plan_json import read_plan_file
from projections.runner import VIEWS, ProjectionHalted, ProjectionRunner, StaleBatch
from tests.integration.storage import read_state

PLAN_CREATED = "domain.plan:Plan.PlanCreated"


def plan(step: str, *done: str) -> dict[str, Any]:
    steps = [{"id": d, "title": d, "status": "completed"} for d in done]
    return {"title": "T", "steps": [*steps, {"id": step, "title": step, "status": "in_progress"}]}


def seeded(url: str) -> Ledger:
    app = Ledger(url)
    for session_id in ("s1", "s2"):
        app.open_session(session_id)
        app.submit(session_id, plan("a"))
        app.submit(session_id, plan("b", "a"))
        app.submit(session_id, plan("b", "b"))  # rejected: duplicate id
    return app


@pytest.fixture
def ledger(database_url: str) -> Iterator[Ledger]:
    app = seeded(database_url)
    yield app
    app.close()


@pytest.fixture
def pg_ledger(postgres_url: str) -> Iterator[Ledger]:
    app = seeded(postgres_url)
    yield app
    app.close()


def runner_for(app: Ledger, home: Path | None = None, batch_size: int = 1000) -> ProjectionRunner:
    return ProjectionRunner(open_store(app.database), app.mapper, home=home, batch_size=batch_size)


def snapshot_of_views(runner: ProjectionRunner, *session_ids: str) -> dict[str, Any]:
    return {
        sid: (
            runner.store.plan_view(sid),
            [e.model_dump() for e in runner.store.history(sid)],
        )
        for sid in session_ids
    }


def rebuilt(app: Ledger, *session_ids: str) -> dict[str, Any]:
    fresh = runner_for(app)
    fresh.rebuild()
    result = snapshot_of_views(fresh, *session_ids)
    fresh.close()
    return result


def test_views_match_the_aggregates_and_the_fold(ledger: Ledger, tmp_path: Path) -> None:
    runner = runner_for(ledger, tmp_path)
    runner.catch_up()
    for sid in ("s1", "s2"):
        assert runner.plan_view(sid) == ledger.plan(sid)
        assert runner.history(sid) == ledger.history(sid)
        on_disk = read_plan_file(tmp_path, sid)
        assert (on_disk.revision, on_disk.steps) == (2, ledger.plan(sid).steps)
    with pytest.raises(SessionNotFound):
        runner.plan_view("ghost")
    runner.close()


@pytest.mark.parametrize("crash_at", ["before_write", "before_tracking", "before_files"])
def test_crash_then_restart_equals_rebuild(
    ledger: Ledger, tmp_path: Path, crash_at: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = runner_for(ledger, tmp_path, batch_size=4)
    runner.catch_up()
    ledger.submit("s1", plan("c", "a", "b"))
    ledger.open_session("s3")
    store = runner.store

    class Crash(Exception):
        pass

    if crash_at == "before_write":
        monkeypatch.setattr(store, "write_batch", lambda *a, **k: (_ for _ in ()).throw(Crash()))
    elif crash_at == "before_tracking":
        real_execute = store._execute

        def execute(sql: str, params: Any = ()) -> Any:
            if sql.startswith("UPDATE planledger_tracking"):
                raise Crash()
            return real_execute(sql, params)

        monkeypatch.setattr(store, "_execute", execute)
    else:
        monkeypatch.setattr(runner, "sync_files", lambda: (_ for _ in ()).throw(Crash()))
    position = store.position(VIEWS)
    with pytest.raises(Crash):
        runner.catch_up()
    if crash_at != "before_files":
        assert store.position(VIEWS) == position  # nothing half-applied
    monkeypatch.undo()

    restarted = runner_for(ledger, tmp_path)
    restarted.catch_up()
    assert snapshot_of_views(restarted, "s1", "s2", "s3") == rebuilt(ledger, "s1", "s2", "s3")
    assert read_plan_file(tmp_path, "s1").revision == 3
    assert read_plan_file(tmp_path, "s3").revision == 0
    restarted.close()
    runner.close()


def test_a_batch_delivered_twice_is_applied_once(ledger: Ledger) -> None:
    first, second = runner_for(ledger), runner_for(ledger)
    start = first.store.position(VIEWS)
    batch = first.store.read_notifications(start, 1000)
    second.catch_up()  # another runner applies the same events first
    before = snapshot_of_views(first, "s1", "s2")
    with pytest.raises(StaleBatch):
        first._apply(start, batch)
    assert first.catch_up() == second.store.position(VIEWS)
    assert snapshot_of_views(first, "s1", "s2") == before == rebuilt(ledger, "s1", "s2")
    first.close()
    second.close()


def test_concurrent_runners_converge(ledger: Ledger) -> None:
    runners = [runner_for(ledger, batch_size=2) for _ in range(3)]
    threads = [threading.Thread(target=r.catch_up) for r in runners]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert snapshot_of_views(runners[0], "s1", "s2") == rebuilt(ledger, "s1", "s2")
    for r in runners:
        r.close()


def test_poison_event_halts_without_advancing(ledger: Ledger, database_url: str) -> None:
    runner = runner_for(ledger)
    runner.catch_up()
    ledger.open_session("s3")
    poisoned_at = insert_raw(
        database_url, "plan:s1", 99, "domain.plan:Plan.PlanCommitted", b"{not json"
    )
    ledger.open_session("s4")
    with pytest.raises(ProjectionHalted) as halted:
        runner.catch_up()
    assert halted.value.position == poisoned_at
    assert runner.store.position(VIEWS) < poisoned_at
    assert runner.store.plan_view("s3") is not None  # events before the poison were applied
    assert runner.store.plan_view("s4") is None  # and nothing after it
    with pytest.raises(ProjectionHalted):
        runner_for(ledger).catch_up()  # a restart stops at the same event
    runner.close()


def insert_raw(
    url: str, originator_id: str, version: int, topic: str, state: bytes, conn: Any = None
) -> int:
    """Insert an event row directly (no table lock); returns its notification id."""
    if url.startswith("sqlite"):
        import sqlite3

        with sqlite3.connect(url.removeprefix("sqlite:///")) as db:
            cursor = db.execute(
                "INSERT INTO stored_events (originator_id, originator_version, topic, state) "
                "VALUES (?, ?, ?, ?)",
                (originator_id, version, topic, state),
            )
            assert cursor.lastrowid is not None
            return cursor.lastrowid
    dsn, schema = url.split("?schema=")
    own = conn is None
    db = conn or psycopg.connect(dsn)
    row = db.execute(
        f'INSERT INTO "{schema}".planledger_events '
        "(originator_id, originator_version, topic, state) VALUES (%s, %s, %s, %s) "
        "RETURNING notification_id",
        (originator_id, version, topic, state),
    ).fetchone()
    if own:
        db.commit()
        db.close()
    assert row is not None
    return int(row[0])


def plan_created_state(url: str, session_id: str) -> bytes:
    data = read_state(url, "plan:s1", 1)
    data["session_id"] = session_id
    return json.dumps(data).encode()


def test_burned_sequence_number_does_not_stall(pg_ledger: Ledger, postgres_url: str) -> None:
    ledger = pg_ledger
    runner = runner_for(ledger)
    runner.catch_up()
    dsn, _ = postgres_url.split("?schema=")
    with psycopg.connect(dsn) as conn:
        insert_raw(
            postgres_url,
            "plan:burn",
            1,
            PLAN_CREATED,
            plan_created_state(postgres_url, "burn"),
            conn=conn,
        )
        conn.rollback()  # the notification id is burned: a permanent gap
    ledger.open_session("after-gap")
    runner.catch_up()
    assert runner.store.plan_view("after-gap") is not None
    assert runner.store.plan_view("burn") is None
    runner.close()


def test_in_flight_lower_id_is_not_skipped(pg_ledger: Ledger, postgres_url: str) -> None:
    runner = runner_for(pg_ledger)
    runner.catch_up()
    dsn, _ = postgres_url.split("?schema=")
    slow = psycopg.connect(dsn)  # holds a lower notification id, uncommitted
    low = insert_raw(
        postgres_url,
        "plan:slow",
        1,
        PLAN_CREATED,
        plan_created_state(postgres_url, "slow"),
        conn=slow,
    )
    high = insert_raw(
        postgres_url, "plan:fast", 1, PLAN_CREATED, plan_created_state(postgres_url, "fast")
    )
    assert low < high
    follower = threading.Thread(target=runner.catch_up)
    follower.start()
    time.sleep(0.5)
    assert follower.is_alive()  # waiting for the transaction in flight, not skipping past it
    observer = runner_for(pg_ledger)  # the follower's own store is busy waiting
    assert observer.store.plan_view("fast") is None
    observer.close()
    slow.commit()
    slow.close()
    follower.join(timeout=30)
    assert not follower.is_alive()
    assert runner.store.plan_view("slow") is not None
    assert runner.store.plan_view("fast") is not None
    runner.close()


def test_read_your_writes_while_following(postgres_url: str) -> None:
    app = Ledger(postgres_url)
    runner = runner_for(app)
    stop = threading.Event()
    follower = threading.Thread(target=runner.run, args=(stop,), kwargs={"idle_timeout": 5})
    follower.start()
    try:
        app.open_session("live")
        for n in range(5):
            decision = app.submit("live", plan(f"step{n}", *(f"step{m}" for m in range(n))))
            assert decision.store_position is not None
            # No polling delay: the NOTIFY wakes the follower long before its 5 s idle timeout.
            assert runner.wait_for(decision.store_position, timeout=2)
            assert runner.store.plan_view("live").revision == n + 1  # type: ignore[union-attr]
    finally:
        stop.set()
        app.open_session("wake-up")  # any insert wakes the follower so it sees `stop`
        follower.join(timeout=10)
        runner.close()
        app.close()


def test_hostile_text_never_stops_the_views(ledger: Ledger) -> None:
    runner = runner_for(ledger)
    hostile = {
        "title": "T\x00",
        "steps": [{"id": "a", "title": "\ud800", "status": "in_progress"}],
        "odd\x00key": 1,
    }
    decision = ledger.submit("s1", hostile)
    assert decision.status == "rejected"
    assert "invalid_text" in [v.code for v in decision.violations]
    ledger.start_goal("s1", "g1", "fine")
    runner.catch_up()  # the rejection is in the views; nothing halted
    assert runner.store.history("s1")[-1].kind == "rejected"
    assert runner.store.plan_view("s1").revision == 2  # type: ignore[union-attr]
    runner.close()
