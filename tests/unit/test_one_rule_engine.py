"""One rule engine: the aggregate's replay, verify's replay and the views' fold judge every history
alike, because all three apply a plan's events with the same functions (domain.plan_state).

Random histories are made by the domain (proposals in the three forms, decided or left to be
superseded), stored as the ledger stores them, then forged as an edit of the events table
would: a row deleted, duplicated, or two rows' contents swapped, or one event's content
changed. Each reader must find the same thing: no problem, or the same rule at the same
position; and where all is well, the same plan.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from eventsourcing.persistence import DatetimeAsISO, Mapper, StoredEvent
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.forms import parse_proposal
from domain.ids import plan_aggregate_id
from domain.models import PlanSnapshot, Step, TaskOperation, Violation
from domain.plan import Plan
from domain.plan_state import Outcome, PendingProposal
from planledger.service.verify import replay, replayed_plan
from planledger.storage.transcoding import EventTranscoder, PydanticTranscoding
from projections.decode import PlanEventDecoder
from projections.fold import fold_events
from projections.shapes import HistoryEntry, PlanView
from tests.unit.test_replay import CODEX_FORGERIES as CODEX
from tests.unit.test_replay import SESSION as SESSION_OF_REPLAY
from tests.unit.test_replay import STRICT_FORGERIES as STRICT
from tests.unit.test_replay import codex_history, strict_history

SESSION = "s"
IDS = ["a", "b", "c"]
TITLES = ["Read the code", "Write the fix", "Run the tests"]
STATUSES = ["pending", "in_progress", "completed", "cancelled"]


def ledger_mapper() -> Mapper[Any]:
    transcoder = EventTranscoder()
    transcoder.register(DatetimeAsISO())
    for model in (PlanSnapshot, Violation, PendingProposal, Outcome, TaskOperation):
        transcoder.register(PydanticTranscoding(model))
    return Mapper(transcoder=transcoder)


MAPPER = ledger_mapper()

steps = st.lists(st.tuples(st.sampled_from(IDS), st.sampled_from(STATUSES)), max_size=3)


@st.composite
def payloads(draw: Any) -> dict[str, Any]:
    form = draw(st.sampled_from(["strict", "codex", "task"]))
    chosen = draw(steps)
    if form == "strict":
        return {
            "title": "Ship it",
            "steps": [{"id": i, "title": TITLES[IDS.index(i)], "status": s} for i, s in chosen],
        }
    if form == "codex":
        return {"plan": [{"step": TITLES[IDS.index(i)], "status": s} for i, s in chosen]}
    if draw(st.booleans()):
        return {"op": "create", "title": draw(st.sampled_from(TITLES))}
    task = draw(st.sampled_from(["1", "2", "3"]))
    return {"op": "update", "id": task, "status": draw(st.sampled_from(STATUSES))}


@st.composite
def histories(draw: Any) -> list[StoredEvent]:
    plan = Plan.create(plan_aggregate_id(SESSION), SESSION)
    for n, payload in enumerate(draw(st.lists(payloads(), min_size=1, max_size=8))):
        plan.propose(f"p{n}", parse_proposal(payload), f"fp-{n}", "unit")
        if draw(st.integers(0, 4)):  # mostly decided; else superseded by the next
            plan.decide(set())
    return [MAPPER.to_stored_event(event) for event in plan.collect_events()]


def renumbered(rows: list[StoredEvent]) -> list[StoredEvent]:
    return [dataclasses.replace(row, originator_version=n + 1) for n, row in enumerate(rows)]


def edited(row: StoredEvent, draw: Any) -> StoredEvent:
    """One event's content changed as an edit of its row would change it."""
    event = MAPPER.to_domain_event(row)
    if draw(st.integers(0, 9)) == 0:  # a timestamp of a type the ledger never writes
        return MAPPER.to_stored_event(dataclasses.replace(event, timestamp="yesterday"))
    if isinstance(event, Plan.PlanCommitted):
        change = draw(st.sampled_from(["status", "title", "revision", "drop_step", "typed"]))
        snapshot = event.snapshot
        if change == "typed":  # a field of a type the ledger never writes
            event = dataclasses.replace(event, revision=str(event.revision))
        elif change == "revision":
            event = dataclasses.replace(
                event, revision=event.revision + draw(st.sampled_from([-1, 1]))
            )
        elif snapshot.steps:
            first = snapshot.steps[0]
            if change == "status":
                first = first.model_copy(update={"status": draw(st.sampled_from(STATUSES))})
                new_steps: tuple[Step, ...] = (first, *snapshot.steps[1:])
            elif change == "title":
                new_steps = (first.model_copy(update={"title": "Edited"}), *snapshot.steps[1:])
            else:
                new_steps = snapshot.steps[1:]
            event = dataclasses.replace(
                event, snapshot=snapshot.model_copy(update={"steps": new_steps})
            )
    elif isinstance(event, Plan.PlanProposed):
        change = draw(st.sampled_from(["form", "expected", "violations", "typed"]))
        if change == "typed":
            field, value = draw(
                st.sampled_from([("proposal_id", 7), ("client", 1.5), ("expected_revision", True)])
            )
            event = dataclasses.replace(event, **{field: value})
        elif change == "form":
            event = dataclasses.replace(
                event, form=draw(st.sampled_from(["strict", "codex", "task"]))
            )
        elif change == "expected":
            event = dataclasses.replace(event, expected_revision=draw(st.integers(0, 3)))
        else:
            extra = Violation(code="blank_title", message="edited in")
            event = dataclasses.replace(event, shape_violations=(extra,))
    elif isinstance(event, Plan.PlanRejected):
        violations = draw(st.sampled_from([(), ("not a violation",)]))
        event = dataclasses.replace(event, violations=violations)
    return MAPPER.to_stored_event(event)


