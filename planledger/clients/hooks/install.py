"""`planledger hooks install`: merge the hook entries an agent needs into its settings file.

Every other setting and hook is kept; an entry already there is left alone, an older
`planledger hook` entry of the same agent is replaced, so running it twice changes nothing.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from domain.errors import LedgerError

PROGRAM_NAMES = frozenset({"planledger", "planledger.exe"})


class UnreadableSettings(LedgerError):
    """The settings file exists but is not a JSON object of the shape the agent reads."""

    code = "unreadable_settings"


@dataclass(frozen=True)
class Entry:
    """One matcher group: run the hook on `event` when `matcher` matches (None: always);
    `timeout` overrides the agent's handler timeout for it (an import reads a transcript)."""

    event: str
    matcher: str | None
    timeout: int | None = None


@dataclass(frozen=True)
class AgentHooks:
    """Where an agent reads its hooks and which entries planledger needs there."""

    folder: str
    file: str
    entries: tuple[Entry, ...]
    handler: dict[str, Any] = field(default_factory=dict)  # timeout etc., in the agent's units

    def user_folder(self) -> Path:
        if self.folder == ".codex" and os.environ.get("CODEX_HOME"):
            return Path(os.environ["CODEX_HOME"]).expanduser()
        return Path.home() / self.folder


AGENTS: dict[str, AgentHooks] = {
    # Claude Code: matcher = tool name or SessionStart source; timeout in seconds.
    # The todo tools of every version: TodoWrite, and the task tools (2.1.19 and later).
    "claude-code": AgentHooks(
        ".claude",
        "settings.json",
        (
            Entry("PreToolUse", "TodoWrite|TaskCreate|TaskUpdate"),
            Entry("PostToolUse", "TodoWrite|TaskCreate|TaskUpdate"),
            Entry("TaskCreated", None),
            Entry("TaskCompleted", None),
            Entry("Stop", None, timeout=30),
            Entry("PreCompact", None, timeout=30),
            Entry("SessionEnd", None, timeout=30),
            Entry("SessionStart", "compact|resume|clear", timeout=30),
            Entry("UserPromptSubmit", None),
        ),
        {"timeout": 10},
    ),
    # Gemini CLI: tool matchers are regular expressions, lifecycle ones exact; timeout in ms.
    "gemini": AgentHooks(
        ".gemini",
        "settings.json",
        (
            Entry(
                "BeforeTool",
                "^(write_todos|tracker_create_task|tracker_update_task|tracker_add_dependency)$",
            ),
            Entry("AfterTool", "^tracker_create_task$"),
            Entry("SessionStart", "resume"),
            Entry("PreCompress", None),
            Entry("BeforeAgent", None),
        ),
        {"name": "planledger", "timeout": 10000},
    ),
    # Codex: hooks.json beside config.toml; timeout in seconds (an import reads the rollout).
    "codex": AgentHooks(
        ".codex",
        "hooks.json",
        (
            Entry("PreToolUse", "update_plan", timeout=10),
            Entry("PostToolUse", "update_plan", timeout=10),
            Entry("Stop", None),
            Entry("PostCompact", None),
            Entry("SessionStart", "resume|compact"),
        ),
        {"timeout": 30, "statusMessage": "Recording the plan in the plan ledger"},
    ),
}


@dataclass(frozen=True)
class InstallResult:
    path: Path
    text: str
    changed: bool
    written: bool
    notes: tuple[str, ...] = ()  # what else was set up, or what the user must do


def settings_path(agent: str, project: Path | None = None, user: bool = False) -> Path:
    """The agent's hook settings file in the project (default: the current folder) or home."""
    hooks = AGENTS[agent]
    folder = hooks.user_folder() if user else (project or Path.cwd()) / hooks.folder
    return folder / hooks.file


def planledger_program() -> str:
    """The absolute path of the running `planledger` command (agents may not share our PATH)."""
    argv0 = Path(sys.argv[0])
    if argv0.name in PROGRAM_NAMES:
        return str(argv0.absolute())
    # Not started as the command (python -m): the script beside our Python,
    # which is the one this installation made, before any other on PATH.
    for candidate in PROGRAM_NAMES:
        beside = Path(sys.executable).parent / candidate
        if beside.exists():
            return str(beside.absolute())
    found = shutil.which("planledger")
    return str(Path(found).absolute()) if found else "planledger"


def hook_command(agent: str, database: str | None = None, program: str | None = None) -> str:
    words = [program or planledger_program()]
    if database:
        words += ["--database", database]
    return shlex.join([*words, "hook", agent])


