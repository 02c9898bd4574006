"""What Codex needs besides its hooks.json before the hooks see a plan (found running 0.171.0):

- `update_plan` is off by default: a stock config offers the model no plan tool at all. It needs
  `[tools.update_plan] enabled = true` in `config.toml` (beside `hooks.json`); `hooks install
  codex` adds that table when the file does not set it, and leaves a value you set alone.
- Codex runs no hook, silently, until its hooks are trusted (a trusted project is not enough):
  `/hooks` in the TUI reviews them (Codex then records a `trusted_hash`), and a headless run needs
  `codex exec --dangerously-bypass-hook-trust`. The ledger cannot trust them for you.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

TABLE = "\n[tools.update_plan]\nenabled = true\n"
TRUST = (
    "Codex runs hooks only once they are trusted: review them with /hooks in the Codex TUI, or "
    "run headless with `codex exec --dangerously-bypass-hook-trust`."
)


def prepare(config: Path, *, write: bool) -> list[str]:
    """Turn on `update_plan` in `config` (unless it says otherwise); what the user must know."""
    notes = [_update_plan(config, write=write), TRUST]
    return [note for note in notes if note]


def _update_plan(config: Path, *, write: bool) -> str:
    try:
        text = config.read_text(encoding="utf-8") if config.exists() else ""
        settings = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        return (
            f"{config} could not be read ({error}); add [tools.update_plan] enabled = true "
            "yourself, or Codex offers its model no plan tool"
        )
    tools = settings.get("tools")
    setting: Any = tools.get("update_plan") if isinstance(tools, dict) else None
    if setting is None:
        if not write:
            return f"would add [tools.update_plan] enabled = true to {config}"
        config.parent.mkdir(parents=True, exist_ok=True)
        with config.open("a", encoding="utf-8") as stream:
            stream.write(TABLE)
        return f"update_plan turned on in {config} ([tools.update_plan] enabled = true)"
    if isinstance(setting, dict) and setting.get("enabled") is True:
        return ""
    return (
        f"{config} sets tools.update_plan without enabled = true: Codex offers its model no "
        "plan tool until it is enabled"
    )
