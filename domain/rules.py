"""The plan rules of every policy. Pure functions from snapshots to violations.

The same functions decide a proposal and re-check every commit on replay.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from collections.abc import Set as AbstractSet

from domain.models import (
    ALLOWED_STATUSES,
    MAX_STEP_ID_CHARS,
    MAX_STEP_TITLE_CHARS,
    MAX_STEPS,
    MAX_TITLE_CHARS,
    PlanSnapshot,
    Policy,
    Step,
    Violation,
)
from domain.step_ids import derive_step_ids
from domain.task_rules import check_blockers, check_started

STEP_ID_PATTERN = re.compile(r"^[A-Za-z0-9._-]+\Z")


def step_label(index: int) -> str:
    """How a message names a step: counted from 1 as people count, with the 0-based `index`
    of the violation's data beside it."""
    return f"Step {index + 1} (index {index})"


def too_many_steps(count: int, checked: int | None = None) -> Violation:
    """Bound on the number of steps; `checked` says how many were looked at when not all."""
    rest = f" Only the first {checked} were checked." if checked is not None else ""
    return Violation(
        code="too_many_steps",
        message=f"The plan has {count} steps; keep it to {MAX_STEPS} (a plan says what still "
        f"needs doing, not every detail).{rest}",
    )


# The last snapshot checked, its policy and its violations: a snapshot is immutable, so the
# same object under the same policy has the same violations (a replay meets a commit's
# snapshot as the very object of its proposal's candidate, checked just before).
_last_checked: tuple[Policy | None, PlanSnapshot | None, tuple[Violation, ...]] = (None, None, ())


def check_snapshot(
    policy: Policy, snapshot: PlanSnapshot, passed: PlanSnapshot | None = None
) -> list[Violation]:
    """Rules a single snapshot must meet on its own (spec rules 1-6, 9 and the bounds).

    `passed`: a snapshot that met them under this policy (the plan's committed one). Every
    rule but those of the statuses reads only the title and the steps' ids and titles (and,
    under the tasks policy, their blockers): a snapshot with those of `passed` (an agent
    moving its steps along) meets those rules as `passed` did, and only its statuses are
    checked, with the same violations in the same order as a check of every rule."""
    global _last_checked
    last_policy, last_snapshot, last_problems = _last_checked
    if snapshot is last_snapshot and policy is last_policy:
        return list(last_problems)
    if passed is not None and same_texts(passed, snapshot, policy is Policy.TASKS):
        problems = _check_statuses(policy, snapshot)
    else:
        problems = _check_snapshot(policy, snapshot)
    _last_checked = (policy, snapshot, tuple(problems))
    return problems


def same_texts(one: PlanSnapshot, other: PlanSnapshot, blockers: bool = False) -> bool:
    """Whether two snapshots have the same title and the same steps' ids and titles (and
    `blockers`: blocked_by), in order."""
    steps, others = one.steps, other.steps
    if one.title != other.title or len(steps) != len(others):
        return False
    for step, that in zip(steps, others, strict=True):
        if step is that:
            continue
        if step.id != that.id or step.title != that.title:
            return False
        if blockers and step.blocked_by != that.blocked_by:
            return False
    return True


def _check_statuses(policy: Policy, snapshot: PlanSnapshot) -> list[Violation]:
    """The rules of the statuses alone (`_check_snapshot`'s, for a snapshot whose every other
    rule holds): each step's status, then the steps in progress (any number of tasks may be)."""
    allowed = ALLOWED_STATUSES[policy]
    problems: list[Violation] = []
    for index, step in enumerate(snapshot.steps):
        if step.status not in allowed:
            problems.append(_status_problem(allowed, index, step.status, step.id or None))
    if policy is Policy.TASKS:
        return problems
    return problems + _check_in_progress(policy, snapshot)


def _status_problem(
    allowed: AbstractSet[str], index: int, status: str, step_id: str | None
) -> Violation:
    """The violation of a step whose status is not one of `allowed`."""
    label = step_label(index)
    if not status:
        return Violation(
            code="missing_field",
            message=f"{label} has no `status`; give one of {', '.join(sorted(allowed))}.",
            step_id=step_id,
            index=index,
        )
    return Violation(
        code="invalid_status",
        message=f"{label} has status {status[:40]!r}; use one of {', '.join(sorted(allowed))}.",
        step_id=step_id,
        index=index,
    )


