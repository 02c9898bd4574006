"""The whole-store verify (one ordered scan, optionally over worker processes) reports exactly
what verifying each session on its own reports, on a store with many kinds of corruption."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planledger.service import PlanLedger, open_planledger
from planledger.service import verify as verify_module
from tests.integration.storage import delete_events, edit_event


def strict(*steps: tuple[str, str], **extra: Any) -> dict[str, Any]:
    rows = [{"id": i, "title": f"Step {i}", "status": s} for i, s in steps]
    return {"title": "Ship export", "steps": rows, **extra}


def codex(*steps: tuple[str, str]) -> dict[str, Any]:
    return {"plan": [{"step": text, "status": s} for text, s in steps]}


def garble(data: dict[str, Any]) -> None:
    data["snapshot"]["_data_"]["steps"] = "not a list"


def idle(data: dict[str, Any]) -> None:
    key = "snapshot" if "snapshot" in data else "candidate"
    data[key]["_data_"]["steps"][1]["status"] = "pending"


def rename_goal(data: dict[str, Any]) -> None:
    data["goal_id"] = "other"


# (session id, rule verify must report, position) for each corrupted session.
EXPECTED = {
    "c-rule": ("no_step_in_progress", 5),
    "c-missing-event": ("missing_event", 4),
    "c-missing-plan": ("missing_plan", 0),
    "c-goal": ("unknown_goal", 3),
    "c-unreadable": ("unreadable_event", 3),
    "c-session-gap": ("missing_event", 3),
}


@pytest.fixture
def corrupted(database_url: str) -> Iterator[tuple[PlanLedger, list[str]]]:
    service = open_planledger(database_url, home=None)
    ids: list[str] = []
    for n in range(6):  # clean sessions before, between and after the corrupt ones
        ids.append(f"clean-{n}")
        service.open_session(ids[-1])
        service.submit(ids[-1], codex(("Look", "completed"), ("Fix", "in_progress")))
        service.submit(ids[-1], codex(("Fix", "in_progress"), ("Fix", "pending")))
    for session_id in EXPECTED:
        ids.append(session_id)
        service.open_session(session_id)
    service.submit("c-rule", strict(("a", "in_progress"), ("b", "pending")))
    service.submit("c-rule", strict(("a", "completed"), ("b", "in_progress")))
    edit_event(database_url, "plan:c-rule", 4, idle)
    edit_event(database_url, "plan:c-rule", 5, idle)
    service.submit("c-missing-event", strict(("a", "in_progress")))
    service.submit("c-missing-event", strict(("a", "completed")))
    delete_events(database_url, "plan:c-missing-event", 3)
    service.submit("c-missing-plan", strict(("a", "in_progress")))
    delete_events(database_url, "plan:c-missing-plan")
    service.start_goal("c-goal", "g", "Ship it")
    service.submit("c-goal", strict(("a", "in_progress"), goal_id="g"))
    edit_event(database_url, "session:c-goal", 2, rename_goal)
    service.submit("c-unreadable", strict(("a", "in_progress")))
    edit_event(database_url, "plan:c-unreadable", 3, garble)
    service.start_goal("c-session-gap", "g", "Ship it")
    service.move_goal("c-session-gap", "g", "block")
    delete_events(database_url, "session:c-session-gap", 2)
    service.close()
    auditor = open_planledger(database_url, home=None)
    yield auditor, ids
    auditor.close()


def per_session(service: PlanLedger, ids: list[str]) -> list[Any]:
    return [p for session_id in ids for p in service.ledger.verify_session(session_id)]


def test_the_store_pass_reports_what_each_session_reports(
    corrupted: tuple[PlanLedger, list[str]],
) -> None:
    service, ids = corrupted
    expected = per_session(service, ids)
    found = {p.session_id: (p.rule, p.position) for p in expected}
    assert found == EXPECTED
    service.ledger.verify_workers = 1
    report = service.ledger.verify()
    assert report.sessions_checked == len(ids) and not report.ok
    assert report.problems == expected


def test_worker_processes_report_the_same(
    corrupted: tuple[PlanLedger, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    service, ids = corrupted
    monkeypatch.setattr(verify_module, "PARALLEL_MIN_EVENTS", 1)
    calls: list[int] = []
    split = verify_module.split_points

    def counted(*args: Any) -> list[str]:
        points = split(*args)
        calls.append(len(points))
        return points

    monkeypatch.setattr(verify_module, "split_points", counted)
    service.ledger.verify_workers = 3
    assert service.ledger.verify().problems == per_session(service, ids)
    assert calls and calls[0] >= 1  # the key space was really split


def test_many_named_sessions_go_through_the_store_pass(
    corrupted: tuple[PlanLedger, list[str]],
) -> None:
    service, ids = corrupted
    named = ["ghost", *ids[::-1], "c-rule", *[f"nobody-{n}" for n in range(25)]]
    report = service.ledger.verify(named)
    assert report.sessions_checked == len(named)
    assert report.problems == per_session(service, named)
    assert report.problems[0].rule == "session_not_found"
    assert [p.rule for p in report.problems].count("session_not_found") == 26


def test_verify_marks_the_corrupt_sessions_in_the_views(
    corrupted: tuple[PlanLedger, list[str]],
) -> None:
    service, _ = corrupted
    service.verify()
    for session_id, (rule, position) in EXPECTED.items():
        found = service.views.plan_view(session_id)
        assert found is not None and found[1] is not None
        assert (found[1].rule, found[1].position) == (rule, position)
    clean = service.views.plan_view("clean-0")
    assert clean is not None and clean[1] is None


def test_a_worker_that_dies_leaves_the_replay_to_this_process(
    corrupted: tuple[PlanLedger, list[str]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    service, ids = corrupted
    monkeypatch.setattr(verify_module, "PARALLEL_MIN_EVENTS", 1)
    parent, real = os.getpid(), verify_module.replay_range
    died = tmp_path / "a worker died"

    def dies_in_a_worker(*args: Any) -> Any:
        if os.getpid() != parent:
            died.touch()
            os._exit(9)
        return real(*args)

    monkeypatch.setattr(verify_module, "replay_range", dies_in_a_worker)
    service.ledger.verify_workers = 2
    assert service.ledger.verify().problems == per_session(service, ids)
    assert died.exists()  # a worker did replay (and die): the report is this process's
