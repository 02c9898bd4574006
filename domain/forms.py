"""The two input forms: detect which one a payload is, and normalise it into a candidate.

Only the *shape* is checked here (field names, JSON types, the mode ban). Every rule
about the content (blank titles, bounds, statuses, ids, in-progress counts) lives in
`domain.rules`, so it is checked the same way at decision time and on replay.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from domain.models import MAX_STEP_ID_CHARS, Form, Frozen, PlanSnapshot, Step, Violation

STRICT_FIELDS = frozenset({"expected_revision", "title", "goal_id", "steps", "proposal_id"})
CODEX_FIELDS = frozenset({"explanation", "plan", "expected_revision", "goal_id", "proposal_id"})
MODE_FIELDS = frozenset({"mode", "collaboration_mode"})
STRICT_STEP_FIELDS = frozenset({"id", "title", "status"})
CODEX_STEP_FIELDS = frozenset({"step", "status"})
PROPOSAL_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}\Z")


class ParsedProposal(Frozen):
    """A payload read as one of the two forms, with every shape problem found."""

    form: Form | None
    candidate: PlanSnapshot | None
    expected_revision: int | None = None
    proposal_id: str | None = None
    explanation: str | None = None
    violations: tuple[Violation, ...] = ()


def detect_form(payload: Mapping[str, Any]) -> Form | None:
    """`plan` means update_plan (Codex); `steps` or `title` means plan_update (strict)."""
    has_codex = "plan" in payload
    has_strict = "steps" in payload or "title" in payload
    if has_codex and not has_strict:
        return Form.CODEX
    if has_strict and not has_codex:
        return Form.STRICT
    return None


def parse_proposal(payload: Mapping[str, Any]) -> ParsedProposal:
    """Read a proposal payload of either form; never raises on bad input."""
    problems: list[Violation] = []
    payload = _storable(payload, "", problems)
    form = detect_form(payload)
    problems += _mode_and_unknown_fields(payload, form)
    expected_revision = _expected_revision(payload, problems)
    proposal_id = _proposal_id(payload, problems)
    goal_id = _optional_text(payload, "goal_id", problems)
    explanation = _optional_text(payload, "explanation", problems)

    candidate: PlanSnapshot | None = None
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
    else:
        candidate = _codex_candidate(payload, goal_id, problems)
    return ParsedProposal(
        form=form,
        candidate=candidate,
        expected_revision=expected_revision,
        proposal_id=proposal_id,
        explanation=explanation,
        violations=tuple(problems),
    )


def clean_text(text: str) -> str:
    """`text` without NUL characters or lone surrogates (neither can be stored as JSON text)."""
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def _storable(value: Any, where: str, problems: list[Violation]) -> Any:
    """The payload with every string (keys too) made storable; each repair is a violation."""
    if isinstance(value, str):
        cleaned = clean_text(value)
        if cleaned != value:
            problems.append(
                Violation(
                    code="invalid_text",
                    message=f"The text at {where or 'the top level'} contains a NUL character "
                    "or invalid Unicode; send plain text.",
                )
            )
        return cleaned
    if isinstance(value, Mapping):
        return {
            _storable(
                key, f"{where}.{clean_text(key)[:40]}" if where else "a field name", problems
            ): _storable(item, f"{where}.{clean_text(key)[:40]}".lstrip("."), problems)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_storable(item, f"{where}[{index}]", problems) for index, item in enumerate(value)]
    return value


def _mode_and_unknown_fields(payload: Mapping[str, Any], form: Form | None) -> list[Violation]:
    if form is None:
        allowed = STRICT_FIELDS | CODEX_FIELDS
    else:
        allowed = STRICT_FIELDS if form is Form.STRICT else CODEX_FIELDS
    problems = []
    for key in payload:
        if key in MODE_FIELDS:
            problems.append(
                Violation(
                    code="mode_change_forbidden",
                    message=f"A plan update cannot change the collaboration mode; drop `{key}` "
                    "(only the user switches between work and plan mode).",
                )
            )
        elif key not in allowed:
            problems.append(
                Violation(
                    code="unknown_field",
                    message=f"{key[:60]!r} is not a field of this plan tool; allowed fields are "
                    f"{', '.join(sorted(allowed))}.",
                )
            )
    return problems


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
    item: Mapping[str, Any], key: str, index: int, problems: list[Violation]
) -> tuple[str, bool]:
    """The trimmed string under `key` ("" when missing), and whether it was a string at all."""
    value = item.get(key)
    if value is None:
        return "", True
    if isinstance(value, str):
        return value.strip(), True
    if isinstance(value, bool | int | float):
        problems.append(
            Violation(
                code="invalid_field",
                message=f"Step {index}: `{key}` must be a string, not {type(value).__name__}.",
                index=index,
            )
        )
        return str(value), False
    problems.append(
        Violation(
            code="invalid_field",
            message=f"Step {index}: `{key}` must be a string.",
            index=index,
        )
    )
    return "", False


def _step_items(
    payload: Mapping[str, Any], key: str, allowed: frozenset[str], problems: list[Violation]
) -> list[tuple[int, Mapping[str, Any]]]:
    raw = payload.get(key, [])
    if not isinstance(raw, list):
        problems.append(
            Violation(code="invalid_field", message=f"`{key}` must be a list of step objects.")
        )
        return []
    items = []
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping):
            problems.append(
                Violation(
                    code="invalid_field",
                    message=f"Step {index} must be an object with {', '.join(sorted(allowed))}.",
                    index=index,
                )
            )
            continue
        for field in item:
            if field not in allowed:
                problems.append(
                    Violation(
                        code="unknown_field",
                        message=f"Step {index}: {field[:60]!r} is not a step field; use "
                        f"{', '.join(sorted(allowed))}.",
                        index=index,
                    )
                )
        items.append((index, item))
    return items


def _status(item: Mapping[str, Any]) -> str:
    value = item.get("status")
    return value.strip() if isinstance(value, str) else ("" if value is None else str(value))


def _strict_candidate(
    payload: Mapping[str, Any], goal_id: str | None, problems: list[Violation]
) -> PlanSnapshot:
    title_value = payload.get("title")
    if title_value is not None and not isinstance(title_value, str):
        problems.append(Violation(code="invalid_field", message="`title` must be a string."))
    title = title_value.strip() if isinstance(title_value, str) else ""
    if "steps" not in payload:
        problems.append(
            Violation(
                code="missing_field",
                message="plan_update needs `steps`: the complete list of steps, each with "
                "id, title and status.",
            )
        )
    steps = []
    for index, item in _step_items(payload, "steps", STRICT_STEP_FIELDS, problems):
        step_id, _ = _text(item, "id", index, problems)
        step_title, _ = _text(item, "title", index, problems)
        steps.append(Step(id=step_id, title=step_title, status=_status(item)))
    return PlanSnapshot(title=title, goal_id=goal_id, steps=tuple(steps))


def _codex_candidate(
    payload: Mapping[str, Any], goal_id: str | None, problems: list[Violation]
) -> PlanSnapshot:
    texts_and_statuses = []
    for index, item in _step_items(payload, "plan", CODEX_STEP_FIELDS, problems):
        text, _ = _text(item, "step", index, problems)
        texts_and_statuses.append((text, _status(item)))
    ids = derive_step_ids([text for text, _ in texts_and_statuses])
    steps = tuple(
        Step(id=step_id, title=text, status=status)
        for step_id, (text, status) in zip(ids, texts_and_statuses, strict=True)
    )
    return PlanSnapshot(title=None, goal_id=goal_id, steps=steps)


_SLUG_JUNK = re.compile(r"[^a-z0-9]+")
_SUFFIX_ROOM = 6


def derive_step_ids(texts: list[str]) -> list[str]:
    """Deterministic ids from step text: a slug, `-2`, `-3`… for repeats, `step` if empty."""
    used: set[str] = set()
    ids = []
    for text in texts:
        base = _SLUG_JUNK.sub("-", text.lower()).strip("-")[: MAX_STEP_ID_CHARS - _SUFFIX_ROOM]
        base = base.strip("-") or "step"
        candidate, n = base, 1
        while candidate in used:
            n += 1
            candidate = f"{base}-{n}"
        used.add(candidate)
        ids.append(candidate)
    return ids
