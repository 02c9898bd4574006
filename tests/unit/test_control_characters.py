"""Terminal control characters in a proposal's texts: refused when a new proposal is decided
[control_character], never stored as sent, and never a reason to call an old history corrupt.

Tab and newline are text (a CRLF line end too); every other C0 character, DEL and the C1 range
(U+0080-U+009F) make a terminal act (clear the screen, retitle the window, move the cursor).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from domain.errors import InvalidId
from domain.forms import clean_text, derive_step_ids, parse_proposal
from domain.ids import plan_aggregate_id, validate_id
from domain.models import PlanSnapshot, Step
from domain.plan import Plan
from domain.session_fields import Origin
from projections.fold import fold_events

SESSION = "s1"
CLEAR = "\x1b[2J"
RETITLE = "\x1b]0;pwned\x07"
CONTROLS = {
    "ESC-clear-screen": CLEAR,
    "OSC-retitle": RETITLE,
    "backspace": "\x08",
    "lone-CR": "\r",
    "vertical-tab": "\x0b",
    "DEL": "\x7f",
    "C1-CSI": "\x9b2J",
    "C1-NEL": "\x85",
}
UNSAFE = re.compile(r"[\x01-\x08\x0b-\x1f\x7f-\x9f]")


def step(step_id: str = "a", title: str = "Do a", status: str = "in_progress") -> dict[str, str]:
    return {"id": step_id, "title": title, "status": status}


def strict(title: str = "Ship", **step_fields: str) -> dict[str, Any]:
    return {"title": title, "steps": [step(**step_fields)]}


def codex(text: str = "Do a", explanation: str | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {"plan": [{"step": text, "status": "in_progress"}]}
    if explanation is not None:
        payload["explanation"] = explanation
    return payload


# Every text of every form, with the control character mid-text (trimming cannot remove it).
PLACES: dict[str, Callable[[str], dict[str, Any]]] = {
    "strict-title": lambda c: strict(title=f"Sh{c}ip"),
    "strict-step-title": lambda c: {"title": "Ship", "steps": [step(title=f"Do{c} a")]},
    "strict-step-id": lambda c: strict(step_id=f"a{c}b"),
    "codex-step": lambda c: codex(f"Do{c} a"),
    "codex-explanation": lambda c: codex(explanation=f"Because{c} so"),
    "task-create-title": lambda c: {"op": "create", "id": "1", "title": f"Run{c} it"},
    "task-create-detail": lambda c: {"op": "create", "title": "Run", "detail": f"x{c}y"},
    "task-create-active-form": lambda c: {"op": "create", "title": "Run", "active_form": f"R{c}"},
    "task-create-id": lambda c: {"op": "create", "id": f"1{c}2", "title": "Run"},
    "task-update-owner": lambda c: {"op": "update", "id": "1", "owner": f"agent{c}x"},
    "task-update-title": lambda c: {"op": "update", "id": "1", "title": f"Run{c} it"},
    "strict-goal-id": lambda c: {**strict(), "goal_id": f"g{c}1"},
}


def fresh_plan(with_task: bool = False) -> Plan:
    plan = Plan.create(plan_aggregate_id(SESSION), SESSION)
    if with_task:
        plan.propose("t0", parse_proposal({"op": "create", "id": "1", "title": "Run"}), "f0", "u")
        assert plan.decide(set()).status == "committed"
    return plan


def all_texts(value: Any) -> list[str]:
    """Every string of a recorded event's payload (model dumps, lists, dicts)."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="python")
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in [key, *all_texts(item)]]
    if isinstance(value, list | tuple):
        return [text for item in value for text in all_texts(item)]
    return []


@pytest.mark.parametrize("control", CONTROLS.values(), ids=CONTROLS.keys())
@pytest.mark.parametrize("place", PLACES)
def test_a_control_character_in_any_text_rejects_the_proposal(place: str, control: str) -> None:
    payload = PLACES[place](control)
    parsed = parse_proposal(payload)
    assert "control_character" in [v.code for v in parsed.violations], parsed.violations
    plan = fresh_plan(with_task=place.startswith("task-update"))
    plan.propose("p1", parsed, "fp", "unit")
    outcome = plan.decide({"g1"})
    assert outcome.status == "rejected"
    codes = [v.code for v in outcome.violations]
    assert "control_character" in codes
    # The recorded proposal and its violations hold no control character: `plan history` and
    # every view can print them as they are.
    events = plan.collect_events()
    proposed = [e for e in events if isinstance(e, Plan.PlanProposed)][-1]
    stored = [
        *all_texts(proposed.candidate),
        *all_texts(proposed.operation),
        *all_texts(proposed.explanation),
        *all_texts(list(proposed.shape_violations)),
        *all_texts(list(outcome.violations)),
    ]
    assert not [text for text in stored if UNSAFE.search(text)], stored


def test_the_violation_names_where_and_what() -> None:
    parsed = parse_proposal({"title": "Ship", "steps": [step(title=f"Do {CLEAR} a")]})
    [violation] = [v for v in parsed.violations if v.code == "control_character"]
    assert "steps[0].title" in violation.message and "U+001B" in violation.message
    assert not UNSAFE.search(violation.message)


