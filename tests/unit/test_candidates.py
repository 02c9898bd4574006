"""A proposal's candidate is made from texts already read, without validating them again: it
must be exactly the snapshot validation makes of them (values, their types, the fields given)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from domain.forms import parse_proposal
from domain.models import PlanSnapshot, Step, TaskOperation
from domain.tasks import apply_operation

texts = st.text(max_size=30)
statuses = st.sampled_from(["pending", "in_progress", "completed", "cancelled", " todo ", ""])


def assert_as_validated(candidate: PlanSnapshot | None) -> None:
    assert candidate is not None
    validated = PlanSnapshot.model_validate(
        {
            "title": candidate.title,
            "goal_id": candidate.goal_id,
            "steps": [
                {"id": step.id, "title": step.title, "status": step.status}
                for step in candidate.steps
            ],
        }
    )
    assert candidate == validated
    assert candidate.model_fields_set == validated.model_fields_set
    assert candidate.model_dump_json() == validated.model_dump_json()
    for made, expected in zip(candidate.steps, validated.steps, strict=True):
        assert made.model_fields_set == expected.model_fields_set
        assert {k: type(v) for k, v in vars(made).items()} == {
            k: type(v) for k, v in vars(expected).items()
        }
    assert hash(candidate) == hash(validated)


@settings(max_examples=100, deadline=None)
@given(steps=st.lists(st.tuples(texts, statuses), max_size=6), goal=st.none() | texts)
def test_a_codex_candidate_is_what_validation_makes(
    steps: list[tuple[str, str]], goal: str | None
) -> None:
    payload: dict[str, Any] = {"plan": [{"step": text, "status": s} for text, s in steps]}
    if goal is not None:
        payload["goal_id"] = goal
    assert_as_validated(parse_proposal(payload).candidate)


@settings(max_examples=100, deadline=None)
@given(
    title=texts,
    steps=st.lists(st.tuples(texts, texts, statuses), max_size=6),
    goal=st.none() | texts,
)
def test_a_strict_candidate_is_what_validation_makes(
    title: str, steps: list[tuple[str, str, str]], goal: str | None
) -> None:
    payload = {
        "title": title,
        "goal_id": goal,
        "steps": [{"id": i, "title": t, "status": s} for i, t, s in steps],
    }
    assert_as_validated(parse_proposal(payload).candidate)


def test_steps_sent_as_numbers_are_texts_in_the_candidate() -> None:
    payload = {"title": 7, "steps": [{"id": 1, "title": 2.5, "status": True}]}
    candidate = parse_proposal(payload).candidate
    assert_as_validated(candidate)
    assert candidate is not None
    assert candidate.steps[0].id == "1" and candidate.steps[0].title == "2.5"


def assert_as_copied(made: Step, expected: Step) -> None:
    assert made == expected and list(vars(made)) == list(vars(expected))
    assert made.model_fields_set == expected.model_fields_set
    assert made.model_dump_json() == expected.model_dump_json()


@settings(max_examples=100, deadline=None)
@given(
    title=st.none() | texts,
    status=st.none() | statuses,
    owner=st.none() | texts,
    add_blocked_by=st.lists(texts, max_size=2).map(tuple),
    add_blocks=st.sampled_from([(), ("2",)]),
    owners=st.tuples(st.none() | texts, st.none() | texts),
    blocked=st.sampled_from([(), ("1",), ("x",)]),
)
def test_the_tasks_an_update_changes_are_what_model_copy_makes(
    title: str | None,
    status: str | None,
    owner: str | None,
    add_blocked_by: tuple[str, ...],
    add_blocks: tuple[str, ...],
    owners: tuple[str | None, str | None],
    blocked: tuple[str, ...],
) -> None:
    first = Step(id="1", title="Do it", status="pending", owner=owners[0])
    second = Step(id="2", title="Then this", status="pending", owner=owners[1], blocked_by=blocked)
    operation = TaskOperation(
        op="update",
        id="1",
        title=title,
        status=status,
        owner=owner,
        add_blocked_by=add_blocked_by,
        add_blocks=add_blocks,
    )
    made, violations = apply_operation(
        PlanSnapshot(title="Tasks", steps=(first, second)), operation
    )
    assert made is not None and violations == []
    asked = {"title": title, "status": status}
    changes: dict[str, Any] = {key: value for key, value in asked.items() if value is not None}
    if owner is not None:
        changes["owner"] = owner or None  # "" clears it
    if add_blocked_by:
        changes["blocked_by"] = tuple(dict.fromkeys((*first.blocked_by, *add_blocked_by)))
    assert_as_copied(made.steps[0], first.model_copy(update=changes) if changes else first)
    blocks = add_blocks and "1" not in blocked
    expected = second.model_copy(update={"blocked_by": (*blocked, "1")}) if blocks else second
    assert_as_copied(made.steps[1], expected)


@settings(max_examples=50, deadline=None)
@given(blocked=st.lists(st.sampled_from(["1", "2", "x"]), max_size=3, unique=True).map(tuple))
def test_a_deleted_task_leaves_its_dependents_as_model_copy_makes(blocked: tuple[str, ...]) -> None:
    first = Step(id="1", title="Do it", status="pending")
    second = Step(id="2", title="Then this", status="pending", blocked_by=blocked)
    operation = TaskOperation(op="update", id="1", status="deleted")
    made, _ = apply_operation(PlanSnapshot(title="Tasks", steps=(first, second)), operation)
    assert made is not None and len(made.steps) == 1
    kept = tuple(task_id for task_id in blocked if task_id != "1")
    expected = second.model_copy(update={"blocked_by": kept}) if "1" in blocked else second
    assert_as_copied(made.steps[0], expected)


@settings(max_examples=100, deadline=None)
@given(
    count=st.integers(min_value=0, max_value=3),
    operation=st.builds(
        TaskOperation,
        op=st.sampled_from(["create", "update"]),
        id=st.sampled_from([None, "1", "2", "9"]),
        title=st.none() | texts,
        status=st.none() | statuses | st.just("deleted"),
    ),
)
def test_a_task_operations_list_is_what_validation_makes(
    count: int, operation: TaskOperation
) -> None:
    previous = PlanSnapshot(
        title="Tasks",
        steps=tuple(Step(id=str(n + 1), title=f"T{n}", status="pending") for n in range(count)),
    )
    made, _ = apply_operation(previous, operation)
    if made is not None:
        validated = PlanSnapshot(title=made.title, goal_id=made.goal_id, steps=made.steps)
        assert made == validated and made.model_fields_set == validated.model_fields_set
        assert made.model_dump_json() == validated.model_dump_json()
