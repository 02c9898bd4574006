"""The import budget of the commands an agent runs on every tool call: cold, on SQLite, `plan
show`, `plan update` and `hook` import none of the modules other commands need (the HTTP
server, the terminal UI, MCP, ACP, rich, PostgreSQL, the signing keys, the bulk workers); a
hook on a call that is not a plan call opens no service and imports no importer. Checked by
name from `sys.modules` at the process's exit, not by timing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.claude_transcripts import Transcript

HEAVY = (
    "fastapi",
    "starlette",
    "uvicorn",
    "textual",
    "mcp",
    "acp",
    "rich",
    "click",  # (installed for uvicorn; the command line is argparse)
    "psycopg",
    "psycopg_pool",
    "cryptography",
    "multiprocessing",
    "concurrent.futures",
    "planledger.clients.http",
    "planledger.clients.web",
    "planledger.clients.tui",
    "planledger.clients.mcp",
    "planledger.clients.acp",
    "planledger.clients.render",
    "planledger.storage.postgres_recorder",
    "planledger.storage.postgres_views",
)

# Runs the console script's entry point and writes the names of the modules it imported.
PROBE = """
import atexit, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write("\\n".join(sorted(sys.modules))))
from planledger.clients.entry import main
main()
"""


def imported(tmp_path: Path, args: list[str], stdin: str) -> set[str]:
    names = tmp_path / "modules.txt"
    env = {**os.environ, "PLANLEDGER_HOME": str(tmp_path / "home")}
    env.pop("PLANLEDGER_DATABASE_URL", None)
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(names), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 0, (result.stdout, result.stderr)
    return set(names.read_text().split())


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


PLAN = json.dumps({"title": "Ship", "steps": [{"id": "a", "title": "A", "status": "in_progress"}]})


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (["plan", "update", "s1", "--json"], PLAN),
        (["plan", "show", "s1", "--json"], ""),
    ],
    ids=["plan update", "plan show"],
)
def test_a_plan_command_imports_nothing_heavy(tmp_path: Path, args: list[str], stdin: str) -> None:
    imported(tmp_path, ["session", "open", "s1", "--json"], "")
    modules = imported(tmp_path, args, stdin)
    assert "planledger.service.core" in modules  # the probe ran the command
    assert heavy_in(modules) == []


def test_plan_show_reads_the_views_without_the_write_side(tmp_path: Path) -> None:
    """No eventsourcing, no event classes, no projection runner: the views and the chains
    of the session's events are read as stored."""
    imported(tmp_path, ["session", "open", "s1", "--json"], "")
    imported(tmp_path, ["plan", "update", "s1", "--json"], PLAN)
    modules = imported(tmp_path, ["plan", "show", "s1", "--json"], "")
    assert "planledger.storage.views" in modules
    write_side = (
        "planledger.service.ledger",
        "projections.runner",
        "domain.plan",
        "domain.session",
    )
    assert sorted(m for m in modules if m in write_side or m.startswith("eventsourcing")) == []


def test_a_plan_update_loads_no_session_event_classes(tmp_path: Path) -> None:
    """A commit to an open session's plan folds plan events only."""
    imported(tmp_path, ["session", "open", "s1", "--json"], "")
    modules = imported(tmp_path, ["plan", "update", "s1", "--json"], PLAN)
    assert "domain.plan" in modules
    assert "domain.session" not in modules


def test_a_hook_imports_nothing_heavy(tmp_path: Path) -> None:
    transcript = Transcript("cold-imports")
    call_id, _ = transcript.task_create("Write the parser")
    path = transcript.write(tmp_path / "cold-imports.jsonl")
    event = json.dumps(transcript.event("PostToolUse", call_id, path))
    modules = imported(tmp_path, ["hook", "claude-code"], event)
    assert "planledger.clients.hooks.claude_code" in modules
    assert heavy_in(modules) == []


def test_a_hook_on_a_call_that_is_not_a_plan_call_opens_no_service(tmp_path: Path) -> None:
    event = {"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash"}
    modules = imported(tmp_path, ["hook", "claude-code"], json.dumps(event))
    assert "planledger.clients.hooks.claude_code" in modules
    assert heavy_in(modules) == []
    assert "planledger.service.ledger" not in modules
    assert "planledger.importers.run" not in modules