def test_many_control_characters_are_reported_in_bounded_violations() -> None:
    payload = {"plan": [{"step": f"Do {n}{CLEAR}", "status": "pending"} for n in range(60)]}
    found = [v for v in parse_proposal(payload).violations if v.code == "control_character"]
    assert 1 < len(found) <= 11


@pytest.mark.parametrize(
    "text",
    ["Tab\tseparated", "Two\nlines", "Windows\r\nline ends\r\n ok", "Ünïcödé — “quotes” ✓"],
)
def test_tab_newline_and_crlf_are_text(text: str) -> None:
    plan = fresh_plan()
    parsed = parse_proposal(codex(f"Step {text}", explanation=text))
    assert not parsed.violations
    plan.propose("p1", parsed, "fp", "unit")
    assert plan.decide(set()).status == "committed"
    assert plan.snapshot is not None and plan.snapshot.steps[0].title == f"Step {text}"


def test_surrounding_whitespace_is_still_trimmed() -> None:
    parsed = parse_proposal(strict(title="\n\t Ship \r\n"))
    assert not parsed.violations
    assert parsed.candidate is not None and parsed.candidate.title == "Ship"


def test_nul_stays_invalid_text() -> None:
    codes = [v.code for v in parse_proposal(codex("Do\x00 a")).violations]
    assert codes == ["invalid_text"]


# -- replay of histories written before the rule ---------------------------------------------


def old_history() -> list[Any]:
    """A history recorded before control characters were refused: a commit whose title and
    step text hold escapes (events built directly, as the store holds them)."""
    plan = Plan.create(plan_aggregate_id(SESSION), SESSION)
    snapshot = PlanSnapshot(
        title=f"Ship {RETITLE}",
        steps=(Step(id="a", title=f"Do {CLEAR} a", status="in_progress"),),
    )
    plan.trigger_event(
        Plan.PlanProposed,
        proposal_id="p1",
        form="strict",
        candidate=snapshot,
        expected_revision=None,
        client="unit",
        fingerprint="fp-1",
    )
    assert plan.decide(set()).status == "committed"
    text = f"Do{CLEAR} a"
    [derived] = derive_step_ids([text])
    codex_snapshot = PlanSnapshot(
        title=None, steps=(Step(id=derived, title=text, status="pending"),)
    )
    other = Plan.create(plan_aggregate_id("s2"), "s2")
    other.trigger_event(
        Plan.PlanProposed,
        proposal_id="p2",
        form="codex",
        candidate=codex_snapshot,
        expected_revision=None,
        client="unit",
        fingerprint="fp-2",
    )
    assert other.decide(set()).status == "committed"
    return [*plan.collect_events(), *other.collect_events()]


def test_an_old_commit_with_control_characters_replays_clean() -> None:
    events = old_history()
    plans: dict[str, Plan] = {}
    for event in events:  # as the event store rebuilds an aggregate: no CorruptHistory
        plans[event.originator_id] = event.mutate(plans.get(event.originator_id))
    replayed = plans[plan_aggregate_id(SESSION)]
    assert replayed.revision == 1 and replayed.snapshot is not None
    assert replayed.snapshot.title == f"Ship {RETITLE}"
    assert plans[plan_aggregate_id("s2")].revision == 1


def test_an_old_commit_with_control_characters_folds_into_the_views() -> None:
    changes = fold_events({}, [(event, None) for event in old_history()])
    assert not changes.corrupt, changes.corrupt
    _, view = changes.views[SESSION]
    assert view.revision == 1 and view.title == f"Ship {RETITLE}"


# -- other texts -----------------------------------------------------------------------------


@pytest.mark.parametrize("control", CONTROLS.values(), ids=CONTROLS.keys())
def test_clean_text_replaces_control_characters(control: str) -> None:
    """What a goal's objective is checked with: a text it changes is refused."""
    cleaned = clean_text(f"Ship {control} it")
    assert cleaned != f"Ship {control} it" and not UNSAFE.search(cleaned)
    assert clean_text("Tab\tand\nnewline\r\n") == "Tab\tand\nnewline\r\n"


@pytest.mark.parametrize("control", CONTROLS.values(), ids=CONTROLS.keys())
def test_ids_with_control_characters_are_invalid(control: str) -> None:
    for what in ("session id", "goal id", "proposal id", "parent session id"):
        with pytest.raises(InvalidId):
            validate_id(f"s{control}1", what)


def test_a_client_name_is_recorded_without_control_characters() -> None:
    """`client` comes from the caller (a hook names the subagent): history prints it."""
    plan = fresh_plan()
    plan.propose("p1", parse_proposal(codex()), "fp", f"claude-code:{RETITLE}")
    proposed = [e for e in plan.collect_events() if isinstance(e, Plan.PlanProposed)][-1]
    assert proposed.client is not None and not UNSAFE.search(proposed.client)
    assert proposed.client.startswith("claude-code:")


def test_an_origin_with_control_characters_is_refused() -> None:
    with pytest.raises(Exception, match="printable"):
        Origin.checked(source=f"claude{CLEAR}")
    with pytest.raises(Exception, match="printable"):
        Origin.checked(cwd=f"/tmp/{RETITLE}")
