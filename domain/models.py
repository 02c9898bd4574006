"""Value objects of a plan: steps, snapshots, violations, policies and forms."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

MAX_TITLE_CHARS = 200
MAX_STEP_TITLE_CHARS = 500
MAX_STEP_ID_CHARS = 64
MAX_STEPS = 100


class Form(StrEnum):
    """The shape of a proposal as the agent sent it."""

    STRICT = "strict"  # plan_update: title + steps with ids
    CODEX = "codex"  # update_plan: a complete list of {step, status}


class Policy(StrEnum):
    """The rule set a plan is held to; fixed by its first committed proposal."""

    STRICT = "strict"
    REPLACE = "replace"

    @classmethod
    def for_form(cls, form: Form) -> Policy:
        return cls.STRICT if form is Form.STRICT else cls.REPLACE


ALLOWED_STATUSES: dict[Policy, frozenset[str]] = {
    Policy.STRICT: frozenset({"pending", "in_progress", "completed"}),
    Policy.REPLACE: frozenset({"pending", "in_progress", "completed", "cancelled"}),
}


class Model(BaseModel):
    """Base of every payload and read model: validators are built on first use, not at import
    (a command-line process pays only for the models it touches)."""

    model_config = ConfigDict(defer_build=True)


class Frozen(Model):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Step(Frozen):
    """One step of a plan. `status` is kept as sent so the rules can name a bad one."""

    id: str
    title: str
    status: str


class PlanSnapshot(Frozen):
    """A complete plan: what the agent proposed, normalised (trimmed, ids derived)."""

    title: str | None
    goal_id: str | None = None
    steps: tuple[Step, ...] = ()


class Violation(Frozen):
    """One broken rule, with a message a model can act on."""

    code: str
    message: str
    step_id: str | None = None
    index: int | None = None

    @model_serializer(mode="wrap")
    def _omit_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # `step_id` and `index` appear only where they apply.
        data: dict[str, Any] = handler(self)
        return {key: value for key, value in data.items() if value is not None}
