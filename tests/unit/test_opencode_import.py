"""`import opencode` reads `opencode export` JSON (the database form is run on the real binary
in tests/agents): completed todowrite parts, each under its callID, errors skipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from planledger.importers.opencode import read_opencode

TODOS = [
    {"content": "Write the parser", "status": "in_progress", "priority": "high"},
    {"content": "Test the parser", "status": "pending", "priority": "low"},
]


def part(call_id: str, status: str, start: int, **state: Any) -> dict[str, Any]:
    return {
        "type": "tool",
        "tool": "todowrite",
        "callID": call_id,
        "sessionID": "ses_child",
        "state": {"status": status, "input": {"todos": TODOS}, "time": {"start": start}, **state},
    }


def test_an_export_gives_each_stored_list_once_and_skips_errors(tmp_path: Path) -> None:
    exported = {
        "info": {"id": "ses_child", "parentID": "ses_parent", "directory": "/repo"},
        "messages": [
            {"info": {"id": "m1"}, "parts": [{"type": "text", "text": "hi"}]},
            {
                "info": {"id": "m2"},
                "parts": [part("c1", "completed", 1_000, metadata={"todos": TODOS[:1]})],
            },
            {"info": {"id": "m3"}, "parts": [part("c2", "error", 2_000, error="refused")]},
        ],
    }
    path = tmp_path / "export.json"
    path.write_text(json.dumps(exported))
    errors: list[Any] = []
    calls = read_opencode(path, errors, lambda _: None)

    assert errors == []
    assert [(c.session_id, c.call_id, c.parent_session_id, c.cwd) for c in calls] == [
        ("opencode-ses_child", "c1", "opencode-ses_parent", "/repo"),
        ("opencode-ses_child", "c2", "opencode-ses_parent", "/repo"),
    ]
    # What OpenCode stored (metadata.todos), not what was asked; the error changed nothing.
    assert calls[0].payload == {"plan": [{"step": "Write the parser", "status": "in_progress"}]}
    assert calls[1].payload is None
    assert calls[0].at.timestamp() == 1.0


def test_a_file_that_is_neither_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text('{"something": "else"}')
    errors: list[Any] = []
    assert read_opencode(path, errors, lambda _: None) == []
    assert "not an OpenCode export" in errors[0].message
