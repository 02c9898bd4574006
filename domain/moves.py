"""A plan moved along: the steps of the plan before, the same ids in the same order, some of
them with another status. Most revisions an agent sends are this; the rules across revisions
then look only at the steps whose status changed."""

from __future__ import annotations

from domain.models import PlanSnapshot, Step


def moved_steps(
    previous: PlanSnapshot | None, snapshot: PlanSnapshot
) -> list[tuple[int, Step, Step]] | None:
    """(index, step before, step) of each step of `snapshot` whose status changed, when it has
    the steps of `previous` with the same ids in the same order; None when it does not (or
    there is no plan before). Ids are unique within a committed plan (every policy's rules
    hold a duplicate back), so each step's status before is that of its place."""
    if previous is None or len(previous.steps) != len(snapshot.steps):
        return None
    changed: list[tuple[int, Step, Step]] = []
    for index, (old, new) in enumerate(zip(previous.steps, snapshot.steps, strict=True)):
        if old is new:  # (a step the operation of the task form left as it was)
            continue
        if old.id != new.id:
            return None
        if old.status != new.status:
            changed.append((index, old, new))
    return changed
