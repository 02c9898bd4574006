"""Claude Code, the pinned binary, headless (`claude -p`) against the scripted model."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.agents.model.server import ScriptedModel
from tests.agents.rig import Sandbox


@dataclass(frozen=True)
class ClaudeRun:
    code: int
    lines: list[dict[str, Any]]
    stderr: str

    @property
    def session_id(self) -> str:
        for line in reversed(self.lines):  # the result's (`--continue` starts under another)
            if line.get("session_id"):
                return str(line["session_id"])
        raise AssertionError(f"no session id in Claude's output: {self.stderr[-2000:]}")

    def tool_results(self) -> list[dict[str, Any]]:
        """The tool_result blocks Claude handed back to the model, in order."""
        return [
            block
            for line in self.lines
            if line.get("type") == "user"
            for block in line.get("message", {}).get("content", [])
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]


@dataclass(frozen=True)
class ClaudeCode:
    binary: Path
    sandbox: Sandbox
    model: ScriptedModel

    def env(self, **extra: str) -> dict[str, str]:
        return self.sandbox.env(
            ANTHROPIC_BASE_URL=self.model.url,
            ANTHROPIC_API_KEY="sk-ant-test-not-a-key",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_TELEMETRY="1",
            DISABLE_AUTOUPDATER="1",
            DISABLE_ERROR_REPORTING="1",
            # 2.1.332's default model gets no todo tools without it (README, Claude Code).
            CLAUDE_CODE_ENABLE_TODO_TOOLS="1",
            **extra,
        )

    def install_hooks(self) -> None:
        self.sandbox.planledger(
            "hooks", "install", "claude-code", "--project", str(self.sandbox.project)
        )

    def claude(self, *args: str) -> subprocess.CompletedProcess[str]:
        """A `claude` command other than a run (`mcp add`, `mcp list`)."""
        return subprocess.run(
            [str(self.binary), *args],
            cwd=self.sandbox.project,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )

    def add_mcp_server(self) -> None:
        """The ledger's MCP server, registered as the README says."""
        added = self.claude("mcp", "add", "planledger", "--", "planledger", "mcp")
        assert added.returncode == 0, added

    def run(self, prompt: str, *flags: str, env: dict[str, str] | None = None) -> ClaudeRun:
        result = subprocess.run(
            [str(self.binary), "-p", prompt, "--output-format", "stream-json", "--verbose", *flags],
            cwd=self.sandbox.project,
            env=self.env(**(env or {})),
            capture_output=True,
            text=True,
            timeout=120,
        )
        lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
        run = ClaudeRun(result.returncode, lines, result.stderr)
        assert run.code == 0, (run.code, result.stdout[-3000:], run.stderr[-3000:])
        return run

    def transcript(self, session_id: str) -> Path:
        found = list((self.sandbox.home / ".claude" / "projects").glob(f"*/{session_id}.jsonl"))
        assert len(found) == 1, found
        return found[0]
