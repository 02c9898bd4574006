"""The task form (Claude Code's TaskCreate / TaskUpdate): one operation on the committed task list.

`parse_task_operation` reads the shape of a payload; `apply_operation` applies an operation to a
committed list and gives the list it produces (the proposal's candidate), which the tasks
policy's rules then judge. Deciding a proposal and replaying a commit both apply the recorded
operation with this one function, so a commit whose list is not what its operation makes is
found on replay.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from domain import limits
from domain.limits import MAX_REPORTED, bounded
from domain.models import (
    MAX_STEP_ID_CHARS,
    MAX_STEP_TITLE_CHARS,
    MAX_STEPS,
    PlanSnapshot,
    Step,
    TaskOperation,
    Violation,
    built,
)
from domain.rules import check_step_title

CREATE = "create"
UPDATE = "update"
DELETED = "deleted"  # an update's status that takes the task out of the list
MAX_OWNER_CHARS = 128
MAX_DETAIL_CHARS = 4000  # kept for the audit, cut beyond (no rule bounds it)

COMMON_FIELDS = frozenset({"op", "id", "title", "detail", "active_form", "expected_revision"})
TASK_FIELDS: dict[str, frozenset[str]] = {
    CREATE: COMMON_FIELDS | {"proposal_id"},
    UPDATE: COMMON_FIELDS | {"proposal_id", "status", "owner", "add_blocked_by", "add_blocks"},
}


def task_fields(op: object) -> frozenset[str]:
    """The fields an operation may carry (an unknown `op` is read as an update)."""
    return TASK_FIELDS[op] if op == CREATE else TASK_FIELDS[UPDATE]


def parse_task_operation(payload: Mapping[str, Any], problems: list[Violation]) -> TaskOperation:
    """The operation of a task-form payload; shape problems are added to `problems`."""
    op = payload.get("op")
    if op not in (CREATE, UPDATE):
        problems.append(
            Violation(
                code="invalid_field",
                message='`op` must be "create" (a new task) or "update" (a change to a task).',
            )
        )
        op = UPDATE
    task_id = _text(payload, "id", MAX_STEP_ID_CHARS, problems)
    if op == UPDATE and task_id is None:
        problems.append(
            Violation(code="missing_field", message="An update needs the `id` of its task.")
        )
    status = _text(payload, "status", limits.MAX_STATUS_CHARS, problems)
    owner = _text(payload, "owner", MAX_OWNER_CHARS, problems)
    if owner is not None and len(owner) > MAX_OWNER_CHARS:
        problems.append(
            Violation(
                code="too_long",
                message=f"`owner` is over {MAX_OWNER_CHARS} characters; name the agent briefly.",
            )
        )
    detail = _text(payload, "detail", MAX_DETAIL_CHARS, problems)
    active_form = _text(payload, "active_form", MAX_STEP_TITLE_CHARS, problems)
    return TaskOperation(
        op=op,
        id=task_id,
        title=_text(payload, "title", MAX_STEP_TITLE_CHARS, problems),
        detail=limits.cut(detail, MAX_DETAIL_CHARS) if detail is not None else None,
        active_form=active_form,
        status=status,
        owner=owner,
        add_blocked_by=_ids(payload, "add_blocked_by", problems),
        add_blocks=_ids(payload, "add_blocks", problems),
    )


def _text(
    payload: Mapping[str, Any], key: str, limit: int, problems: list[Violation]
) -> str | None:
    """The trimmed string under `key` (None when absent or null), bounded for storage."""
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        problems.append(
            Violation(
                code="invalid_field",
                message=f"`{key}` must be a string, not {_json_type(value)}.",
            )
        )
        return None
    return bounded(value.strip(), limit)


def _ids(payload: Mapping[str, Any], key: str, problems: list[Violation]) -> tuple[str, ...]:
    """A list of task ids (strings), at most MAX_STEPS of them."""
    value = payload.get(key)
    if value is None:
        return ()
    if not isinstance(value, list):
        problems.append(
            Violation(code="invalid_field", message=f"`{key}` must be a list of task ids.")
        )
        return ()
    wrong = [index for index, item in enumerate(value) if not isinstance(item, str)]
    for index in wrong[:MAX_REPORTED]:
        problems.append(
            Violation(
                code="invalid_field",
                message=f"`{key}[{index}]` must be a task id (a string), not "
                f"{_json_type(value[index])}.",
                index=index,
            )
        )
    if len(value) > MAX_STEPS:
        problems.append(
            Violation(code="too_many_steps", message=f"`{key}` names over {MAX_STEPS} tasks.")
        )
    ids = (bounded(item.strip(), MAX_STEP_ID_CHARS) for item in value if isinstance(item, str))
    return tuple(dict.fromkeys(ids))[:MAX_STEPS]


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def next_task_id(steps: tuple[Step, ...]) -> str:
    """Claude Code's numbering: the integer after the largest numeric id ("1" for none)."""
    numbers = [int(step.id) for step in steps if step.id.isascii() and step.id.isdigit()]
    return str(max(numbers, default=0) + 1)


