"""The three input forms: detect which one a payload is, and normalise it into a candidate (or,
for the task form, an operation the plan applies to its committed list).

Only the *shape* is checked here (field names, JSON types, plain text, the mode ban, the input
limits); shape problems are recorded with the proposal, never re-checked on replay. Every rule
about the content (blank titles, bounds, statuses, ids, in-progress counts) lives in
`domain.rules`, so it is checked the same way at decision time and on replay. The candidate is
bounded whatever the payload: at most MAX_STEPS steps, each text cut at twice its bound.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from domain import limits
from domain.ids import ID_PATTERN
from domain.limits import MAX_REPORTED, bounded
from domain.models import (
    MAX_STEP_ID_CHARS,
    MAX_STEP_TITLE_CHARS,
    MAX_STEPS,
    MAX_TITLE_CHARS,
    Form,
    Frozen,
    PlanSnapshot,
    Step,
    TaskOperation,
    Violation,
    built,
)
from domain.rules import step_label, too_many_steps
from domain.step_ids import derive_step_ids
from domain.tasks import parse_task_operation, task_fields
from domain.text import clean_text, plain_payload

__all__ = ["ParsedProposal", "clean_text", "derive_step_ids", "detect_form", "parse_proposal"]

STRICT_FIELDS = frozenset({"expected_revision", "title", "goal_id", "steps", "proposal_id"})
CODEX_FIELDS = frozenset({"explanation", "plan", "expected_revision", "goal_id", "proposal_id"})
MODE_FIELDS = frozenset({"mode", "collaboration_mode"})
STRICT_STEP_FIELDS = frozenset({"id", "title", "status"})
CODEX_STEP_FIELDS = frozenset({"step", "status"})
PROPOSAL_ID_PATTERN = ID_PATTERN  # (a proposal id is an id as the ledger's others are)


class ParsedProposal(Frozen):
    """A payload read as one of the three forms, with every shape problem found.

    `keeps_goal` is true when the payload leaves `goal_id` out: the plan keeps the goal it has
    (an explicit `null` unlinks it). A task-form payload has an `operation` and no candidate:
    the plan makes the candidate by applying the operation to its committed list."""

    form: Form | None
    candidate: PlanSnapshot | None
    operation: TaskOperation | None = None
    expected_revision: int | None = None
    proposal_id: str | None = None
    explanation: str | None = None
    keeps_goal: bool = False
    violations: tuple[Violation, ...] = ()


def detect_form(payload: Mapping[str, Any]) -> Form | None:
    """`plan` means update_plan (Codex); `steps` means plan_update (strict); `op` means a task
    operation; otherwise `title` means plan_update."""
    has_codex = "plan" in payload
    if "op" in payload and not has_codex and "steps" not in payload:
        return Form.TASK
    has_strict = "steps" in payload or "title" in payload
    if has_codex and not has_strict:
        return Form.CODEX
    if has_strict and not has_codex:
        return Form.STRICT
    return None


def parse_proposal(payload: Mapping[str, Any], *, checked: bool = False) -> ParsedProposal:
    """Read a proposal payload of either form. Bad content becomes violations; a payload past
    the input limits (`domain.limits`) raises InvalidPayload before any other work (`checked`:
    the caller has made sure it is within them)."""
    if not checked:
        limits.check_payload(payload)
    problems: list[Violation] = []
    payload = plain_payload(payload, problems)
    form = detect_form(payload)
    problems += _mode_and_unknown_fields(payload, form)
    expected_revision = _expected_revision(payload, problems)
    proposal_id = _proposal_id(payload, problems)
    goal_id = _optional_text(payload, "goal_id", problems)
    if goal_id is not None:
        goal_id = bounded(goal_id, limits.MAX_GOAL_ID_CHARS)
    explanation = _optional_text(payload, "explanation", problems)
    if explanation is not None:
        explanation = limits.cut(explanation, limits.MAX_EXPLANATION_CHARS)

    candidate: PlanSnapshot | None = None
    operation: TaskOperation | None = None
    if form is None:
        code = "ambiguous_form" if "plan" in payload else "missing_field"
        problems.append(
            Violation(
                code=code,
                message=(
                    "Send either `title` and `steps` (plan_update) or `plan` (update_plan), "
                    "not both."
                    if code == "ambiguous_form"
                    else "The proposal has no plan: send `title` and `steps` (plan_update) "
                    "or `plan` (update_plan)."
                ),
            )
        )
    elif form is Form.STRICT:
        candidate = _strict_candidate(payload, goal_id, problems)
    elif form is Form.TASK:
        operation = parse_task_operation(payload, problems)
    else:
        candidate = _codex_candidate(payload, goal_id, problems)
    return ParsedProposal(
        form=form,
        candidate=candidate,
        operation=operation,
        expected_revision=expected_revision,
        proposal_id=proposal_id,
        explanation=explanation,
        keeps_goal="goal_id" not in payload,
        violations=tuple(problems),
    )


def _unknown_fields(
    keys: Iterable[str], allowed: frozenset[str], index: int | None
) -> list[Violation]:
    """One violation per unknown field, the first MAX_REPORTED named, the rest counted."""
    unknown = [key for key in keys if key not in allowed and key not in MODE_FIELDS]
    if not unknown:
        return []
    where = f"{step_label(index)}: " if index is not None else ""
    what = "a step field" if index is not None else "a field of this plan tool"
    problems = [
        Violation(
            code="unknown_field",
            message=f"{where}{key[:60]!r} is not {what}; allowed fields are "
            f"{', '.join(sorted(allowed))}.",
            index=index,
        )
        for key in unknown[:MAX_REPORTED]
    ]
    if len(unknown) > MAX_REPORTED:
        problems.append(
            Violation(
                code="unknown_field",
                message=f"{where}{len(unknown) - MAX_REPORTED} more fields are unknown; allowed "
                f"fields are {', '.join(sorted(allowed))}.",
                index=index,
            )
        )
    return problems


def _mode_and_unknown_fields(payload: Mapping[str, Any], form: Form | None) -> list[Violation]:
    if form is None:
        allowed = STRICT_FIELDS | CODEX_FIELDS
    elif form is Form.TASK:
        allowed = task_fields(payload.get("op"))
    else:
        allowed = STRICT_FIELDS if form is Form.STRICT else CODEX_FIELDS
    problems = [
        Violation(
            code="mode_change_forbidden",
            message=f"A plan update cannot change the collaboration mode; drop `{key}` "
            "(only the user switches between work and plan mode).",
        )
        for key in payload
        if key in MODE_FIELDS
    ]
    return problems + _unknown_fields(payload, allowed, None)


def _expected_revision(payload: Mapping[str, Any], problems: list[Violation]) -> int | None:
    value = payload.get("expected_revision")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        problems.append(
            Violation(
                code="invalid_field",
                message="`expected_revision` must be a whole number >= 0 (the revision you "
                "last saw), or left out.",
            )
        )
        return None
    return value


def _proposal_id(payload: Mapping[str, Any], problems: list[Violation]) -> str | None:
    value = payload.get("proposal_id")
    if value is None:
        return None
    if not isinstance(value, str) or not PROPOSAL_ID_PATTERN.match(value):
        problems.append(
            Violation(
                code="invalid_field",
                message="`proposal_id` must be 1-128 characters of A-Za-z0-9._- "
                "not starting with '.'.",
            )
        )
        return None
    return value


def _optional_text(payload: Mapping[str, Any], key: str, problems: list[Violation]) -> str | None:
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        problems.append(
            Violation(code="invalid_field", message=f"`{key}` must be a string or null.")
        )
        return None
    return value.strip()


def _text(
    item: Mapping[str, Any], key: str, index: int, limit: int, problems: list[Violation]
) -> str:
    """The trimmed string under `key` ("" when missing), bounded for storage by `limit`."""
    value = item.get(key)
    if type(value) is str:  # the common case first
        return bounded(value.strip(), limit)
    if value is None:
        return ""
    if isinstance(value, str):
        return bounded(value.strip(), limit)
    if isinstance(value, bool | int | float):
        problems.append(
            Violation(
                code="invalid_field",
                message=f"{step_label(index)}: `{key}` must be a string, not "
                f"{type(value).__name__}.",
                index=index,
            )
        )
        return bounded(str(value), limit)
    problems.append(
        Violation(
            code="invalid_field",
            message=f"{step_label(index)}: `{key}` must be a string.",
            index=index,
        )
    )
    return ""


def _step_items(
    payload: Mapping[str, Any], key: str, allowed: frozenset[str], problems: list[Violation]
) -> list[tuple[int, Mapping[str, Any]]]:
    """The step objects, at most MAX_STEPS of them: a longer list is counted, not processed."""
    raw = payload.get(key, [])
    if not isinstance(raw, list):
        problems.append(
            Violation(code="invalid_field", message=f"`{key}` must be a list of step objects.")
        )
        return []
    if len(raw) > MAX_STEPS:
        problems.append(too_many_steps(len(raw), checked=MAX_STEPS))
    items = []
    for index, item in enumerate(raw[:MAX_STEPS]):
        if type(item) is not dict and not isinstance(item, Mapping):
            problems.append(
                Violation(
                    code="invalid_field",
                    message=f"{step_label(index)} must be an object with "
                    f"{', '.join(sorted(allowed))}.",
                    index=index,
                )
            )
            continue
        if not item.keys() <= allowed:
            problems += _unknown_fields(item, allowed, index)
        items.append((index, item))
    return items


def _status(item: Mapping[str, Any]) -> str:
    """The trimmed status ("" when missing, which the rules report as `missing_field`)."""
    value = item.get("status")
    text = value.strip() if isinstance(value, str) else ("" if value is None else str(value))
    return bounded(text, limits.MAX_STATUS_CHARS)


def _strict_candidate(
    payload: Mapping[str, Any], goal_id: str | None, problems: list[Violation]
) -> PlanSnapshot:
    title_value = payload.get("title")
    if title_value is not None and not isinstance(title_value, str):
        problems.append(Violation(code="invalid_field", message="`title` must be a string."))
    title = bounded(title_value.strip(), MAX_TITLE_CHARS) if isinstance(title_value, str) else ""
    if "steps" not in payload:
        problems.append(
            Violation(
                code="missing_field",
                message="plan_update needs `steps`: the complete list of steps, each with "
                "id, title and status.",
            )
        )
    steps = tuple(
        _step(
            _text(item, "id", index, MAX_STEP_ID_CHARS, problems),
            _text(item, "title", index, MAX_STEP_TITLE_CHARS, problems),
            _status(item),
        )
        for index, item in _step_items(payload, "steps", STRICT_STEP_FIELDS, problems)
    )
    return _snapshot(title, goal_id, steps)


def _codex_candidate(
    payload: Mapping[str, Any], goal_id: str | None, problems: list[Violation]
) -> PlanSnapshot:
    texts_and_statuses = [
        (_text(item, "step", index, MAX_STEP_TITLE_CHARS, problems), _status(item))
        for index, item in _step_items(payload, "plan", CODEX_STEP_FIELDS, problems)
    ]
    ids = derive_step_ids([text for text, _ in texts_and_statuses])
    steps = tuple(
        _step(step_id, text, status)
        for step_id, (text, status) in zip(ids, texts_and_statuses, strict=True)
    )
    return _snapshot(None, goal_id, steps)


STEP_GIVEN = frozenset({"id", "title", "status"})
SNAPSHOT_GIVEN = frozenset({"title", "goal_id", "steps"})


def _step(step_id: str, title: str, status: str) -> Step:
    """`Step(id=..., title=..., status=...)` of texts already read, made without validating
    them again (validating the snapshot took a quarter of `parse_proposal`'s time in a
    sampled import of Codex rollouts)."""
    fields = {"id": step_id, "title": title, "status": status, "blocked_by": (), "owner": None}
    return built(Step, fields, STEP_GIVEN)


def _snapshot(title: str | None, goal_id: str | None, steps: tuple[Step, ...]) -> PlanSnapshot:
    """`PlanSnapshot(title=..., goal_id=..., steps=...)` of values already read."""
    return built(PlanSnapshot, {"title": title, "goal_id": goal_id, "steps": steps}, SNAPSHOT_GIVEN)
