"""What changed between two revisions of a plan, not necessarily adjacent: steps added,
removed, retitled, and status changes, each step named by its id."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from domain.models import Model, Step
from projections.shapes import PlanView, Transition


class Retitled(Model):
    step_id: str
    from_: str = Field(alias="from", serialization_alias="from")
    to: str

    model_config = ConfigDict(populate_by_name=True)


class PlanDiff(Model):
    """`plan diff ID A B`, `GET /sessions/{id}/plan/diff?from=A&to=B`."""

    session_id: str
    from_: int = Field(alias="from", serialization_alias="from")
    to: int
    added: list[Step]
    removed: list[Step]
    retitled: list[Retitled]
    status: list[Transition]

    model_config = ConfigDict(populate_by_name=True)

    def as_json(self) -> dict[str, object]:
        return self.model_dump(mode="json", by_alias=True)


def plan_diff(before: PlanView, after: PlanView) -> PlanDiff:
    """The changes from `before` to `after` (two views of one session), in `after`'s step
    order (then `before`'s, for the steps removed)."""
    old = {step.id: step for step in before.steps}
    new = {step.id: step for step in after.steps}
    retitled: list[dict[str, str]] = []
    status: list[dict[str, str]] = []
    for step_id, step in new.items():
        was = old.get(step_id)
        if was is None:
            continue
        if was.title != step.title:
            retitled.append({"step_id": step_id, "from": was.title, "to": step.title})
        if was.status != step.status:
            status.append({"step_id": step_id, "from": was.status, "to": step.status})
    return PlanDiff.model_validate(
        {
            "session_id": after.session_id,
            "from": before.revision,
            "to": after.revision,
            "added": [step for step_id, step in new.items() if step_id not in old],
            "removed": [step for step_id, step in old.items() if step_id not in new],
            "retitled": retitled,
            "status": status,
        }
    )
