"""The read side: views written with their events equal a rebuild, and the runner converges
through crashes, duplicates, gaps, in-flight writes and corrupt sessions."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from domain.errors import CorruptHistory
from planledger.service import PlanLedger, open_planledger
from planledger.service.files import PlanFiles
from planledger.storage.file_paths import read_position
from planledger.storage.stores import open_store
from projections.decode import PlanEventDecoder
from projections.plan_json import read_plan_file
from projections.plan_view import plan_view
from projections.runner import VIEWS, Known, ProjectionRunner, StaleBatch, event_rows
from projections.shapes import CorruptMark
from tests.integration.storage import chain_again, read_state, settled

PLAN_CREATED = "domain.plan:Plan.PlanCreated"


def plan(step: str, *done: str) -> dict[str, Any]:
    steps = [{"id": d, "title": d, "status": "completed"} for d in done]
    return {"title": "T", "steps": [*steps, {"id": step, "title": step, "status": "in_progress"}]}


def seeded(url: str) -> PlanLedger:
    service = open_planledger(url, home=None)
    for session_id in ("s1", "s2"):
        service.open_session(session_id)
        service.submit(session_id, plan("a"))
        service.submit(session_id, plan("b", "a"))
        service.submit(session_id, plan("b", "b"))  # rejected: duplicate id
    service.start_goal("s1", "g", "Ship it")
    service.set_mode("s2", "plan")
    settled(service.views)
    return service


@pytest.fixture
def ledger(database_url: str) -> Iterator[PlanLedger]:
    service = seeded(database_url)
    yield service
    service.close()


@pytest.fixture
def pg_ledger(postgres_url: str) -> Iterator[PlanLedger]:
    service = seeded(postgres_url)
    yield service
    service.close()


def runner_for(service: PlanLedger, batch_size: int = 1000) -> ProjectionRunner:
    """A runner of its own, once every event written so far may be read (settled)."""
    settled(service.views)
    store = open_store(service.database)
    return ProjectionRunner(store, service.ledger.mapper, batch_size=batch_size)


def views_of(service: PlanLedger, *session_ids: str) -> dict[str, Any]:
    """Everything the views hold about these sessions, as comparable data."""
    views = service.views
    return {
        sid: (
            views.plan_view(sid),
            [e.model_dump() for e in views.history(sid)],
            [views.plan_at(sid, r, PlanEventDecoder(service.ledger.mapper)) for r in range(4)],
        )
        for sid in session_ids
    } | {"sessions": views.session_list().model_dump()}


def rebuilt(service: PlanLedger, *session_ids: str) -> dict[str, Any]:
    runner = runner_for(service)
    runner.rebuild()
    runner.close()
    return views_of(service, *session_ids)


def test_views_are_written_with_their_events(ledger: PlanLedger) -> None:
    # Every writer stored its views (no runner has run: on PostgreSQL the writers leave the
    # views' position to it, on SQLite they move it too).
    for sid in ("s1", "s2"):
        found = ledger.views.plan_view(sid)
        assert found is not None and found[1] is None
        assert found[0] == plan_view(ledger.ledger.plan_aggregate(sid))  # the aggregate agrees
    reached, last = ledger.views.status()
    assert last > 0 and reached == (0 if ledger.database.is_postgres else last)
    assert runner_for(ledger).catch_up() == last
    assert ledger.history("s1").entries[-1].kind == "rejected"
    assert [s.session_id for s in ledger.sessions().sessions] == ["s2", "s1"]  # newest first
    assert ledger.sessions().sessions[0].mode == "plan"
    before = views_of(ledger, "s1", "s2")
    assert rebuilt(ledger, "s1", "s2") == before  # the runner's fold is the writers' fold


def test_writers_behind_the_views_leave_them_to_the_runner(ledger: PlanLedger) -> None:
    before = views_of(ledger, "s1", "s2")
    ledger.views.reset()  # the start of a rebuild: the views are behind the store
    other = open_planledger(ledger.database.url, home=None)  # catches up on open
    assert views_of(other, "s1", "s2") == before
    ledger.views.reset()
    decision = ledger.submit("s1", plan("c", "a", "b"))
    assert decision.status == "committed"  # stored without views, then caught up at once
    assert ledger.plan("s1").revision == 3
    reached, last = ledger.views.status()
    assert reached == last
    assert views_of(ledger, "s1", "s2") == rebuilt(ledger, "s1", "s2")
    other.close()


@pytest.mark.parametrize("crash_at", ["before_write", "before_tracking"])
def test_crash_then_restart_equals_rebuild(
    ledger: PlanLedger, crash_at: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = views_of(ledger, "s1", "s2")
    runner = runner_for(ledger, batch_size=4)
    runner.store.reset()
    store = runner.store

    class Crash(Exception):
        pass

    if crash_at == "before_write":
        monkeypatch.setattr(store, "write_batch", lambda *a, **k: (_ for _ in ()).throw(Crash()))
    else:
        real_execute = store.execute_sql

        def execute(sql: str, params: Any = ()) -> Any:
            if sql.startswith("UPDATE planledger_tracking"):
                raise Crash()
            return real_execute(sql, params)

        monkeypatch.setattr(store, "execute_sql", execute)
    with pytest.raises(Crash):
        runner.catch_up()
    assert store.position(VIEWS) == 0  # nothing half-applied
    assert ledger.views.plan_view("s1") is None
    monkeypatch.undo()

    restarted = runner_for(ledger, batch_size=3)
    restarted.catch_up()
    assert views_of(ledger, "s1", "s2") == expected
    restarted.close()
    runner.close()


def test_a_rebuild_killed_between_batches_is_finished_by_the_next_catch_up(
    ledger: PlanLedger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches are written while the next is folded: a write that fails after others were
    committed leaves the views at the last committed batch, never part of one, and a new
    runner goes on from there (no history row twice)."""
    expected = views_of(ledger, "s1", "s2")
    history = {sid: ledger.views.history(sid) for sid in ("s1", "s2")}
    runner = runner_for(ledger, batch_size=3)
    store = runner.store
    real_write = store.write_batch
    written: list[int] = []

    class Crash(Exception):
        pass

    def write_batch(expected_position: int, new_position: int, *args: Any) -> None:
        if len(written) == 2:
            raise Crash()
        real_write(expected_position, new_position, *args)
        written.append(new_position)

    monkeypatch.setattr(store, "write_batch", write_batch)
    reported: list[int] = []
    with pytest.raises(Crash):
        runner.rebuild(lambda events, position: reported.append(position))
    assert store.position(VIEWS) == written[-1] == reported[-1]  # the last whole batch
    assert runner.position == written[-1]
    monkeypatch.undo()

    restarted = runner_for(ledger, batch_size=2)
    assert restarted.catch_up() == ledger.views.status()[1]
    assert views_of(ledger, "s1", "s2") == expected
    assert {sid: ledger.views.history(sid) for sid in ("s1", "s2")} == history
    restarted.close()
    runner.close()


