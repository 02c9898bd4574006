"""plan.json: atomic writes, and a reader that never mistakes a bad file for a plan."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from domain.errors import InvalidId
from domain.models import Step
from projections.plan_json import PlanFileError, plan_path, read_plan_file, write_plan_file
from projections.shapes import PlanView


def view(session_id: str = "s1", revision: int = 2) -> PlanView:
    return PlanView(
        session_id=session_id,
        revision=revision,
        policy="strict",
        title="Ship export",
        goal_id=None,
        steps=[Step(id="a", title="Inspect", status="in_progress")],
        pending_proposal=None,
        updated_at=datetime.now(UTC),
    )


def test_round_trip_and_no_stray_files(tmp_path: Path) -> None:
    path = write_plan_file(tmp_path, view(revision=1))
    write_plan_file(tmp_path, view(revision=2))
    assert path == tmp_path / "sessions" / "s1" / "plan.json"
    assert os.listdir(path.parent) == ["plan.json"]  # temporary files replaced, none left
    document = read_plan_file(tmp_path, "s1")
    assert (document.schema_version, document.revision, document.steps[0].id) == (1, 2, "a")
    assert json.loads(path.read_text())["schema_version"] == 1


def test_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_plan_file(tmp_path, view(revision=1))

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        write_plan_file(tmp_path, view(revision=2))
    monkeypatch.undo()
    assert read_plan_file(tmp_path, "s1").revision == 1
    assert os.listdir(tmp_path / "sessions" / "s1") == ["plan.json"]


def write_raw(tmp_path: Path, content: bytes | dict[str, Any]) -> None:
    path = tmp_path / "sessions" / "s1" / "plan.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())


GOOD = json.loads(view().model_dump_json())
GOOD = {
    "schema_version": 1,
    **{
        k: GOOD[k]
        for k in ("session_id", "revision", "policy", "title", "goal_id", "steps", "updated_at")
    },
}


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"", "corrupt"),
        (b'{"schema_version": 1, "session_id": "s1", "rev', "corrupt"),
        (b"\xff\xfe", "corrupt"),
        (b"[]", "not a JSON object"),
        ({**GOOD, "schema_version": 2}, "schema_version 2"),
        ({k: v for k, v in GOOD.items() if k != "schema_version"}, "schema_version None"),
        ({k: v for k, v in GOOD.items() if k != "steps"}, "steps"),
        ({k: v for k, v in GOOD.items() if k != "revision"}, "revision"),
        ({**GOOD, "steps": [{"id": "a", "title": "x"}]}, "status"),
        ({**GOOD, "session_id": "other"}, "belongs to session"),
    ],
    ids=[
        "empty",
        "truncated",
        "not-utf8",
        "array",
        "future-version",
        "no-version",
        "no-steps",
        "no-revision",
        "step-without-status",
        "other-session",
    ],
)
def test_reader_reports_every_bad_file(
    tmp_path: Path, content: bytes | dict[str, Any], fragment: str
) -> None:
    write_raw(tmp_path, content)
    with pytest.raises(PlanFileError, match=fragment):
        read_plan_file(tmp_path, "s1")


def test_missing_file_is_an_error_not_an_empty_plan(tmp_path: Path) -> None:
    with pytest.raises(PlanFileError, match="does not exist"):
        read_plan_file(tmp_path, "s1")


@pytest.mark.parametrize("session_id", ["../escape", "..", "a/b", ".hidden", "", "x" * 129])
def test_session_ids_cannot_escape(tmp_path: Path, session_id: str) -> None:
    with pytest.raises(InvalidId):
        plan_path(tmp_path, session_id)