def is_ours(handler: Any, agent: str) -> bool:
    """Whether a hook handler runs `planledger ... hook <agent>`."""
    command = handler.get("command") if isinstance(handler, dict) else None
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    named = any(Path(word).name in PROGRAM_NAMES for word in words)
    return named and any(a == "hook" and b == agent for a, b in itertools.pairwise(words))


def merge(settings: dict[str, Any], agent: str, command: str) -> dict[str, Any]:
    """`settings` with planledger's entries for `agent` (a new object; the input is untouched)."""
    spec = AGENTS[agent]
    merged = copy.deepcopy(settings)
    hooks = merged.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UnreadableSettings("its 'hooks' is not a JSON object")
    for entry in spec.entries:
        wanted = {"type": "command", "command": command, **spec.handler}
        if entry.timeout is not None:
            wanted["timeout"] = entry.timeout
        groups = hooks.setdefault(entry.event, [])
        if not isinstance(groups, list):
            raise UnreadableSettings(f"its hooks.{entry.event} is not a JSON array")
        if any(_matches(group, entry) and wanted in group["hooks"] for group in groups):
            continue
        hooks[entry.event] = [*_without_ours(groups, agent), _group(entry, wanted)]
    return merged


def _matches(group: Any, entry: Entry) -> bool:
    return (
        isinstance(group, dict)
        and group.get("matcher") == entry.matcher
        and isinstance(group.get("hooks"), list)
    )


def _group(entry: Entry, handler: dict[str, Any]) -> dict[str, Any]:
    group: dict[str, Any] = {} if entry.matcher is None else {"matcher": entry.matcher}
    group["hooks"] = [handler]
    return group


def _without_ours(groups: list[Any], agent: str) -> list[Any]:
    """The groups with older planledger handlers of `agent` taken out (and groups left empty
    by that dropped); everything else exactly as it was."""
    kept: list[Any] = []
    for group in groups:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(handlers, list) or not any(is_ours(h, agent) for h in handlers):
            kept.append(group)
            continue
        others = [h for h in handlers if not is_ours(h, agent)]
        if others:
            kept.append({**group, "hooks": others})
    return kept


def read_settings(path: Path) -> dict[str, Any]:
    """The settings object at `path` ({} when the file is missing or blank)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as error:
        raise UnreadableSettings(f"cannot read {path}: {error}") from None
    if not text.strip():
        return {}
    try:
        settings = json.loads(text)
    except json.JSONDecodeError as error:
        raise UnreadableSettings(f"{path} is not JSON ({error}); fix it or move it away") from None
    if not isinstance(settings, dict):
        raise UnreadableSettings(f"{path} is not a JSON object")
    return settings


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else None
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def install(
    agent: str,
    *,
    project: Path | None = None,
    user: bool = False,
    database: str | None = None,
    print_only: bool = False,
) -> InstallResult:
    """Merge the entries into the agent's settings file (OpenCode: write our plugin); with
    `print_only`, write nothing."""
    if agent == "opencode":
        return install_plugin(project=project, user=user, database=database, print_only=print_only)
    path = settings_path(agent, project, user)
    current = read_settings(path)
    try:
        merged = merge(current, agent, hook_command(agent, database))
    except UnreadableSettings as error:
        raise UnreadableSettings(f"{path}: {error}") from None
    text = json.dumps(merged, indent=2, ensure_ascii=False) + "\n"
    changed = merged != current or not path.exists()
    if changed and not print_only:
        write_atomically(path, text)
    notes: list[str] = []
    if agent == "codex":
        from planledger.clients.hooks import codex_config

        notes = codex_config.prepare(path.parent / "config.toml", write=not print_only)
    written = changed and not print_only
    return InstallResult(path=path, text=text, changed=changed, written=written, notes=tuple(notes))


def install_plugin(
    *, project: Path | None, user: bool, database: str | None, print_only: bool
) -> InstallResult:
    """OpenCode's plugin, `planledger.js`, in the project's or the user's plugin folder."""
    from planledger.clients.hooks import opencode_plugin

    words = [planledger_program(), *(["--database", database] if database else []), "hook"]
    text = opencode_plugin.plugin_text([*words, "opencode"])
    path = opencode_plugin.plugin_folder(project, user) / opencode_plugin.FILE
    try:
        changed = path.read_text(encoding="utf-8") != text
    except OSError:
        changed = True
    if changed and not print_only:
        write_atomically(path, text)
    return InstallResult(path=path, text=text, changed=changed, written=changed and not print_only)