def _check_snapshot(policy: Policy, snapshot: PlanSnapshot) -> list[Violation]:
    problems: list[Violation] = []
    title = snapshot.title or ""
    if policy is Policy.STRICT and not title.strip():
        problems.append(
            Violation(code="blank_title", message="Give the plan a short, non-blank `title`.")
        )
    if len(title) > MAX_TITLE_CHARS:
        problems.append(
            Violation(
                code="too_long",
                message=f"The plan title is over {MAX_TITLE_CHARS} characters; keep it to "
                f"{MAX_TITLE_CHARS}.",
            )
        )
    if len(snapshot.steps) > MAX_STEPS:
        problems.append(too_many_steps(len(snapshot.steps)))
    problems += _check_steps(policy, snapshot)
    if policy is Policy.TASKS:
        problems += check_blockers(snapshot)  # any number of tasks may be in progress
    else:
        problems += _check_in_progress(policy, snapshot)
    if policy is Policy.REPLACE:
        problems += _check_derived_ids(snapshot)
    return problems


def _check_derived_ids(snapshot: PlanSnapshot) -> list[Violation]:
    """update_plan ids are derived from the step text; a stored plan must agree (replay)."""
    expected = derive_step_ids([step.title for step in snapshot.steps])
    return [
        Violation(
            code="invalid_step_id",
            message=f"{step_label(index)} has id {step.id!r} but its text gives {wanted!r}.",
            step_id=step.id or None,
            index=index,
        )
        for index, (step, wanted) in enumerate(zip(snapshot.steps, expected, strict=True))
        if step.id != wanted
    ]


def _check_steps(policy: Policy, snapshot: PlanSnapshot) -> list[Violation]:
    problems: list[Violation] = []
    allowed = ALLOWED_STATUSES[policy]
    seen: set[str] = set()
    for index, step in enumerate(snapshot.steps):
        sid, title, status = step.id, step.title, step.status
        if (
            status in allowed
            and sid not in seen
            and sid.strip()
            and len(sid) <= MAX_STEP_ID_CHARS
            and STEP_ID_PATTERN.match(sid)
            and title.strip()
            and len(title) <= MAX_STEP_TITLE_CHARS
        ):
            # The common case, nothing to report and no message built: this condition must
            # admit only steps that pass every check below.
            seen.add(sid)
            continue
        label = step_label(index)
        # A replace-policy id is derived from the text: a blank step's id names nothing the
        # agent sent, so such a step is named by its position only.
        blank_derived = policy is Policy.REPLACE and not step.title.strip()
        step_id = None if blank_derived else step.id or None
        if not step.id.strip():
            problems.append(
                Violation(
                    code="blank_step_id",
                    message=f"{label} needs a non-blank `id`.",
                    index=index,
                )
            )
        elif len(step.id) > MAX_STEP_ID_CHARS or not STEP_ID_PATTERN.match(step.id):
            problems.append(
                Violation(
                    code="invalid_step_id",
                    message=f"{label} has id {step.id[:80]!r}; an id is 1-{MAX_STEP_ID_CHARS} "
                    "characters of A-Za-z0-9._-.",
                    step_id=step_id,
                    index=index,
                )
            )
        elif step.id in seen:
            problems.append(
                Violation(
                    code="duplicate_step_id",
                    message=f"{label} has id {step.id!r}, used by an earlier step; every step "
                    "needs its own id.",
                    step_id=step_id,
                    index=index,
                )
            )
        seen.add(step.id)
        problems += check_step_title(step.title, label, step_id, index)
        if step.status not in allowed:
            problems.append(_status_problem(allowed, index, step.status, step_id))
    return problems


def check_step_title(
    title: str, label: str, step_id: str | None = None, index: int | None = None
) -> list[Violation]:
    """A step's title: non-blank, and within its bound (`label` names the step)."""
    if not title.strip():
        return [
            Violation(
                code="blank_step_title",
                message=f"{label} needs a non-blank title saying what will be done.",
                step_id=step_id,
                index=index,
            )
        ]
    if len(title) > MAX_STEP_TITLE_CHARS:
        return [
            Violation(
                code="too_long",
                message=f"{label} is over {MAX_STEP_TITLE_CHARS} characters; keep it to "
                f"{MAX_STEP_TITLE_CHARS} (put research notes elsewhere).",
                step_id=step_id,
                index=index,
            )
        ]
    return []


def _check_in_progress(policy: Policy, snapshot: PlanSnapshot) -> list[Violation]:
    statuses = [step.status for step in snapshot.steps]
    active = statuses.count("in_progress")
    if active > 1:
        return [
            Violation(
                code="multiple_in_progress",
                message=f"{active} steps are in_progress; mark exactly one as the current step "
                "and the others pending or completed.",
            )
        ]
    if policy is Policy.STRICT and active == 0 and "pending" in statuses:
        return [
            Violation(
                code="no_step_in_progress",
                message="Pending work remains but no step is in_progress; mark the step you are "
                "working on now as in_progress.",
            )
        ]
    return []


