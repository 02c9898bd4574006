"""The rules only the tasks policy has: blockers name tasks of the list and never form a cycle,
and a task does not start or complete while a task it is blocked by is still open."""

from __future__ import annotations

from collections.abc import Sequence

from domain.models import PlanSnapshot, Step, Violation

STARTED = frozenset({"in_progress", "completed"})


def check_blockers(snapshot: PlanSnapshot) -> list[Violation]:
    """Every `blocked_by` id names a task of the list [unknown_step]; no task waits on itself,
    directly or through others [dependency_cycle]."""
    steps = snapshot.steps
    if not any(step.blocked_by for step in steps):
        return []
    ids = {step.id for step in steps}
    problems = [
        Violation(
            code="unknown_step",
            message=f"Task {step.id!r} is blocked by {blocker!r}, which is not a task of this "
            "list; name an existing task.",
            step_id=step.id,
            index=index,
        )
        for index, step in enumerate(steps)
        for blocker in step.blocked_by
        if blocker not in ids
    ]
    cycle = _find_cycle(steps, ids)
    if cycle:
        path = " -> ".join(repr(step_id) for step_id in [*cycle, cycle[0]])
        problems.append(
            Violation(
                code="dependency_cycle",
                message=f"Tasks wait on each other in a cycle ({path} is blocked by the next); "
                "drop one of these blockers.",
                step_id=cycle[0],
            )
        )
    return problems


def _find_cycle(steps: tuple[Step, ...], ids: set[str]) -> list[str]:
    """One cycle of the blocked-by graph (its ids in order), or [] when there is none.

    Iterative depth-first search: a list of 100 tasks cannot exhaust the stack."""
    edges = {step.id: [b for b in step.blocked_by if b in ids] for step in steps}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in edges:
        if state.get(root):
            continue
        path: list[str] = [root]
        todo: list[list[str]] = [list(edges[root])]
        state[root] = 1
        while path:
            if not todo[-1]:
                state[path.pop()] = 2
                todo.pop()
                continue
            nxt = todo[-1].pop()
            if state.get(nxt) == 1:
                return path[path.index(nxt) :]
            if not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                todo.append(list(edges[nxt]))
    return []


def check_started(
    snapshot: PlanSnapshot, changes: Sequence[tuple[int, str | None, Step]]
) -> list[Violation]:
    """A task that moves to in_progress or completed has every blocker completed
    [blocked_step_started]. `changes`: (index, status before, step) of each step of `snapshot`
    whose status changed (rules.status_changes)."""
    status: dict[str, str] | None = None
    problems = []
    for index, _, step in changes:
        if step.status not in STARTED or not step.blocked_by:
            continue
        if status is None:
            status = {task.id: task.status for task in snapshot.steps}
        open_blockers = [b for b in step.blocked_by if b in status and status[b] != "completed"]
        if open_blockers:
            names = ", ".join(repr(b) for b in open_blockers)
            problems.append(
                Violation(
                    code="blocked_step_started",
                    message=f"Task {step.id!r} cannot be {step.status} while {names} "
                    f"{'is' if len(open_blockers) == 1 else 'are'} not completed; finish "
                    "the blocking task first.",
                    step_id=step.id,
                    index=index,
                )
            )
    return problems
