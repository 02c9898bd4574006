"""The per-session plan.json file: atomic writes, and a reader that refuses anything doubtful."""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, ValidationError

from domain.errors import LedgerError
from domain.ids import validate_id
from domain.models import Model, Step
from projections.shapes import PlanView

SCHEMA_VERSION: Literal[1] = 1


class PlanFileError(LedgerError):
    """plan.json is missing, corrupt, of an unknown version, or lacks a field."""

    code = "unreadable_plan_file"


class PlanFile(Model):
    """The on-disk shape (seeds/000): schema_version plus the plan view."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1]
    session_id: str
    revision: int
    policy: str | None
    title: str | None
    goal_id: str | None
    steps: list[Step]
    updated_at: datetime | None


def plan_path(home: Path, session_id: str) -> Path:
    """<home>/sessions/<session_id>/plan.json; the id is validated so it cannot escape."""
    validate_id(session_id)
    sessions = (home / "sessions").resolve()
    path = (sessions / session_id / "plan.json").resolve()
    if sessions not in path.parents:
        raise PlanFileError(f"session id {session_id!r} would leave the sessions folder")
    return path


def plan_file_bytes(view: PlanView) -> bytes:
    """The file's exact content for `view`."""
    document = PlanFile(
        schema_version=SCHEMA_VERSION,
        session_id=view.session_id,
        revision=view.revision,
        policy=view.policy,
        title=view.title,
        goal_id=view.goal_id,
        steps=view.steps,
        updated_at=view.updated_at,
    )
    return document.model_dump_json(indent=2).encode()


def plan_file_is_current(home: Path, view: PlanView) -> bool:
    """Whether the session's file holds exactly what `write_plan_file` would write (one read,
    no parse: a missing, stale or edited file is not current)."""
    try:
        return plan_path(home, view.session_id).read_bytes() == plan_file_bytes(view)
    except OSError:
        return False


def write_plan_file(home: Path, view: PlanView) -> Path:
    """Write to a temporary file in the same folder, then atomically replace: a reader sees
    the old file or the new one, never half of one. Not synced to disk: the file is derived
    from the events, and a crash that loses it leaves `projections sync-files` to write it
    again."""
    path = plan_path(home, view.session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = plan_file_bytes(view)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".plan.", suffix=".tmp")
    try:
        os.fchmod(descriptor, 0o644)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def read_plan_file(home: Path, session_id: str) -> PlanFile:
    """The plan.json of a session; PlanFileError for anything but a complete, known file."""
    path = plan_path(home, session_id)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise PlanFileError(f"{path} does not exist") from None
    except OSError as error:
        raise PlanFileError(f"cannot read {path}: {error}") from None
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise PlanFileError(f"{path} is corrupt: {error}") from None
    if not isinstance(data, dict):
        raise PlanFileError(f"{path} is corrupt: not a JSON object")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise PlanFileError(
            f"{path} has schema_version {version!r}; this reader knows {SCHEMA_VERSION}"
        )
    try:
        document = PlanFile.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors()[:5]
        )
        raise PlanFileError(f"{path} is invalid: {problems}") from None
    if document.session_id != session_id:
        raise PlanFileError(f"{path} belongs to session {document.session_id!r}")
    return document
