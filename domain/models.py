"""Value objects of a plan: steps, snapshots, violations, policies and forms."""

from __future__ import annotations

import operator
from collections.abc import Set as AbstractSet
from enum import StrEnum
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

MAX_TITLE_CHARS = 200
MAX_STEP_TITLE_CHARS = 500
MAX_STEP_ID_CHARS = 64
MAX_STEPS = 100


class Form(StrEnum):
    """The shape of a proposal as the agent sent it."""

    STRICT = "strict"  # plan_update: title + steps with ids
    CODEX = "codex"  # update_plan: a complete list of {step, status}
    TASK = "task"  # TaskCreate / TaskUpdate: one operation on the committed task list


class Policy(StrEnum):
    """The rule set a plan is held to; fixed by its first committed proposal."""

    STRICT = "strict"
    REPLACE = "replace"
    TASKS = "tasks"

    @classmethod
    def for_form(cls, form: Form | str) -> Policy:
        return POLICY_OF_FORM[Form(form)]


POLICY_OF_FORM = {Form.STRICT: Policy.STRICT, Form.CODEX: Policy.REPLACE, Form.TASK: Policy.TASKS}

ALLOWED_STATUSES: dict[Policy, frozenset[str]] = {
    Policy.STRICT: frozenset({"pending", "in_progress", "completed"}),
    # `blocked`: a status an agent's own list tool declares (Gemini CLI's `write_todos`), kept
    # as sent and not active; the ledger never denies a list the agent itself accepts.
    Policy.REPLACE: frozenset({"pending", "in_progress", "completed", "cancelled", "blocked"}),
    Policy.TASKS: frozenset({"pending", "in_progress", "completed"}),
}


M = TypeVar("M", bound=BaseModel)
# The one adapter to pydantic's internals (tests/unit/test_public_apis.py names it): pydantic
# has no public way to make a model without validation at this cost. Its `model_construct`
# (the public way: `model.model_construct(set(fields_set), **fields)`) walks every field's
# aliases and defaults, five times the cost of these four slot writes: with it a rebuild of
# the verify_rebuild bench's store took a fifth more CPU per event, a verify an eighth more
# (pydantic/pydantic#10536: construct slower than validation; a construct in pydantic-core,
# pydantic/pydantic-core#964, was closed unmerged).
_new = object.__new__
# The setters of the slots every model has (BaseModel's `__slots__`): a fifth faster than
# `object.__setattr__`, which looks each one up by name.
_set_dict, _set_extra, _set_fields_set, _set_private = (
    BaseModel.__dict__[name].__set__
    for name in (
        "__dict__",
        "__pydantic_extra__",
        "__pydantic_fields_set__",
        "__pydantic_private__",
    )
)


def built(model: type[M], fields: dict[str, Any], fields_set: AbstractSet[str] | None = None) -> M:
    """`model(**fields)` without validation, for values already of their fields' types (read
    from validated events or models), made in one step: pydantic's validation, and its
    `model_construct`, walk every field. `fields` must hold every field (defaults included)
    in the model's order (its JSON follows the order of `__dict__`);
    `fields_set` names those given as a constructor call would have named them (default: all)."""
    made = _new(model)
    _set_dict(made, fields)
    _set_extra(made, None)
    _set_fields_set(made, set(fields if fields_set is None else fields_set))
    _set_private(made, None)
    return made


class Model(BaseModel):
    """Base of every payload and read model: validators are built on first use, not at import
    (a command-line process pays only for the models it touches)."""

    model_config = ConfigDict(defer_build=True)


class Frozen(Model):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Step(Frozen):
    """One step of a plan. `status` is kept as sent so the rules can name a bad one.

    Steps of the tasks policy may carry `blocked_by` (ids of the tasks that must be completed
    first) and `owner` (the agent working on it); both are left out of the JSON when unset, so
    the other policies' steps keep their three fields."""

    id: str
    title: str
    status: str
    blocked_by: tuple[str, ...] = Field(default=(), exclude_if=operator.not_)  # C: no frame
    owner: str | None = Field(default=None, exclude_if=operator.not_)


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
    def omit_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # `step_id` and `index` appear only where they apply.
        data: dict[str, Any] = handler(self)
        return {key: value for key, value in data.items() if value is not None}


class TaskOperation(Frozen):
    """One operation of the task form (Claude Code's TaskCreate / TaskUpdate), normalised:
    texts trimmed, absent fields None. `id` None on a create: the ledger numbers the task."""

    op: str
    id: str | None = None
    title: str | None = None
    detail: str | None = None
    active_form: str | None = None
    status: str | None = None
    owner: str | None = None
    add_blocked_by: tuple[str, ...] = ()
    add_blocks: tuple[str, ...] = ()
