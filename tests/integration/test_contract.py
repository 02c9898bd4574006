"""The storage contract: the same suite on SQLite and on PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from domain.errors import (
    CorruptHistory,
    GoalExists,
    IllegalTransition,
    InvalidId,
    ProposalNotFound,
    RevisionNotFound,
    SessionExists,
    SessionNotFound,
)
from domain.session_fields import Mode
from planledger.service import PlanLedger, open_planledger
from planledger.service.ledger import InvalidInput
from tests.integration.storage import corrupt_at, count_events, delete_events, edit_event


def strict(*steps: tuple[str, str], title: str = "Ship export", **extra: Any) -> dict[str, Any]:
    return {
        "title": title,
        "steps": [{"id": i, "title": f"Step {i}", "status": s} for i, s in steps],
        **extra,
    }


def codex(*steps: tuple[str, str], **extra: Any) -> dict[str, Any]:
    return {"plan": [{"step": text, "status": s} for text, s in steps], **extra}


@pytest.fixture
def ledger(database_url: str) -> Iterator[PlanLedger]:
    app = open_planledger(database_url, home=None)
    app.open_session("s1")
    yield app
    app.close()


def codes(decision: Any) -> list[str]:
    return [v.code for v in decision.violations]


def test_commit_then_rejection_leaves_revision(ledger: PlanLedger) -> None:
    first = ledger.submit("s1", strict(("a", "in_progress"), ("b", "pending")))
    assert (first.status, first.revision) == ("committed", 1)
    bad = ledger.submit("s1", strict(("b", "in_progress")))
    assert bad.status == "rejected"
    assert codes(bad) == ["step_removed"]
    assert bad.revision == 1
    view = ledger.plan("s1")
    assert view.revision == 1
    assert [(s.id, s.status) for s in view.steps] == [("a", "in_progress"), ("b", "pending")]
    assert view.last_rejection is not None
    assert view.last_rejection.proposal_id == bad.proposal_id


def test_a_commit_returns_the_view_it_wrote(ledger: PlanLedger) -> None:
    first = ledger.submit("s1", strict(("a", "in_progress"), ("b", "pending")))
    assert first.view is not None
    assert first.view == ledger.plan("s1") == ledger.plan_after("s1", first)
    second = ledger.submit("s1", strict(("a", "completed"), ("b", "in_progress")))
    assert ledger.plan_after("s1", first) == ledger.plan("s1", 1)  # its revision, not the latest
    assert second.view == ledger.plan("s1")
    retried = ledger.submit(
        "s1", strict(("a", "completed"), ("b", "in_progress")), proposal_id=second.proposal_id
    )
    assert retried.view is None  # nothing written by this call: read back at its revision
    assert ledger.plan_after("s1", retried) == ledger.plan("s1", 2)
    assert ledger.submit("s1", strict(("b", "pending"))).view is None  # rejected


def test_every_violation_reported_and_nothing_written_to_the_plan(ledger: PlanLedger) -> None:
    ledger.submit("s1", strict(("a", "in_progress"), ("b", "pending")))
    ledger.submit("s1", strict(("a", "completed"), ("b", "in_progress")))
    bad = ledger.submit(
        "s1",
        strict(
            ("a", "pending"),
            ("c", "in_progress"),
            ("d", "in_progress"),
            ("e", "blocked"),
            title="  ",
            mode="plan",
            notes="x",
        ),
    )
    assert bad.status == "rejected"
    assert set(codes(bad)) == {
        "mode_change_forbidden",
        "unknown_field",
        "blank_title",
        "invalid_status",
        "multiple_in_progress",
        "step_removed",
        "completed_step_reopened",
    }
    assert all(v.message for v in bad.violations)
    assert ledger.plan("s1").revision == 2
    assert ledger.session("s1").mode == "work"


def test_conflict_with_expected_revision(ledger: PlanLedger) -> None:
    ledger.submit("s1", strict(("a", "in_progress")))
    stale = ledger.submit("s1", strict(("a", "completed"), expected_revision=0))
    assert stale.status == "conflict"
    assert stale.current_revision == 1
    assert codes(stale) == ["revision_conflict"]
    fresh = ledger.submit("s1", strict(("a", "completed"), expected_revision=1))
    assert (fresh.status, fresh.revision) == ("committed", 2)


def test_unknown_session_and_invalid_ids(ledger: PlanLedger) -> None:
    with pytest.raises(SessionNotFound):
        ledger.submit("nope", strict(("a", "in_progress")))
    with pytest.raises(SessionNotFound):
        ledger.plan("nope")
    with pytest.raises(InvalidId):
        ledger.open_session(".hidden")
    with pytest.raises(InvalidId):
        ledger.open_session("x" * 129)
    with pytest.raises(SessionExists):
        ledger.open_session("s1")
    with pytest.raises(InvalidInput):
        ledger.submit("s1", ["not", "an", "object"])


def test_idempotent_retry_writes_nothing(ledger: PlanLedger, database_url: str) -> None:
    payload = strict(("a", "in_progress"), proposal_id="call-1")
    first = ledger.submit("s1", payload)
    events = count_events(database_url)
    again = ledger.submit("s1", payload)
    assert again.status == first.status == "committed"
    assert again.proposal_id == "call-1"
    assert count_events(database_url) == events
    reused = ledger.submit("s1", strict(("a", "completed"), proposal_id="call-1"))
    assert codes(reused) == ["proposal_id_reused"]
    assert count_events(database_url) == events
    assert ledger.plan("s1").revision == 1


def test_a_retry_answers_the_decision_recorded_not_the_plan_now(
    ledger: PlanLedger, new_ledger: Callable[[str], PlanLedger], database_url: str
) -> None:
    """Another writer commits between a call and its retry: the retry still answers what was
    decided then (its revision, and the plan as that commit left it), on any service."""
    mine = strict(("a", "in_progress"), proposal_id="mine")
    first = ledger.submit("s1", mine)
    refused = ledger.submit(
        "s1",
        strict(("a", "completed"), ("b", "in_progress"), ("c", "in_progress")),
        proposal_id="bad",
    )
    other = new_ledger(database_url)
    other.submit("s1", strict(("a", "completed"), ("b", "in_progress")))  # revision 2
    for service in (ledger, other):
        again = service.submit("s1", mine)
        assert (again.status, again.revision, again.current_revision) == ("committed", 1, 2)
        plan = service.plan_after("s1", again)
        assert plan.revision == 1 and [s.id for s in plan.steps] == ["a"]
        retried = service.submit(
            "s1",
            strict(("a", "completed"), ("b", "in_progress"), ("c", "in_progress")),
            proposal_id="bad",
        )
        assert (
            (retried.status, retried.revision) == ("rejected", refused.revision) == ("rejected", 1)
        )
        assert codes(retried) == codes(refused) == ["multiple_in_progress"]
    assert first.revision == 1


def test_idempotent_retry_of_a_rejection(ledger: PlanLedger) -> None:
    first = ledger.submit(
        "s1", strict(("a", "in_progress"), ("b", "in_progress")), proposal_id="r1"
    )
    again = ledger.submit(
        "s1", strict(("a", "in_progress"), ("b", "in_progress")), proposal_id="r1"
    )
    assert first.status == again.status == "rejected"
    assert codes(again) == ["multiple_in_progress"]


def test_two_stage_propose_then_decide(ledger: PlanLedger) -> None:
    proposal_id = ledger.propose("s1", strict(("a", "in_progress")))
    view = ledger.plan("s1")
    assert view.revision == 0 and view.steps == []
    assert view.pending_proposal is not None
    assert view.pending_proposal.proposal_id == proposal_id
    decision = ledger.decide("s1", proposal_id)
    assert (decision.status, decision.revision) == ("committed", 1)
    assert ledger.plan("s1").pending_proposal is None
    assert ledger.decide("s1", proposal_id).status == "committed"  # already decided
    with pytest.raises(ProposalNotFound):
        ledger.decide("s1", "never-proposed")


def test_newer_proposal_supersedes_undecided_one(ledger: PlanLedger) -> None:
    older = ledger.propose("s1", strict(("a", "in_progress")))
    newer = ledger.propose("s1", strict(("b", "in_progress")))
    superseded = ledger.decide("s1", older)
    assert superseded.status == "rejected"
    assert codes(superseded) == ["superseded"]
    assert ledger.decide("s1", newer).status == "committed"
    kinds = [(e.kind, e.proposal_id) for e in ledger.history("s1").entries]
    assert kinds == [
        ("proposed", older),
        ("rejected", older),
        ("proposed", newer),
        ("committed", newer),
    ]


def test_policy_fixed_by_first_proposal(ledger: PlanLedger) -> None:
    ledger.submit("s1", codex(("Locate the failure", "in_progress")))
    mismatch = ledger.submit("s1", strict(("a", "in_progress")))
    assert codes(mismatch) == ["policy_mismatch"]
    assert ledger.plan("s1").policy == "replace"


def test_codex_form_replaces_and_clears(ledger: PlanLedger) -> None:
    ledger.submit("s1", codex(("Locate the failure", "completed"), ("Fix it", "in_progress")))
    view = ledger.plan("s1")
    assert [s.id for s in view.steps] == ["locate-the-failure", "fix-it"]
    ledger.submit("s1", codex(("Fix it", "completed"), ("Fix it", "cancelled")))
    assert [s.id for s in ledger.plan("s1").steps] == ["fix-it", "fix-it-2"]
    cleared = ledger.submit("s1", codex())
    assert cleared.status == "committed"
    view = ledger.plan("s1")
    assert (view.revision, view.steps, view.title) == (3, [], None)


def test_goal_id_must_name_a_goal_of_the_session(ledger: PlanLedger) -> None:
    ledger.open_session("s2")
    ledger.start_goal("s2", "g-other", "someone else's goal")
    missing = ledger.submit("s1", strict(("a", "in_progress"), goal_id="g-other"))
    assert codes(missing) == ["unknown_goal"]
    ledger.start_goal("s1", "g1", "ship it")
    ok = ledger.submit("s1", strict(("a", "in_progress"), goal_id="g1"))
    assert ok.status == "committed"
    assert ledger.plan("s1").goal_id == "g1"


def test_goals_and_should_continue(ledger: PlanLedger) -> None:
    ledger.submit("s1", strict(("a", "in_progress"), ("b", "pending")))
    assert ledger.should_continue("s1") is False  # an unfinished plan never asks for a turn
    ledger.start_goal("s1", "g1", "ship it")
    assert ledger.should_continue("s1") is True
    with pytest.raises(GoalExists):
        ledger.start_goal("s1", "g1", "again")
    ledger.move_goal("s1", "g1", "block")
    assert ledger.should_continue("s1") is False
    with pytest.raises(IllegalTransition):
        ledger.move_goal("s1", "g1", "complete")
    ledger.move_goal("s1", "g1", "resume")
    ledger.move_goal("s1", "g1", "complete")
    view = ledger.session("s1")
    assert [(g.goal_id, g.state) for g in view.goals] == [("g1", "completed")]
    assert view.should_continue is False


def test_mode_changes_only_by_command(ledger: PlanLedger) -> None:
    assert ledger.session("s1").mode == "work"
    ledger.set_mode("s1", Mode.PLAN)
    assert ledger.session("s1").mode == "plan"
    rejected = ledger.submit("s1", strict(("a", "in_progress"), collaboration_mode="work"))
    assert codes(rejected) == ["mode_change_forbidden"]
    assert ledger.session("s1").mode == "plan"


def test_plan_at_revision_and_history_transitions(ledger: PlanLedger) -> None:
    ledger.submit("s1", strict(("a", "in_progress"), ("b", "pending")))
    ledger.submit("s1", strict(("a", "completed"), ("b", "in_progress"), ("c", "pending")))
    at_one = ledger.plan("s1", revision=1)
    assert [(s.id, s.status) for s in at_one.steps] == [("a", "in_progress"), ("b", "pending")]
    assert ledger.plan("s1", revision=0).steps == []
    with pytest.raises(RevisionNotFound):
        ledger.plan("s1", revision=3)
    history = ledger.history("s1").as_json()
    committed = [e for e in history["entries"] if e["kind"] == "committed"]
    assert committed[1]["transitions"] == [
        {"step_id": "a", "from": "in_progress", "to": "completed"},
        {"step_id": "b", "from": "pending", "to": "in_progress"},
        {"step_id": "c", "from": None, "to": "pending"},
    ]


def commits_read(ledger: PlanLedger, count: int) -> list[Any]:
    """The feed's commits of s1 once `count` are readable: on PostgreSQL a reader waits behind
    any transaction in flight on the server (other tests' too, in parallel)."""
    deadline = time.monotonic() + 30
    while True:
        commits = [e for e in ledger.events_after(0, "s1") if e.kind == "committed"]
        if len(commits) >= count or time.monotonic() > deadline:
            return commits
        time.sleep(0.05)


def test_an_earlier_revision_whose_commit_event_changed_is_never_shown(
    ledger: PlanLedger, database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    ledger.submit("s1", strict(("a", "in_progress"), ("b", "pending")))  # events 2, 3
    ledger.submit("s1", strict(("a", "completed"), ("b", "in_progress")))  # events 4, 5
    first = ledger.plan("s1", revision=1)
    feed = commits_read(ledger, 2)
    assert [event.plan for event in feed] == [
        first,
        ledger.plan("s1"),
    ]

    def retitled(data: dict[str, Any]) -> None:  # keeps every plan rule
        data["snapshot"]["_data_"]["steps"][0]["title"] = "Something else"

    edit_event(database_url, "plan:s1", 3, retitled)
    reader = new_ledger(database_url)
    assert corrupt_at(lambda: reader.plan("s1", revision=1)) == (3, "event_changed")
    committed = commits_read(reader, 2)
    assert [event.plan for event in committed] == [None, ledger.plan("s1")]  # none unchecked
    assert reader.plan("s1").revision == 2  # the latest, from its view


def test_verify_clean_then_tampered_commit(
    ledger: PlanLedger, database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    ledger.submit("s1", strict(("a", "in_progress"), ("b", "pending")))  # events 2, 3
    ledger.submit("s1", strict(("a", "completed"), ("b", "in_progress")))  # events 4, 5
    assert ledger.verify().ok

    def idle(data: dict[str, Any]) -> None:
        key = "snapshot" if "snapshot" in data else "candidate"
        data[key]["_data_"]["steps"][1]["status"] = "pending"

    # The proposal and its commit edited alike, so only the plan rules can catch it.
    edit_event(database_url, "plan:s1", 4, idle)
    edit_event(database_url, "plan:s1", 5, idle)
    report = new_ledger(database_url).verify()
    assert not report.ok
    (problem,) = report.problems
    assert (problem.session_id, problem.position, problem.rule) == ("s1", 5, "no_step_in_progress")
    assert "in_progress" in problem.message


def test_tampered_commit_alone_is_a_snapshot_mismatch(
    ledger: PlanLedger, database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    ledger.submit("s1", strict(("a", "in_progress")))
    ledger.submit("s1", strict(("a", "completed")))

    def reopen(data: dict[str, Any]) -> None:
        data["snapshot"]["_data_"]["steps"][0]["status"] = "in_progress"

    edit_event(database_url, "plan:s1", 5, reopen)
    fresh = new_ledger(database_url)
    (problem,) = fresh.verify(["s1"]).problems
    assert (problem.position, problem.rule) == (5, "snapshot_mismatch")
    with pytest.raises(CorruptHistory) as raised:
        fresh.plan("s1")  # ordinary reads refuse the history too
    assert raised.value.position == 5


def test_reopened_step_caught_on_replay(
    ledger: PlanLedger, database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    ledger.submit("s1", strict(("a", "completed"), ("b", "in_progress"), ("c", "pending")))
    ledger.submit("s1", strict(("a", "completed"), ("b", "completed"), ("c", "in_progress")))

    def reopen_a(data: dict[str, Any]) -> None:
        key = "snapshot" if "snapshot" in data else "candidate"
        data[key]["_data_"]["steps"][0]["status"] = "in_progress"
        data[key]["_data_"]["steps"][2]["status"] = "pending"

    edit_event(database_url, "plan:s1", 4, reopen_a)
    edit_event(database_url, "plan:s1", 5, reopen_a)
    (problem,) = new_ledger(database_url).verify().problems
    assert (problem.session_id, problem.position, problem.rule) == (
        "s1",
        5,
        "completed_step_reopened",
    )


def test_undecodable_event_is_named(
    ledger: PlanLedger, database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    ledger.submit("s1", strict(("a", "in_progress")))

    def garble(data: dict[str, Any]) -> None:
        data["snapshot"]["_data_"]["steps"] = "not a list"

    edit_event(database_url, "plan:s1", 3, garble)
    (problem,) = new_ledger(database_url).verify().problems
    assert (problem.position, problem.rule) == (3, "unreadable_event")


def test_a_strict_plan_restored_from_a_snapshot_keeps_its_policys_rules(
    database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    """A snapshot stores the policy by name: the plan it restores is still held to every
    strict rule (a removed accepted step, a blank title), as the plan it was taken from."""
    app = new_ledger(database_url)
    app.open_session("long")
    for n in range(55):  # 110 plan events: a snapshot is taken at version 100
        done = [(f"s{k}", "completed") for k in range(n)]
        assert app.submit("long", strict(*done, (f"s{n}", "in_progress"))).status == "committed"
    assert app.ledger.snapshots is not None and app.ledger.snapshots.get("plan:long")
    fresh = new_ledger(database_url)
    removed = fresh.submit("long", strict(("s0", "completed"), ("s54", "in_progress")))
    assert removed.status == "rejected"
    assert {v.code for v in removed.violations} == {"step_removed"}
    kept = [(f"s{k}", "completed") for k in range(54)]
    blank = fresh.submit("long", strict(*kept, ("s54", "in_progress"), title=" "))
    assert [v.code for v in blank.violations] == ["blank_title"]


def test_snapshots_speed_reads_but_verify_ignores_them(
    database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    app = new_ledger(database_url)
    app.open_session("long")
    titles = [f"Step {n}" for n in range(60)]
    for n in range(60):  # 120 plan events: a snapshot is taken at version 100
        steps = [(t, "completed") for t in titles[:n]] + [(titles[n], "in_progress")]
        assert app.submit("long", codex(*steps)).status == "committed"
    assert app.ledger.snapshots is not None
    # Taken from the aggregate just saved, at the end of the save that reached version 100.
    (taken,) = app.ledger.snapshots.get("plan:long")
    assert taken.originator_version == 101
    fresh = new_ledger(database_url)
    assert fresh.plan("long").revision == 60
    loaded = fresh.ledger.plan_aggregate("long")  # from the snapshot and the 19 events after it
    assert (loaded.version, loaded.snapshot) == (121, app.ledger.plan_aggregate("long").snapshot)

    def cancel_first(data: dict[str, Any]) -> None:
        key = "snapshot" if "snapshot" in data else "candidate"
        data[key]["_data_"]["steps"] = [
            {"id": "x", "title": "x", "status": "in_progress"},
            {"id": "y", "title": "y", "status": "in_progress"},
        ]

    # Corrupt an event the snapshot covers: ordinary reads don't see it, verify does.
    edit_event(database_url, "plan:long", 20, cancel_first)
    edit_event(database_url, "plan:long", 21, cancel_first)
    assert new_ledger(database_url).plan("long").revision == 60
    (problem,) = new_ledger(database_url).verify(["long"]).problems
    assert (problem.position, problem.rule) == (21, "multiple_in_progress")


def test_session_ids_and_verify_all(ledger: PlanLedger) -> None:
    ledger.open_session("s2")
    assert ledger.ledger.session_ids() == ["s1", "s2"]
    report = ledger.verify()
    assert report.ok and report.sessions_checked == 2


def test_compaction_snapshot(
    ledger: PlanLedger, database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    assert ledger.compaction("s1").state == "absent"
    ledger.submit("s1", strict(("a", "completed"), ("b", "in_progress"), ("c", "pending")))
    snap = ledger.compaction("s1", max_chars=500)
    assert (snap.state, snap.revision, snap.completed, snap.total) == ("present", 1, 1, 3)
    assert snap.current is not None and snap.current.id == "b"
    with pytest.raises(SessionNotFound):
        ledger.compaction("ghost")

    def garble(data: dict[str, Any]) -> None:
        data["snapshot"]["_data_"]["steps"] = "not a list"

    edit_event(database_url, "plan:s1", 3, garble)
    # An edit after the fact is found by verify (or a rebuild), which marks the session: reads
    # come from the views, so from then on they refuse it.
    auditor = new_ledger(database_url)
    assert not auditor.verify(["s1"]).ok
    broken = auditor.compaction("s1")
    assert broken.state == "unreadable" and broken.error
    assert "unreadable_event" in broken.error and broken.completed is None


def test_a_stale_cached_plan_never_commits(
    ledger: PlanLedger, database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    other = new_ledger(database_url)  # another process, with its own cache
    assert ledger.submit("s1", strict(("a", "in_progress"))).revision == 1  # cached here
    assert other.submit("s1", strict(("a", "completed"), ("b", "in_progress"))).revision == 2
    stale = ledger.submit("s1", strict(("a", "in_progress"), expected_revision=1))
    assert stale.status == "conflict" and stale.current_revision == 2
    redecided = ledger.submit("s1", strict(("a", "completed"), ("b", "completed")))
    assert (redecided.status, redecided.revision) == ("committed", 3)
    proposal_id = other.propose(
        "s1", strict(("a", "completed"), ("b", "completed"), ("c", "in_progress"))
    )
    assert ledger.decide("s1", proposal_id).revision == 4  # found though the cache predates it
    assert ledger.ledger.lost_races >= 1
    assert new_ledger(database_url).verify(["s1"]).ok


def test_outcomes_for_idempotency_are_bounded(ledger: PlanLedger) -> None:
    from domain.plan_state import REMEMBERED_OUTCOMES

    for n in range(REMEMBERED_OUTCOMES + 5):
        ledger.submit("s1", codex((f"Step {n}", "in_progress")), proposal_id=f"p{n}")
    plan = ledger.ledger.plan_aggregate("s1")
    assert len(plan.outcomes) == REMEMBERED_OUTCOMES
    assert "p0" not in plan.outcomes and f"p{REMEMBERED_OUTCOMES + 4}" in plan.outcomes
    assert ledger.verify(["s1"]).ok


def test_verify_finds_a_missing_event(
    ledger: PlanLedger, database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    ledger.submit("s1", strict(("a", "in_progress")))
    ledger.submit("s1", strict(("a", "completed")))
    delete_events(database_url, "plan:s1", 3)  # the first commit is gone
    (problem,) = new_ledger(database_url).verify(["s1"]).problems
    assert (problem.session_id, problem.position, problem.rule) == ("s1", 4, "missing_event")


def test_verify_finds_a_missing_plan(
    ledger: PlanLedger, database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    ledger.submit("s1", strict(("a", "in_progress")))
    delete_events(database_url, "plan:s1")
    report = new_ledger(database_url).verify()
    assert not report.ok
    (problem,) = report.problems
    assert (problem.session_id, problem.rule) == ("s1", "missing_plan")


def test_verify_finds_a_plan_naming_a_goal_the_session_lacks(
    ledger: PlanLedger, database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    ledger.start_goal("s1", "g", "Ship it")
    assert ledger.submit("s1", strict(("a", "in_progress"), goal_id="g")).status == "committed"

    def rename(data: dict[str, Any]) -> None:
        data["goal_id"] = "other"

    edit_event(database_url, "session:s1", 2, rename)  # GoalStarted now names another goal
    (problem,) = new_ledger(database_url).verify(["s1"]).problems
    assert (problem.session_id, problem.rule) == ("s1", "unknown_goal")


# -- the task form and where sessions come from -----------------------------------------------


def test_task_operations_on_both_databases(
    ledger: PlanLedger, database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    for title in ("Write the test", "Fix the bug", "Run the suite"):
        assert ledger.submit("s1", {"op": "create", "title": title}).status == "committed"
    ledger.submit("s1", {"op": "update", "id": "3", "add_blocked_by": ["1", "2"]})
    ledger.submit("s1", {"op": "update", "id": "1", "status": "in_progress", "owner": "main"})
    ledger.submit("s1", {"op": "update", "id": "2", "status": "in_progress"})
    blocked = ledger.submit("s1", {"op": "update", "id": "3", "status": "in_progress"})
    assert codes(blocked) == ["blocked_step_started"]
    ledger.submit("s1", {"op": "update", "id": "2", "status": "deleted"})
    view = ledger.plan("s1")
    assert view.policy == "tasks" and view.revision == 7
    assert [(s.id, s.status, s.blocked_by, s.owner) for s in view.steps] == [
        ("1", "in_progress", (), "main"),
        ("3", "pending", ("1",), None),
    ]
    dumped = view.model_dump(mode="json")["steps"]
    assert dumped[0] == {
        "id": "1",
        "title": "Write the test",
        "status": "in_progress",
        "owner": "main",
    }
    proposed = [e for e in ledger.history("s1").entries if e.kind == "proposed"]
    assert proposed[-1].operation is not None and proposed[-1].operation.status == "deleted"
    # Replay and a rebuilt view agree, from the events alone.
    fresh = new_ledger(database_url)
    assert fresh.verify(["s1"]).ok
    assert fresh.plan("s1").steps == view.steps

    # An edited operation no longer makes its commit: corrupt, on every reader.
    def edit_op(data: dict[str, Any]) -> None:
        data["operation"]["_data_"]["add_blocked_by"] = ["1"]

    edit_event(database_url, "plan:s1", 8, edit_op)  # the proposal of task 3's blockers
    (problem,) = new_ledger(database_url).verify(["s1"]).problems
    assert (problem.position, problem.rule) == (9, "snapshot_mismatch")


def test_the_session_list_shows_plans_at_a_glance_and_origins(ledger: PlanLedger) -> None:
    ledger.submit("s1", strict(("a", "completed"), ("b", "in_progress"), ("c", "pending")))
    ledger.open_session("fork", source="codex", parent_session_id="s1", cwd="/work/repo")
    ledger.submit("fork", codex(("Locate", "in_progress"), ("Skip", "cancelled")))
    listed = {item.session_id: item for item in ledger.sessions().sessions}
    s1, fork = listed["s1"], listed["fork"]
    assert (s1.title, s1.progress.completed, s1.progress.total) == ("Ship export", 1, 3)
    assert (s1.source, s1.parent_session_id, s1.cwd, s1.corrupt) == (None, None, None, False)
    assert (fork.title, fork.progress.completed, fork.progress.total) == ("Locate", 0, 1)
    assert (fork.source, fork.parent_session_id, fork.cwd) == ("codex", "s1", "/work/repo")
    assert ledger.session("fork").parent_session_id == "s1"
    shape = ledger.sessions().model_dump(mode="json")["sessions"][0]
    assert set(shape) >= {
        "session_id",
        "mode",
        "revision",
        "updated_at",
        "title",
        "progress",
        "source",
        "parent_session_id",
        "cwd",
        "corrupt",
    }
    with pytest.raises(InvalidId):
        ledger.open_session("bad-parent", parent_session_id=".no")


def test_every_proposal_records_who_sent_it(
    ledger: PlanLedger, database_url: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    import getpass

    ledger.submit("s1", strict(("a", "in_progress")))  # a local client: the OS user
    ledger.submit("s1", strict(("a", "completed")), actor="ci-bot")
    ledger.propose("s1", strict(("a", "completed"), ("b", "in_progress")), actor="alice")
    proposed = [e for e in ledger.history("s1").entries if e.kind == "proposed"]
    assert [e.actor for e in proposed] == [getpass.getuser(), "ci-bot", "alice"]
    assert ledger.verify().ok
    rebuilt = new_ledger(database_url)
    rebuilt.runner.rebuild()  # folded again from the events
    assert [e.actor for e in rebuilt.history("s1").entries if e.kind == "proposed"] == [
        getpass.getuser(),
        "ci-bot",
        "alice",
    ]


def test_the_first_proposal_after_opening_reads_nothing_back(ledger: PlanLedger) -> None:
    """The plan a session was opened with is the one its first proposal is decided on (the
    other process's write in between is still caught: see test_race)."""
    reads: list[str] = []
    repository = ledger.ledger.repository
    get = repository.get

    def counted(aggregate_id: str, *args: Any, **kwargs: Any) -> Any:
        reads.append(aggregate_id)
        return get(aggregate_id, *args, **kwargs)

    repository.get = counted  # type: ignore[method-assign]
    ledger.open_session("fresh")
    decision = ledger.submit("fresh", strict(("a", "in_progress")))
    assert decision.status == "committed" and decision.revision == 1
    assert reads == []
    assert ledger.plan("fresh") == decision.view
