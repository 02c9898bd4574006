"""A proposal's candidate is made from texts already read, without validating them again: it
must be exactly the snapshot validation makes of them (values, their types, the fields given)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from domain.forms import parse_proposal
from domain.models import PlanSnapshot

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
