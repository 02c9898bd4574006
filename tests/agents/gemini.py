"""Gemini CLI, the pinned binary, headless (`gemini -p`) against the scripted model.

What the binary needs to run offline, found by running 0.61.0: `GOOGLE_GEMINI_BASE_URL` and
`GEMINI_API_KEY`; `security.auth.selectedType: "gemini-api-key"` (else exit 41); a trusted
project folder (`~/.gemini/trustedFolders.json`, else exit 55); and, for `write_todos`, an
explicit Gemini 2 model (`-m gemini-2.5-pro`) with `--yolo`."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.agents.model.server import ScriptedModel
from tests.agents.rig import Sandbox

MODEL = "gemini-2.5-pro"

# Everything outbound off; the auth the scripted model accepts.
USER_SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True, "enableAutoUpdate": False},
    "ide": {"enabled": False},
}


@dataclass(frozen=True)
class GeminiRun:
    code: int
    stdout: str
    stderr: str

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.startswith("{")]

    @property
    def session_id(self) -> str:
        for line in self.lines():
            if line.get("session_id"):
                return str(line["session_id"])
        raise AssertionError(f"no session id in Gemini's output: {self.stderr[-2000:]}")


@dataclass(frozen=True)
class Gemini:
    binary: Path
    sandbox: Sandbox
    model: ScriptedModel

    @property
    def config(self) -> Path:
        return self.sandbox.home / ".gemini"

    def env(self, **extra: str) -> dict[str, str]:
        return self.sandbox.env(
            GOOGLE_GEMINI_BASE_URL=self.model.url,
            GEMINI_API_KEY="test-not-a-key",
            GEMINI_CLI_NO_RELAUNCH="true",
            **extra,
        )

    def prepare(self) -> None:
        """User settings (auth, nothing outbound) and the project folder trusted."""
        self.config.mkdir(parents=True, exist_ok=True)
        (self.config / "settings.json").write_text(json.dumps(USER_SETTINGS))
        trusted = {str(self.sandbox.project): "TRUST_FOLDER"}
        (self.config / "trustedFolders.json").write_text(json.dumps(trusted))

    def install_hooks(self) -> None:
        self.sandbox.planledger(
            "hooks", "install", "gemini", "--project", str(self.sandbox.project)
        )

    def run(
        self,
        prompt: str,
        *flags: str,
        env: dict[str, str] | None = None,
        check: bool = True,
    ) -> GeminiRun:
        result = subprocess.run(
            [
                str(self.binary),
                "-p",
                prompt,
                "--output-format",
                "stream-json",
                "-m",
                MODEL,
                "--yolo",
                *flags,
            ],
            cwd=self.sandbox.project,
            env=self.env(**(env or {})),
            capture_output=True,
            text=True,
            timeout=120,
        )
        run = GeminiRun(result.returncode, result.stdout, result.stderr)
        if check:
            assert run.code == 0, (run.code, result.stdout[-3000:], run.stderr[-3000:])
        return run

    def acp_command(self) -> list[str]:
        """Gemini in ACP mode behind the ledger's proxy, as the README says."""
        from tests.e2e.test_cli import planledger_command

        return [planledger_command(), "acp", "--", str(self.binary), "--acp", "-m", MODEL]

    def recordings(self) -> list[Path]:
        """Gemini's chat recordings (`~/.gemini/tmp/<project>/chats/`)."""
        return sorted((self.config / "tmp").glob("*/chats/*"))


def add_mcp_server(agent: Gemini) -> None:
    """`planledger mcp` in Gemini's user settings, as the README says (tools `mcp_planledger_*`)."""
    from tests.e2e.test_cli import planledger_command

    path = agent.config / "settings.json"
    settings = json.loads(path.read_text())
    settings["mcpServers"] = {
        "planledger": {"command": planledger_command(), "args": ["mcp"], "trust": True}
    }
    path.write_text(json.dumps(settings))
