"""Hostile input (issue 8): limits enforced before any work that grows with the input.

A payload past the limits is invalid input (nothing recorded, exit 2 / HTTP 422), never a crash;
an over-long text or step list is a rejection whose recorded candidate stays small.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

from domain.errors import ErrorKind, InvalidPayload
from domain.forms import parse_proposal
from domain.ids import plan_aggregate_id
from domain.limits import MAX_DEPTH, MAX_INTEGER, MAX_REPORTED
from domain.models import MAX_STEPS
from domain.plan import Plan
from domain.step_ids import derive_step_ids, slug


def nested(depth: int, leaf: Any = 1) -> Any:
    """`depth` lists inside one another (built without recursion)."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def decide(payload: dict[str, Any]) -> tuple[Plan, Any]:
    plan = Plan.create(plan_aggregate_id("s"), "s")
    plan.propose("p1", parse_proposal(payload), "fp", "unit")
    return plan, plan.decide({"g1"})


def recorded_size(plan: Plan) -> int:
    """Characters the proposal's event would put in the store (its payload as JSON)."""
    [proposed] = [e for e in plan.collect_events() if isinstance(e, Plan.PlanProposed)]
    assert proposed.candidate is not None
    return len(proposed.candidate.model_dump_json()) + sum(
        len(v.model_dump_json()) for v in proposed.shape_violations
    )


# -- refused as invalid input --------------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param({"plan": [], "notes": nested(600)}, id="600-deep-under-unknown-field"),
        pytest.param({"plan": nested(600, {"step": "x"})}, id="600-deep-plan"),
        pytest.param({"title": "T", "steps": [{"id": "a", "title": nested(100_000)}]}, id="100k"),
        pytest.param({"plan": [], "notes": {"a": nested(MAX_DEPTH)}}, id="one-past-the-limit"),
        pytest.param({"plan": [], "expected_revision": 10**5000}, id="5000-digit-revision"),
        pytest.param({"plan": [{"step": "x", "status": -(10**5000)}]}, id="5000-digit-status"),
        pytest.param({"plan": [], "n": MAX_INTEGER + 1}, id="101-digits"),
        pytest.param({"plan": [], "n": -MAX_INTEGER - 1}, id="101-digits-negative"),
        pytest.param({"plan": [], 7: "x"}, id="non-string-key"),
        pytest.param({"plan": [{"step": object(), "status": "pending"}]}, id="not-json-data"),
    ],
)
def test_payload_past_the_limits_is_invalid_input(payload: dict[str, Any]) -> None:
    with pytest.raises(InvalidPayload) as caught:
        parse_proposal(payload)
    assert caught.value.kind is ErrorKind.INVALID
    assert caught.value.code == "invalid_input"
    assert len(str(caught.value)) < 200


def test_payload_at_the_limits_is_read() -> None:
    payload = {"plan": [{"step": "x", "status": "pending"}], "notes": nested(MAX_DEPTH - 1)}
    json.dumps(payload)  # within the limits, a fingerprint can always be computed
    parsed = parse_proposal({**payload, "expected_revision": MAX_INTEGER})
    assert [v.code for v in parsed.violations] == ["unknown_field"]
    assert parsed.expected_revision == MAX_INTEGER


# -- bounded work --------------------------------------------------------------------------


def quadratic_reference(texts: list[str]) -> list[str]:
    """The original derivation (kept verbatim): stored histories were derived with it."""
    used: set[str] = set()
    ids = []
    for text in texts:
        base = slug(text)
        candidate, n = base, 1
        while candidate in used:
            n += 1
            candidate = f"{base}-{n}"
        used.add(candidate)
        ids.append(candidate)
    return ids


@settings(max_examples=300, deadline=None, database=None)
@given(hst.lists(hst.sampled_from(["a", "A", "a-2", "a 2", "a-3", "", "!!", "step", "step-2"])))
def test_linear_step_ids_equal_the_original_ones(texts: list[str]) -> None:
    assert derive_step_ids(texts) == quadratic_reference(texts)


