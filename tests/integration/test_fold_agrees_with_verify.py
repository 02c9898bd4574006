"""The views' fold judges a history as verify does, wherever its batches start: a session whose
events span batches, or that a new runner takes up from a stored view, is judged from its
plan's first event (a view keeps the plan, not every fact the rules need)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from planledger.service import PlanLedger, open_planledger
from projections import runner as runner_module
from tests.integration.storage import delete_events, edit_event
from tests.integration.test_projections import plan, runner_for

SESSIONS = ["reused", "gap", "typed", "fine"]


@pytest.fixture
def forged(database_url: str) -> Iterator[PlanLedger]:
    """Four sessions of four proposals each, their events interleaved: `reused` has its third
    proposal's id set to its first's, `gap` has an event deleted, `typed` a proposal id that is
    a number (each stream chained again: only the rules can tell)."""
    service = open_planledger(database_url, home=None)
    for session_id in SESSIONS:
        service.open_session(session_id)
    for n, step in enumerate("abcd"):
        for session_id in SESSIONS:
            payload = plan(step, *"abcd"[:n])
            service.submit(session_id, payload, proposal_id=f"{session_id}-{step}")

    def renamed(value: Any) -> Callable[[dict[str, Any]], None]:
        def change(data: dict[str, Any]) -> None:
            data["proposal_id"] = value

        return change

    # (events: 1 created, then each step's proposal and commit: 2-3 a, 4-5 b, 6-7 c, 8-9 d)
    edit_event(database_url, "plan:reused", 6, renamed("reused-a"))
    delete_events(database_url, "plan:gap", 5)
    edit_event(database_url, "plan:typed", 8, renamed(8))
    yield service
    service.close()


def verdicts_of_verify(service: PlanLedger) -> dict[str, tuple[str, int]]:
    report = service.ledger.verify()
    return {p.session_id: (p.rule, p.position) for p in report.problems}


def verdicts_of_rebuild(service: PlanLedger, size: int) -> dict[str, tuple[str, int]]:
    """What a rebuild in batches of `size` events finds corrupt."""
    runner = runner_for(service, batch_size=size)
    runner.rebuild()
    found = {sid: (e.rule, e.position) for sid, e in runner.corrupt.items()}
    runner.close()
    return found


def verdicts_of_a_stopped_rebuild(
    service: PlanLedger, first: int, then: int
) -> dict[str, tuple[str, int]]:
    """What a rebuild stopped after its first batch of `first` events, then caught up by a new
    runner in batches of `then`, finds corrupt."""

    class Stop(Exception):
        pass

    def stop(events: int, position: int) -> None:
        raise Stop

    runner = runner_for(service, batch_size=first)
    with pytest.raises(Stop):
        runner.rebuild(stop)
    found = {sid: (e.rule, e.position) for sid, e in runner.corrupt.items()}
    runner.close()
    restarted = runner_for(service, batch_size=then)
    restarted.catch_up()
    found |= {sid: (e.rule, e.position) for sid, e in restarted.corrupt.items()}
    restarted.close()
    return found


def test_the_verdicts_are_verify_s_whatever_the_batches(forged: PlanLedger) -> None:
    expected = verdicts_of_verify(forged)
    assert expected == {
        "reused": ("proposal_id_reused", 6),
        "gap": ("missing_event", 6),
        "typed": ("unreadable_event", 8),
    }
    for size in (1, 3, 7, 1000):
        assert verdicts_of_rebuild(forged, size) == expected, size


@pytest.mark.parametrize("first", [5, 9, 17, 25])
def test_a_new_runner_taking_up_stored_views_judges_as_verify(
    forged: PlanLedger, first: int
) -> None:
    """A rebuild stopped after its first batch, then caught up by another runner: the sessions
    it goes on with start from views stored by the first."""
    expected = verdicts_of_verify(forged)
    assert verdicts_of_a_stopped_rebuild(forged, first, 4) == expected
    shown = forged.views.plan_view("fine")
    assert shown is not None and shown[1] is None and shown[0].revision == 4


GOAL_SESSIONS = ["named", "nope", "later"]


@pytest.fixture
def goals_forged(database_url: str) -> Iterator[PlanLedger]:
    """Three sessions whose first plan names goal g1, started before it, and whose goal g2 is
    started after their second commit: `nope` has its first plan's goal set to one never
    started, `later` to g2, started after it; `named` is left as written."""
    service = open_planledger(database_url, home=None)
    for session_id in GOAL_SESSIONS:
        service.open_session(session_id)
        service.start_goal(session_id, "g1", "Ship it")
    for n, step in enumerate("abc"):
        for session_id in GOAL_SESSIONS:
            payload = plan(step, *"abc"[:n]) | {"goal_id": "g1"}
            service.submit(session_id, payload)
        if step == "b":
            for session_id in GOAL_SESSIONS:
                service.start_goal(session_id, "g2", "Ship it again")

    def goal(value: str) -> Callable[[dict[str, Any]], None]:
        def change(data: dict[str, Any]) -> None:
            for key in ("candidate", "snapshot"):  # (a commit may leave its plan out)
                if key in data:
                    data[key]["_data_"]["goal_id"] = value

        return change

    for session_id, value in (("nope", "nope"), ("later", "g2")):
        edit_event(database_url, f"plan:{session_id}", 2, goal(value), rechain=False)
        edit_event(database_url, f"plan:{session_id}", 3, goal(value))
    yield service
    service.close()


@pytest.mark.parametrize("kept", [runner_module.MAX_WORKER_SESSIONS, 1])
def test_a_plan_names_a_goal_started_before_it_for_verify_and_the_fold(
    goals_forged: PlanLedger, kept: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(With the facts of one session kept at a time, the others are read back.)"""
    monkeypatch.setattr(runner_module, "MAX_WORKER_SESSIONS", kept)
    expected = verdicts_of_verify(goals_forged)
    assert expected == {"nope": ("unknown_goal", 3), "later": ("unknown_goal", 3)}
    for size in (1, 4, 1000):
        assert verdicts_of_rebuild(goals_forged, size) == expected, size
    assert [p.rule for p in goals_forged.ledger.verify(["later"]).problems] == ["unknown_goal"]
    shown = goals_forged.views.plan_view("named")
    assert shown is not None and shown[1] is None and shown[0].goal_id == "g1"