def apply_operation(
    previous: PlanSnapshot | None, operation: TaskOperation
) -> tuple[PlanSnapshot | None, list[Violation]]:
    """The list `operation` makes of the committed list `previous`, or None and why it cannot
    be applied (an update of a task the list does not have [unknown_step]).

    Nothing else is judged here: the list made is held to the tasks policy's rules, which name
    a blank title, a bad status, a duplicate id, an unknown blocker or a cycle."""
    steps = list(previous.steps) if previous is not None else []
    title = previous.title if previous is not None else None
    goal_id = previous.goal_id if previous is not None else None
    if operation.op == CREATE:
        task_id = operation.id if operation.id is not None else next_task_id(tuple(steps))
        if any(step.id == task_id for step in steps):
            return None, _taken(task_id, operation.title)
        steps.append(Step(id=task_id, title=operation.title or "", status="pending"))
        return _plan(title, goal_id, steps), []
    places = {step.id: index for index, step in enumerate(steps)}
    missing = [
        task_id
        for task_id in (operation.id, *operation.add_blocks)
        if task_id is not None and task_id not in places
    ]
    if missing or operation.id is None:
        return None, [
            Violation(
                code="unknown_step",
                message=f"There is no task {task_id!r} in this list; use the id of an "
                "existing task (TaskList shows them).",
                step_id=task_id,
            )
            for task_id in dict.fromkeys(missing)
        ]
    target = operation.id
    if operation.status == DELETED:
        kept = [step for step in steps if step.id != target]
        steps = [
            _changed(step, blocked_by=tuple(b for b in step.blocked_by if b != target))
            if target in step.blocked_by
            else step
            for step in kept
        ]
        return _plan(title, goal_id, steps), []
    step = steps[places[target]]
    changes: dict[str, Any] = {}
    if operation.title is not None:
        changes["title"] = operation.title
    if operation.status is not None:
        changes["status"] = operation.status
    if operation.owner is not None:
        changes["owner"] = operation.owner or None
    if operation.add_blocked_by:
        changes["blocked_by"] = tuple(dict.fromkeys((*step.blocked_by, *operation.add_blocked_by)))
    steps[places[target]] = _changed(step, **changes)
    for blocked in operation.add_blocks:
        other = steps[places[blocked]]
        if target not in other.blocked_by:
            steps[places[blocked]] = _changed(other, blocked_by=(*other.blocked_by, target))
    return _plan(title, goal_id, steps), []


def _taken(task_id: str, title: str | None) -> list[Violation]:
    """A create of an id the list has: nothing to apply it to (the title is judged still)."""
    problems = [
        Violation(
            code="duplicate_step_id",
            message=f"There is already a task {task_id!r}; give the new task its own id, or "
            "leave `id` out to have the next number.",
            step_id=task_id,
        )
    ]
    return problems + check_step_title(title or "", "The new task", task_id)


def _changed(step: Step, **changes: Any) -> Step:
    """`step` with `changes` (of the fields' types), not validated again."""
    return step.model_copy(update=changes) if changes else step


def _plan(title: str | None, goal_id: str | None, steps: list[Step]) -> PlanSnapshot:
    """The list made: of a committed list's title and goal and of valid steps, so built."""
    return built(PlanSnapshot, {"title": title, "goal_id": goal_id, "steps": tuple(steps)})