def test_identical_step_texts_cost_linear_time() -> None:
    started = time.process_time()
    ids = derive_step_ids([""] * 30_000)  # quadratic: ~450 million probes, minutes
    assert time.process_time() - started < 3.0
    assert ids[:3] == ["step", "step-2", "step-3"]
    assert ids[-1] == "step-30000"


def test_a_long_step_list_is_counted_not_processed() -> None:
    started = time.process_time()
    plan, outcome = decide({"plan": [{"step": "same", "status": "pending"}] * 60_000})
    assert time.process_time() - started < 3.0
    assert outcome.status == "rejected"
    [violation] = outcome.violations
    assert violation.code == "too_many_steps"
    assert "60000 steps" in violation.message
    assert f"first {MAX_STEPS}" in violation.message
    assert plan.pending is None
    proposed = next(e for e in plan.collect_events() if isinstance(e, Plan.PlanProposed))
    assert proposed.candidate is not None
    assert len(proposed.candidate.steps) == MAX_STEPS


# -- a rejected proposal is recorded bounded -----------------------------------------------

BIG = 10_000_000


@pytest.mark.parametrize(
    ("payload", "codes"),
    [
        pytest.param(
            {"title": "T" * BIG, "steps": [{"id": "a", "title": "A", "status": "completed"}]},
            ["too_long"],
            id="10MB-title",
        ),
        pytest.param(
            {"title": "T", "steps": [{"id": "a", "title": "A" * BIG, "status": "completed"}]},
            ["too_long"],
            id="10MB-step-title",
        ),
        pytest.param(
            {"title": "T", "steps": [{"id": "a" * BIG, "title": "A", "status": "completed"}]},
            ["invalid_step_id"],
            id="10MB-step-id",
        ),
        pytest.param(
            {"title": "T", "steps": [{"id": "a", "title": "A", "status": "x" * BIG}]},
            ["invalid_status"],
            id="10MB-status",
        ),
        pytest.param(
            {"plan": [{"step": "s" * BIG, "status": "pending"}]}, ["too_long"], id="10MB-step"
        ),
        pytest.param({"plan": [], "goal_id": "g" * BIG}, ["unknown_goal"], id="10MB-goal_id"),
    ],
)
def test_a_huge_text_is_rejected_and_recorded_bounded(
    payload: dict[str, Any], codes: list[str]
) -> None:
    plan, outcome = decide(payload)
    assert [v.code for v in outcome.violations] == codes
    assert recorded_size(plan) < 5_000


def test_a_huge_explanation_is_recorded_cut() -> None:
    plan, outcome = decide({"explanation": "e" * BIG, "plan": []})
    assert outcome.status == "committed"  # no rule bounds an explanation: it is only cut
    proposed = next(e for e in plan.collect_events() if isinstance(e, Plan.PlanProposed))
    assert proposed.explanation is not None
    assert 1_000 < len(proposed.explanation) < 5_000
    assert proposed.explanation.endswith("…")


def test_a_near_miss_is_recorded_as_sent() -> None:
    title = "T" * 201
    plan, outcome = decide({"title": title, "steps": []})
    assert [v.code for v in outcome.violations] == ["too_long"]
    proposed = next(e for e in plan.collect_events() if isinstance(e, Plan.PlanProposed))
    assert proposed.candidate is not None
    assert proposed.candidate.title == title


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        pytest.param(
            {"plan": [], **{f"field{n}": n for n in range(10_000)}},
            "unknown_field",
            id="10k-unknown-fields",
        ),
        pytest.param(
            {"plan": [{"step": "x", "status": "pending", **{f"f{n}": 1 for n in range(10_000)}}]},
            "unknown_field",
            id="10k-unknown-step-fields",
        ),
        pytest.param({"plan": [], "notes": ["\x00"] * 10_000}, "invalid_text", id="10k-NULs"),
    ],
)
def test_many_problems_of_one_kind_are_counted(payload: dict[str, Any], code: str) -> None:
    _, outcome = decide(payload)
    found = [v for v in outcome.violations if v.code == code]
    assert len(found) == MAX_REPORTED + 1
    assert re.search(rf"\b{10_000 - MAX_REPORTED} more\b", found[-1].message)
    assert sum(len(v.message) for v in outcome.violations) < 5_000