def test_a_rebuild_in_small_batches_equals_one_in_a_single_batch(ledger: PlanLedger) -> None:
    """Sessions whose events span batches are folded onto the views of the batch in flight."""
    expected = views_of(ledger, "s1", "s2")
    for size in (1, 2, 5):
        runner = runner_for(ledger, batch_size=size)
        batches: list[int] = []
        runner.rebuild(lambda events, position, seen=batches: seen.append(events))
        assert sum(batches) == len(runner.store.read_event_rows(0, 10_000))
        assert len(batches) > 1
        assert views_of(ledger, "s1", "s2") == expected
        runner.close()


def test_a_batch_delivered_twice_is_applied_once(ledger: PlanLedger) -> None:
    expected = views_of(ledger, "s1", "s2")
    ledger.views.reset()
    first, second = runner_for(ledger), runner_for(ledger)
    batch = event_rows(first.store.read_event_rows(0, 1000))
    second.catch_up()  # another runner applies the same events first
    with pytest.raises(StaleBatch):
        first.apply_batch(0, batch, Known(0))
    assert first.catch_up() == second.store.position(VIEWS)
    assert views_of(ledger, "s1", "s2") == expected
    first.close()
    second.close()


def test_concurrent_runners_converge(ledger: PlanLedger) -> None:
    expected = views_of(ledger, "s1", "s2")
    ledger.views.reset()
    runners = [runner_for(ledger, batch_size=2) for _ in range(3)]
    threads = [threading.Thread(target=r.catch_up) for r in runners]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert views_of(ledger, "s1", "s2") == expected
    for r in runners:
        r.close()