@st.composite
def forged(draw: Any) -> list[StoredEvent]:
    rows = draw(histories())
    kind = draw(st.sampled_from(["none", "delete", "duplicate", "swap", "edit"]))
    index = draw(st.integers(0, len(rows) - 1))
    if kind == "delete":
        del rows[index]
    elif kind == "duplicate":
        rows = renumbered([*rows[: index + 1], rows[index], *rows[index + 1 :]])
    elif kind == "swap":
        other = draw(st.integers(0, len(rows) - 1))
        a, b = rows[index], rows[other]
        rows[index] = dataclasses.replace(a, topic=b.topic, state=b.state)
        rows[other] = dataclasses.replace(b, topic=a.topic, state=a.state)
    elif kind == "edit":
        rows[index] = edited(rows[index], draw)
    return rows


def verdict(problem: Any) -> tuple[str, int] | None:
    return None if problem is None else (problem.rule, problem.position)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(forged())
def test_replay_verify_and_fold_judge_every_history_alike(rows: list[StoredEvent]) -> None:
    aggregate, by_aggregate = replay(SESSION, rows, MAPPER)
    by_verify = replayed_plan(SESSION, rows, PlanEventDecoder(MAPPER))
    changes = fold_events({}, [(MAPPER.to_domain_event(row), None) for row in rows])
    corrupt = changes.corrupt.get(SESSION)
    by_fold = None if corrupt is None else (corrupt.rule, corrupt.position)
    assert verdict(by_aggregate) == verdict(by_verify.problem) == by_fold
    if by_fold is None:
        _, view = changes.views[SESSION]
        assert isinstance(aggregate, Plan)
        assert by_verify.version == aggregate.version
        assert view.revision == aggregate.revision
        assert view.policy == aggregate.policy
        steps = aggregate.snapshot.steps if aggregate.snapshot else ()
        assert tuple(view.steps) == steps
        assert (view.pending_proposal is None) == (aggregate.pending is None)
    # What the fold builds without validating is what validation builds from the same data.
    for row in changes.history:
        data = row.entry.model_dump(by_alias=True)
        assert row.entry == HistoryEntry.model_validate(data)
        assert row.entry.model_dump_json(by_alias=True) == HistoryEntry.model_validate(
            data
        ).model_dump_json(by_alias=True)
    for _, view in changes.views.values():
        assert view == PlanView.model_validate(view.model_dump())
        assert (
            view.model_dump_json() == PlanView.model_validate(view.model_dump()).model_dump_json()
        )


def test_the_fold_from_a_stored_view_judges_the_commit_that_follows() -> None:
    """A proposal folded in one batch and its commit in the next: the facts kept in the view
    (its pending proposal's recorded shape violations included) still judge the commit."""
    plan = Plan.create(plan_aggregate_id(SESSION), SESSION)
    body = {"title": "T\x07", "steps": [{"id": "a", "title": "A", "status": "in_progress"}]}
    plan.propose("p0", parse_proposal(body), "fp", "unit")
    events = list(plan.collect_events())
    # A forged commit of a proposal that broke the rules when it was read.
    commit = Plan.PlanCommitted(
        originator_id=plan.id,
        originator_version=3,
        timestamp=events[-1].timestamp,
        proposal_id="p0",
        revision=1,
        snapshot=events[-1].candidate,
    )
    first = fold_events({}, [(event, None) for event in events])
    _, view = first.views[SESSION]
    assert view.pending_proposal is not None and view.pending_proposal.shape_violations
    second = fold_events({SESSION: view}, [(commit, None)])
    assert second.corrupt[SESSION].rule == "control_character"
    # The same history in one fold says the same.
    whole = fold_events({}, [(event, None) for event in [*events, commit]])
    assert whole.corrupt[SESSION].rule == "control_character"


@pytest.mark.parametrize(
    ("history", "forge", "rule", "position"),
    [
        *[pytest.param(strict_history, *case.values, id=f"strict-{case.id}") for case in STRICT],
        *[pytest.param(codex_history, *case.values, id=f"codex-{case.id}") for case in CODEX],
    ],
)
def test_verify_and_the_fold_refuse_each_forged_history_of_the_replay_tests(
    history: Callable[[], tuple[Plan, list[Any]]],
    forge: Callable[[list[Any]], list[Any]],
    rule: str,
    position: int,
) -> None:
    """The forgeries test_replay holds the aggregate to, each judged alike by the two others."""
    _, events = history()
    rows = [MAPPER.to_stored_event(event) for event in forge(events)]
    by_verify = replayed_plan(SESSION_OF_REPLAY, rows, PlanEventDecoder(MAPPER)).problem
    assert by_verify is not None and (by_verify.rule, by_verify.position) == (rule, position)
    folded = [(MAPPER.to_domain_event(row), None) for row in rows]
    corrupt = fold_events({}, folded).corrupt[SESSION_OF_REPLAY]
    assert (corrupt.rule, corrupt.position) == (rule, position)
