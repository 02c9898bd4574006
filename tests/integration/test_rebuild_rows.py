"""A rebuild writes, row for row, what the writers stored inline, on either database; after an
edit that breaks a rule, it differs only in the corrupt session, marked as verify marks it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from planledger.service import PlanLedger, open_planledger
from planledger.storage.stores import open_store
from planledger.storage.view_rows import HISTORY_COLUMNS
from projections.runner import ProjectionRunner
from tests.integration.storage import edit_event

TABLES = {
    "planledger_plan_views": "session_id, version, position, revision, view, corrupt",
    "planledger_plan_history": HISTORY_COLUMNS,
    "planledger_sessions": "session_id, version, mode, opened_at, updated_at",
}


def rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every view row, as stored (JSON as text), in key order."""
    found: dict[str, list[tuple[Any, ...]]] = {}
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            for table, columns in TABLES.items():
                found[table] = conn.execute(
                    f"SELECT {columns} FROM {table} ORDER BY 1, 2"
                ).fetchall()
        return found
    dsn, schema = url.split("?schema=")
    with psycopg.connect(dsn) as conn:
        for table, columns in TABLES.items():
            found[table] = conn.execute(
                f'SELECT {columns} FROM "{schema}".{table} ORDER BY 1, 2'
            ).fetchall()
    return found


def strict(*steps: tuple[str, str], **extra: Any) -> dict[str, Any]:
    rows_ = [{"id": i, "title": f"Step {i}", "status": s} for i, s in steps]
    return {"title": "Ship export", "steps": rows_, **extra}


def codex(*steps: tuple[str, str]) -> dict[str, Any]:
    return {"plan": [{"step": text, "status": s} for text, s in steps]}


@pytest.fixture
def service(database_url: str) -> Iterator[PlanLedger]:
    app = open_planledger(database_url, home=None)
    for n in range(4):
        strict_id, codex_id = f"strict-{n}", f"codex-{n}"
        app.open_session(strict_id)
        app.open_session(codex_id, "plan")
        app.start_goal(strict_id, "g", "Ship it")
        app.submit(strict_id, strict(("a", "in_progress"), ("b", "pending"), goal_id="g"))
        app.submit(strict_id, strict(("b", "in_progress")))  # rejected: a removed
        app.submit(strict_id, strict(("a", "completed"), ("b", "in_progress")))
        app.propose(strict_id, strict(("a", "completed"), ("b", "completed")))  # undecided
        app.submit(codex_id, codex(("Look", "completed"), ("Fix", "in_progress")))
        app.submit(codex_id, codex(("Fix", "in_progress"), ("Test", "in_progress")))  # rejected
        app.submit(codex_id, codex(("Fix", "completed"), ("Test", "cancelled")))
        app.move_goal(strict_id, "g", "block")
        app.set_mode(codex_id, "work")
    yield app
    app.close()


def rebuild(app: PlanLedger) -> ProjectionRunner:
    runner = ProjectionRunner(open_store(app.database), app.ledger.mapper)
    runner.rebuild()
    runner.close()
    return runner


def test_a_rebuild_writes_the_rows_the_writers_wrote(
    service: PlanLedger, database_url: str
) -> None:
    inline = rows(database_url)
    assert len(inline["planledger_plan_history"]) == 4 * (7 + 6)
    assert not rebuild(service).corrupt
    assert rows(database_url) == inline


def test_after_an_edit_only_the_corrupt_session_differs(
    service: PlanLedger, database_url: str
) -> None:
    inline = rows(database_url)

    def two_in_progress(data: dict[str, Any]) -> None:
        for step in data["snapshot"]["_data_"]["steps"]:
            step["status"] = "in_progress"

    edit_event(database_url, "plan:strict-2", 7, two_in_progress)  # the second commit
    runner = rebuild(service)
    assert set(runner.corrupt) == {"strict-2"}
    rebuilt = rows(database_url)
    for table, before in inline.items():
        assert [r for r in rebuilt[table] if r[0] != "strict-2"] == [
            r for r in before if r[0] != "strict-2"
        ]
    (problem,) = service.ledger.verify().problems
    assert (problem.session_id, problem.position) == ("strict-2", 7)
    found = service.views.plan_view("strict-2")
    assert found is not None and found[1] is not None
    mark = found[1]
    assert (mark.rule, mark.position, mark.message) == (
        problem.rule,
        problem.position,
        problem.message,
    )
    view = found[0]
    assert view.revision == 1  # the last good commit, never the edited one
