"""`planledger hooks install`: merged into existing settings, idempotent; `--print` only shows."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli import planledger_command

SETTINGS = {
    "claude-code": ".claude/settings.json",
    "gemini": ".gemini/settings.json",
    "codex": ".codex/hooks.json",
}
TOOLS = "TodoWrite|TaskCreate|TaskUpdate"
TRACKER = "^(write_todos|tracker_create_task|tracker_update_task|tracker_add_dependency)$"
EVENTS = {
    "claude-code": {
        "PreToolUse": TOOLS,
        "PostToolUse": TOOLS,
        "TaskCreated": None,
        "TaskCompleted": None,
        "Stop": None,
        "PreCompact": None,
        "SessionEnd": None,
        "SessionStart": "compact|resume|clear",
        "UserPromptSubmit": None,
    },
    "gemini": {
        "BeforeTool": TRACKER,
        "AfterTool": "^tracker_create_task$",
        "SessionStart": "resume",
        "PreCompress": None,
        "BeforeAgent": None,
    },
    "codex": {
        "PreToolUse": "update_plan",
        "PostToolUse": "update_plan",
        "Stop": None,
        "PostCompact": None,
        "SessionStart": "resume|compact",
    },
}
OTHER_HOOK = {"type": "command", "command": "./scripts/guard.sh"}


def install(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "CODEX_HOME": ""}
    env.pop("PLANLEDGER_DATABASE_URL", None)
    return subprocess.run(
        [planledger_command(), *args], capture_output=True, text=True, env=env, timeout=60
    )


def existing_settings(agent: str) -> dict[str, Any]:
    """Settings a user already has: other keys, and another hook on an event we also use."""
    event = next(iter(EVENTS[agent]))
    return {
        "model": "some-model",
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {event: [{"matcher": "Bash", "hooks": [OTHER_HOOK]}]},
    }


def ours(settings: dict[str, Any], agent: str) -> dict[str, str | None]:
    """event → matcher of every planledger handler in the settings."""
    found: dict[str, str | None] = {}
    for event, groups in settings["hooks"].items():
        for group in groups:
            for handler in group["hooks"]:
                if handler["command"].endswith(f"planledger hook {agent}"):
                    assert event not in found, f"two planledger entries for {event}"
                    found[event] = group.get("matcher")
    return found


@pytest.mark.parametrize("agent", list(SETTINGS))
def test_install_merges_into_existing_settings_once(agent: str, tmp_path: Path) -> None:
    path = tmp_path / "project" / SETTINGS[agent]
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(existing_settings(agent)))

    first = install(
        "hooks", "install", agent, "--project", str(tmp_path / "project"), home=tmp_path
    )
    assert first.returncode == 0, first.stderr
    merged = json.loads(path.read_text())
    before = existing_settings(agent)
    assert {k: merged[k] for k in ("model", "permissions")} == {
        k: before[k] for k in ("model", "permissions")
    }
    event = next(iter(EVENTS[agent]))
    assert merged["hooks"][event][0] == before["hooks"][event][0]  # the user's hook, first
    assert ours(merged, agent) == EVENTS[agent]
    handler = merged["hooks"][event][-1]["hooks"][0]
    program = Path(handler["command"].split()[0])
    assert program.is_absolute() and program.name == "planledger"
    assert "timeout" in handler

    text, mtime = path.read_text(), path.stat().st_mtime_ns
    second = install(
        "hooks", "install", agent, "--project", str(tmp_path / "project"), home=tmp_path
    )
    assert second.returncode == 0, second.stderr
    assert "nothing changed" in second.stdout
    assert (path.read_text(), path.stat().st_mtime_ns) == (text, mtime)


def test_print_shows_the_result_and_writes_nothing(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    shown = install(
        "hooks", "install", "claude-code", "--print", "--project", str(project), home=tmp_path
    )
    assert shown.returncode == 0, shown.stderr
    shown_hooks = json.loads(shown.stdout)
    assert ours(shown_hooks, "claude-code") == EVENTS["claude-code"]
    timeouts = {
        event: groups[-1]["hooks"][0]["timeout"] for event, groups in shown_hooks["hooks"].items()
    }
    assert timeouts["PreToolUse"] == 10 and timeouts["Stop"] == 30  # an import reads a file
    assert not (project / ".claude").exists()


def test_an_older_install_is_upgraded_to_the_task_tools_in_place(tmp_path: Path) -> None:
    """Settings written by an earlier planledger (TodoWrite only): one install brings them to
    every event, no entry doubled, the user's own hooks kept."""
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    old = {"type": "command", "command": "/old/bin/planledger hook claude-code", "timeout": 10}
    path.write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {"matcher": "TodoWrite", "hooks": [old]},
                        {"matcher": "Bash", "hooks": [OTHER_HOOK]},
                    ],
                    "PostToolUse": [{"matcher": "TodoWrite", "hooks": [old]}],
                    "SessionStart": [{"matcher": "compact|resume", "hooks": [old]}],
                }
            }
        )
    )
    result = install("hooks", "install", "claude-code", "--project", str(tmp_path), home=tmp_path)
    assert result.returncode == 0, result.stderr
    merged = json.loads(path.read_text())
    assert ours(merged, "claude-code") == EVENTS["claude-code"]
    assert merged["hooks"]["PreToolUse"][0] == {"matcher": "Bash", "hooks": [OTHER_HOOK]}


def test_user_settings_and_an_older_entry_replaced(tmp_path: Path) -> None:
    path = tmp_path / ".gemini" / "settings.json"
    path.parent.mkdir()
    stale = {"type": "command", "command": "/old/venv/bin/planledger hook gemini"}
    path.write_text(
        json.dumps(
            {"hooks": {"BeforeTool": [{"matcher": "write_todos", "hooks": [stale, OTHER_HOOK]}]}}
        )
    )
    result = install(
        "--database",
        "sqlite:////data/ledger.sqlite3",
        "hooks",
        "install",
        "gemini",
        "--user",
        home=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    groups = json.loads(path.read_text())["hooks"]["BeforeTool"]
    assert groups[0] == {"matcher": "write_todos", "hooks": [OTHER_HOOK]}
    assert groups[1]["matcher"] == TRACKER
    command = groups[1]["hooks"][0]["command"]
    assert command.endswith("--database sqlite:////data/ledger.sqlite3 hook gemini")


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"hooks": {"Stop": {}}}'])
def test_unreadable_settings_exit_2_and_stay_as_they_were(tmp_path: Path, content: str) -> None:
    path = tmp_path / ".codex" / "hooks.json"
    path.parent.mkdir()
    path.write_text(content)
    result = install("hooks", "install", "codex", "--project", str(tmp_path), home=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("planledger: error: ") and len(result.stderr.splitlines()) == 1
    assert path.read_text() == content


def test_opencode_gets_a_plugin_of_ours_written_once(tmp_path: Path) -> None:
    project = tmp_path / "project"
    first = install("hooks", "install", "opencode", "--project", str(project), home=tmp_path)
    assert first.returncode == 0, first.stderr
    plugin = project / ".opencode" / "plugins" / "planledger.js"
    text = plugin.read_text()
    assert "tool.execute.before" in text and '"hook", "opencode"]' in text
    command = json.loads(text.split("const COMMAND = ", 1)[1].split(";", 1)[0])
    assert Path(command[0]).is_absolute() and Path(command[0]).name == "planledger"
    again = install("hooks", "install", "opencode", "--project", str(project), home=tmp_path)
    assert "nothing changed" in again.stdout and plugin.read_text() == text