def test_a_corrupt_session_is_marked_and_the_others_go_on(
    ledger: PlanLedger, database_url: str
) -> None:
    insert_raw(database_url, "plan:s1", 99, "domain.plan:Plan.PlanCommitted", b"{not json")
    ledger.open_session("s3")  # the views are behind now: this one waits for the runner
    ledger.submit("s3", plan("x"))
    runner = runner_for(ledger)
    runner.catch_up()
    reached, last = ledger.views.status()
    assert reached == last  # the runner went past the bad event
    with pytest.raises(CorruptHistory) as raised:
        ledger.plan("s1")
    assert (raised.value.rule, raised.value.position) == ("unreadable_event", 99)
    with pytest.raises(CorruptHistory):
        ledger.history("s1")
    assert ledger.compaction("s1").state == "unreadable"
    assert ledger.plan("s2").revision == 2 and ledger.plan("s3").revision == 1
    # A rebuild finds it again, and reports it.
    runner.rebuild()
    assert set(runner.corrupt) == {"s1"}
    runner.close()


def test_a_commit_breaking_the_rules_is_never_shown(ledger: PlanLedger, database_url: str) -> None:
    """An edited row (two steps in progress) is found by a rebuild: never shown as a plan."""
    ledger.submit("s2", {**plan("c", "a", "b"), "steps": [*plan("c", "a", "b")["steps"]]})
    version = ledger.history("s2").entries[-1].position

    def two_in_progress(data: dict[str, Any]) -> None:
        for step in data["snapshot"]["_data_"]["steps"]:
            step["status"] = "in_progress"

    from tests.integration.storage import edit_event

    edit_event(database_url, "plan:s2", version, two_in_progress)
    runner = runner_for(ledger)
    runner.rebuild()
    with pytest.raises(CorruptHistory) as raised:
        ledger.plan("s2")
    assert raised.value.position == version
    assert ledger.plan("s1").revision == 2
    runner.close()


def insert_raw(
    url: str, originator_id: str, version: int, topic: str, state: bytes, conn: Any = None
) -> int:
    """Insert an event row directly (no table lock, no views), its stream chained again;
    returns its store position."""
    if url.startswith("sqlite"):
        import sqlite3

        with sqlite3.connect(url.removeprefix("sqlite:///")) as db:
            cursor = db.execute(
                "INSERT INTO stored_events (originator_id, originator_version, topic, state) "
                "VALUES (?, ?, ?, ?)",
                (originator_id, version, topic, state),
            )
            assert cursor.lastrowid is not None
        chain_again(url, originator_id)
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
        chain_again(url, originator_id)
    assert row is not None
    return int(row[0])


def plan_created_state(url: str, session_id: str) -> bytes:
    data = read_state(url, "plan:s1", 1)
    data["session_id"] = session_id
    return json.dumps(data).encode()


def test_burned_sequence_number_does_not_stop_inline_views(
    pg_ledger: PlanLedger, postgres_url: str
) -> None:
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
        conn.rollback()  # the store position is burned: a permanent gap
    pg_ledger.open_session("after-gap")
    pg_ledger.submit("after-gap", plan("a"))
    found = pg_ledger.views.plan_view("after-gap")  # stored with its events despite the gap
    assert found is not None and found[0].revision == 1
    assert runner_for(pg_ledger).catch_up() == pg_ledger.views.status()[1]  # nor the runner
    assert pg_ledger.views.plan_view("burn") is None


def test_in_flight_lower_id_is_not_skipped(pg_ledger: PlanLedger, postgres_url: str) -> None:
    runner = runner_for(pg_ledger)
    dsn, _ = postgres_url.split("?schema=")
    with psycopg.connect(dsn) as slow:  # holds a lower store position, uncommitted
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
        runner.catch_up()  # stops short of the transaction in flight, not skipping past it
        assert runner.position < low
        assert pg_ledger.views.plan_view("fast") is None
        slow.commit()
    settled(pg_ledger.views)
    runner.catch_up()
    assert runner.position == high
    assert pg_ledger.views.plan_view("slow") is not None
    assert pg_ledger.views.plan_view("fast") is not None
    runner.close()


def test_plan_json_files_follow_the_views(ledger: PlanLedger, tmp_path: Path) -> None:
    files = PlanFiles(tmp_path, ledger.database, ledger.views)  # a fresh home for this store
    ledger.catch_up()  # the files follow the views' position, which the runner moves
    assert files.sync() == 2
    for sid in ("s1", "s2"):
        on_disk = read_plan_file(files.root, sid)
        assert (on_disk.revision, on_disk.steps) == (2, ledger.plan(sid).steps)
    assert files.sync() == 0  # up to date: nothing rewritten
    ledger.submit("s1", plan("c", "a", "b"))
    ledger.catch_up()
    assert files.sync() == 1
    assert read_plan_file(files.root, "s1").revision == 3


