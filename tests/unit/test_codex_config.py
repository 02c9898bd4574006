"""`hooks install codex` turns Codex's update_plan on, once, and leaves a user's choice alone."""

from __future__ import annotations

import tomllib
from pathlib import Path

from planledger.clients.hooks.codex_config import TRUST, prepare


def test_update_plan_is_turned_on_once_beside_the_other_settings(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('model = "gpt-5.5"\n\n[projects."/repo"]\ntrust_level = "trusted"\n')
    assert prepare(config, write=True)[0].startswith("update_plan turned on")
    settings = tomllib.loads(config.read_text())
    assert settings["tools"]["update_plan"] == {"enabled": True}
    assert settings["projects"]["/repo"] == {"trust_level": "trusted"}
    assert prepare(config, write=True) == [TRUST]  # already on: nothing written
    assert config.read_text().count("[tools.update_plan]") == 1


def test_a_choice_the_user_made_is_kept_and_named(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[tools.update_plan]\nenabled = false\n")
    [note, _] = prepare(config, write=True)
    assert "without enabled = true" in note
    assert config.read_text() == "[tools.update_plan]\nenabled = false\n"


def test_print_only_writes_nothing_and_an_unreadable_file_is_named(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    assert prepare(config, write=False)[0].startswith("would add")
    assert not config.exists()
    config.write_text("this is = = not toml")
    assert "could not be read" in prepare(config, write=True)[0]