@pytest.mark.parametrize("first", [3, 6, 9, 12])
def test_a_new_runner_knows_the_goals_started_before_its_batches(
    goals_forged: PlanLedger, first: int
) -> None:
    expected = verdicts_of_verify(goals_forged)
    assert verdicts_of_a_stopped_rebuild(goals_forged, first, 3) == expected
    shown = goals_forged.views.plan_view("named")
    assert shown is not None and shown[1] is None and shown[0].revision == 3


@pytest.mark.parametrize(
    ("edit", "rule"),
    [
        pytest.param((3, {"goal_id": "nope"}), "illegal_goal_transition", id="goal-transition"),
        pytest.param((2, {"goal_id": ["g"]}), "unreadable_event", id="goal-id-typed"),
        # (an opening with no date cannot make its session's row: the list leaves it out)
        pytest.param((1, {"timestamp": "yesterday"}), "unreadable_event", id="opening-stamp"),
        pytest.param((1, {"mode": "sideways"}), "unreadable_event", id="opening-mode"),
    ],
)
def test_a_session_s_own_stream_is_judged_by_the_fold_as_by_verify(
    database_url: str, edit: tuple[int, dict[str, Any]], rule: str
) -> None:
    """Its events applied by the Session aggregate's rules, wherever the batches start; a
    break there is the session's problem before any of its plan's (here: a plan commit forged
    after it), and the session is still listed where its opening can say when."""
    service = open_planledger(database_url, home=None)
    for session_id in ("s1", "s2"):
        service.open_session(session_id)
        service.start_goal(session_id, "g", "Ship it")
        service.submit(session_id, plan("a") | {"goal_id": "g"})
        service.move_goal(session_id, "g", "complete")
    version, changes = edit

    def change(data: dict[str, Any]) -> None:
        data.update(changes)

    edit_event(database_url, "session:s1", version, change)
    edit_event(database_url, "plan:s1", 3, lambda data: data.update(revision=7))
    expected = verdicts_of_verify(service)
    assert set(expected) == {"s1"} and expected["s1"][0] == rule
    for size in (1, 3, 1000):
        assert verdicts_of_rebuild(service, size) == expected, size
        listed = [item.session_id for item in service.sessions().sessions]
        assert sorted(listed) == (["s2"] if "timestamp" in changes else ["s1", "s2"])
    service.close()