def test_repairing_the_files_rewrites_every_missing_or_stale_one(
    ledger: PlanLedger, tmp_path: Path
) -> None:
    """The position says the files are up to date; a file deleted or edited by hand is
    rewritten all the same, page by page, and a corrupt session's file is left alone."""
    ledger.open_session("s3")
    ledger.submit("s3", plan("x"))
    files = PlanFiles(tmp_path, ledger.database, ledger.views)
    ledger.catch_up()
    assert files.sync() == 3
    assert files.sync() == 0
    files.path("s1").unlink()
    good = files.path("s2").read_bytes()
    files.path("s2").write_bytes(good.replace(b'"T"', b'"edited"'))
    ledger.views.mark_corrupt("s3", CorruptMark(rule="r", position=1, message="m"))
    files.path("s3").unlink()
    assert files.sync() == 0  # the position alone does not see them
    pages: list[int] = []
    assert files.repair(page_size=1, on_page=pages.append) == 2
    assert pages == [1, 1]  # s1 and s2, one per page; s3 is corrupt: not written
    assert read_plan_file(files.root, "s1").revision == 2
    assert files.path("s2").read_bytes() == good
    assert not files.path("s3").exists()
    assert files.repair() == 0
    assert ledger.views.view_count() == 2  # a progress bar's total: s3 is not counted


def test_a_command_settles_the_files_without_reading_other_views(
    ledger: PlanLedger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger.catch_up()  # (the views' position, which the files follow)
    assert sorted(ledger.views.sessions_changed_after(0, 10)) == ["s1", "s2"]
    assert len(ledger.views.sessions_changed_after(0, 1)) == 1
    after = ledger.views.position(VIEWS)
    assert ledger.views.sessions_changed_after(after, 10) == []

    def no_view_read(position: int) -> None:
        raise AssertionError("a command read every changed view")

    monkeypatch.setattr(ledger.views, "views_changed_after", no_view_read)
    spawned: list[Path] = []
    monkeypatch.setattr(
        "planledger.service.files.spawn_back_fill", lambda root, database: spawned.append(root)
    )
    files = PlanFiles(tmp_path, ledger.database, ledger.views)  # a fresh home for this store
    files.write(ledger.plan("s1"))
    files.settle()  # s2 changed too: the rest is left to a back-fill
    assert spawned == [files.root]
    assert read_position(files.marker) < after

    spawned.clear()
    files.write(ledger.plan("s2"))
    files.settle()  # every changed view was written here: the files are up to date
    assert spawned == []
    assert read_position(files.marker) == after


def test_hostile_text_never_stops_the_views(ledger: PlanLedger) -> None:
    hostile = {
        "title": "T\x00",
        "steps": [{"id": "a", "title": "\ud800", "status": "in_progress"}],
        "odd\x00key": 1,
    }
    decision = ledger.submit("s1", hostile)
    assert decision.status == "rejected"
    assert "invalid_text" in [v.code for v in decision.violations]
    ledger.start_goal("s1", "g1", "fine")
    assert ledger.history("s1").entries[-1].kind == "rejected"
    assert ledger.plan("s1").revision == 2
    assert ledger.catch_up() == ledger.views.status()[1]  # the runner goes past them too


def test_a_long_running_python_api_process_writes_plan_json_off_the_commit_path(
    database_url: str, tmp_path: Path
) -> None:
    """The first write (here the session's opening) writes its file on the caller's path, as a
    one-shot command does; from the second on, a follower thread brings the files up within
    a second; closing writes what it has not yet seen."""
    service = open_planledger(database_url, home=tmp_path)
    try:
        assert service.files is not None
        service.open_session("s1")
        assert read_plan_file(service.files.root, "s1").revision == 0  # at once
        service.submit("s1", plan("a"))
        service.submit("s1", plan("a", "b"))
        deadline = time.monotonic() + 5
        while read_plan_file(service.files.root, "s1").revision != 2:
            assert time.monotonic() < deadline, "plan.json did not follow the second commit"
            time.sleep(0.05)
        service.submit("s1", plan("a", "b", "c"))
    finally:
        service.close()
    assert read_plan_file(service.files.root, "s1").revision == 3  # written on closing
