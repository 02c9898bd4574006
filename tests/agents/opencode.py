"""OpenCode, the pinned binary, headless (`opencode run --format json`) against the scripted
model (Chat Completions).

What the binary needs to run offline, found by running 1.18.33: a provider of its own in the
user's `opencode.json` (`@ai-sdk/openai-compatible`, bundled: nothing to download) whose
`baseURL` is the scripted model, and `OPENCODE_DISABLE_AUTOUPDATE=1`,
`OPENCODE_DISABLE_MODELS_FETCH=1`."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.agents import install
from tests.agents.model.server import ScriptedModel
from tests.agents.rig import Sandbox

MODEL = "scripted/test-model"


@dataclass(frozen=True)
class OpenCodeRun:
    code: int
    stdout: str
    stderr: str

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.startswith("{")]

    @property
    def session_id(self) -> str:
        for event in self.events():
            if event.get("sessionID"):
                return str(event["sessionID"])
        raise AssertionError(f"no session in OpenCode's output: {self.stderr[-2000:]}")

    def tool_parts(self, tool: str) -> list[dict[str, Any]]:
        return [
            e["part"]
            for e in self.events()
            if e.get("type") == "tool_use" and e["part"].get("tool") == tool
        ]


@dataclass(frozen=True)
class OpenCode:
    binary: Path
    sandbox: Sandbox
    model: ScriptedModel

    @property
    def config(self) -> Path:
        return self.sandbox.home / ".config" / "opencode"

    @property
    def database(self) -> Path:
        return self.sandbox.home / ".local" / "share" / "opencode" / "opencode.db"

    def env(self, **extra: str) -> dict[str, str]:
        return self.sandbox.env(
            OPENCODE_DISABLE_AUTOUPDATE="1", OPENCODE_DISABLE_MODELS_FETCH="1", **extra
        )

    def prepare(self, *, limit: dict[str, int] | None = None) -> None:
        """The user's config: the scripted model as provider (`limit`: its context and output
        token limits, which decide when OpenCode compacts), the plugin package prepared."""
        model: dict[str, Any] = {"name": "Test model", "tool_call": True}
        if limit is not None:
            model["limit"] = limit
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Scripted",
            "options": {"baseURL": f"{self.model.url}/v1", "apiKey": "test-not-a-key"},
            "models": {"test-model": model},
        }
        config = {
            "$schema": "https://opencode.ai/config.json",
            "provider": {"scripted": provider},
            "model": MODEL,
            "autoupdate": False,
            "share": "disabled",
        }
        self.config.mkdir(parents=True, exist_ok=True)
        (self.config / "opencode.json").write_text(json.dumps(config))
        # The plugin package OpenCode would install from npm at every start of a fresh config
        # folder with plugins (a 75 s stall without a registry), prepared from the cache.
        modules = install.plugin_modules("opencode")
        assert modules is not None and modules.exists(), (
            f"{modules}: python -m tests.agents.install"
        )
        pin = install.pins()["opencode"]
        package = {"dependencies": {pin["plugin"]: pin["version"]}}
        (self.config / "package.json").write_text(json.dumps(package, indent=2))
        (self.config / "node_modules").symlink_to(modules, target_is_directory=True)

    def install_plugin(self) -> None:
        """`planledger hooks install opencode --user`, as the README says."""
        self.sandbox.planledger("hooks", "install", "opencode", "--user", env=self.env())

    def run(
        self, prompt: str, *flags: str, check: bool = True, timeout: float = 150
    ) -> OpenCodeRun:
        result = subprocess.run(
            [str(self.binary), "run", "--format", "json", *flags, prompt],
            cwd=self.sandbox.project,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        run = OpenCodeRun(result.returncode, result.stdout, result.stderr)
        if check:
            assert run.code == 0, (run.code, result.stdout[-3000:], run.stderr[-3000:])
        return run