def check_transition(
    policy: Policy,
    previous: PlanSnapshot | None,
    accepted_ids: Collection[str],
    snapshot: PlanSnapshot,
) -> list[Violation]:
    """Rules across revisions: no accepted step removed (strict), no completed step reopened
    (strict, tasks), no task started past an open blocker (tasks). The replace policy has none."""
    if policy is Policy.REPLACE:
        return []
    problems: list[Violation] = []
    if policy is Policy.STRICT:
        present = {step.id for step in snapshot.steps}
        for step_id in sorted(set(accepted_ids) - present):
            problems.append(
                Violation(
                    code="step_removed",
                    message=f"Step {step_id!r} was accepted in an earlier revision; keep it (you "
                    "may retitle or reorder it, or complete it).",
                    step_id=step_id,
                )
            )
    changes = status_changes(previous, snapshot)
    for index, before, step in changes:
        if before == "completed" and step.status in ("pending", "in_progress"):
            problems.append(
                Violation(
                    code="completed_step_reopened",
                    message=f"Step {step.id!r} is already completed and cannot go back to "
                    f"{step.status}; add a new step for further work.",
                    step_id=step.id,
                    index=index,
                )
            )
    if policy is Policy.TASKS:
        problems += check_started(snapshot, changes)
    return problems


def status_changes(
    previous: PlanSnapshot | None, snapshot: PlanSnapshot
) -> list[tuple[int, str | None, Step]]:
    """(index, status before or None, step) of each step of `snapshot` whose status is not the
    one its id had in `previous` (a new step's included), in order."""
    moved = _moved_steps(previous, snapshot)
    if moved is not None:  # the common case, without the map below
        return moved
    before = {step.id: step.status for step in previous.steps} if previous else {}
    return [
        (index, before.get(step.id), step)
        for index, step in enumerate(snapshot.steps)
        if before.get(step.id) != step.status
    ]


def _moved_steps(
    previous: PlanSnapshot | None, snapshot: PlanSnapshot
) -> list[tuple[int, str | None, Step]] | None:
    """`status_changes` of a plan moved along: when `snapshot` has the steps of `previous`
    with the same ids in the same order (most revisions), each step's status before is that
    of its place, ids being unique within a committed plan (every policy's rules hold a
    duplicate back); None when it does not (or there is no plan before)."""
    if previous is None or len(previous.steps) != len(snapshot.steps):
        return None
    changed: list[tuple[int, str | None, Step]] = []
    for index, (old, new) in enumerate(zip(previous.steps, snapshot.steps, strict=True)):
        if old is new:  # (a step a task operation left as it was)
            continue
        if old.id != new.id:
            return None
        if old.status != new.status:
            changed.append((index, old.status, new))
    return changed


def check_revision(expected: int | None, current: int) -> list[Violation]:
    """Rule 10: a proposal that names a revision must name the current one."""
    if expected is None or expected == current:
        return []
    return [
        Violation(
            code="revision_conflict",
            message=f"You based this on revision {expected} but the plan is at revision "
            f"{current}; read the current plan and send your update against it.",
        )
    ]


def check_goal(goal_id: str | None, session_goals: Collection[str]) -> list[Violation]:
    """A plan's goal_id must name a goal of the same session."""
    if goal_id is None or goal_id in session_goals:
        return []
    return [
        Violation(
            code="unknown_goal",
            message=f"No goal {goal_id[:80]!r} exists in this session; start the goal first or "
            "leave `goal_id` out.",
        )
    ]


def step_transitions(
    previous: PlanSnapshot | None, snapshot: PlanSnapshot
) -> list[tuple[str, str | None, str | None]]:
    """(step_id, from, to) for every step whose status changed, was added or was removed.
    (Ids are unique within a plan the rules let through: see _check_steps.)"""
    if previous is snapshot:  # a plan sent again as it was (decoded once: one object)
        return []
    moved = _moved_steps(previous, snapshot)  # the common case: only statuses changed
    if moved is not None:
        return [(step.id, before, step.status) for _, before, step in moved]
    before = {step.id: step.status for step in previous.steps} if previous else {}
    after = {step.id: step.status for step in snapshot.steps}
    changes: list[tuple[str, str | None, str | None]] = []
    for step_id, status in after.items():
        if before.get(step_id) != status:
            changes.append((step_id, before.get(step_id), status))
    changes += [
        (step_id, status, None) for step_id, status in before.items() if step_id not in after
    ]
    return changes
