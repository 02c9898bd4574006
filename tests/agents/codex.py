"""Codex, the pinned binary, headless (`codex exec --json`) against the scripted model.

What the binary needs to run offline, found by running 0.171.0: a model provider of its own in
`$CODEX_HOME/config.toml` (`wire_api = "responses"`, `base_url` the scripted model, `env_key`
naming a variable that holds a dummy key), analytics and the update check off, the project
trusted; `--skip-git-repo-check` outside a repository; and, for the hooks to run headless,
`--dangerously-bypass-hook-trust` (Codex runs no untrusted hook, silently). An MCP server's tools
need `default_tools_approval_mode = "approve"` under `approval_policy = "never"`."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.agents.model.server import ScriptedModel
from tests.agents.rig import Sandbox

MODEL = "gpt-5.5"
KEY_VARIABLE = "SCRIPTED_MODEL_KEY"


@dataclass(frozen=True)
class CodexRun:
    code: int
    stdout: str
    stderr: str

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.startswith("{")]

    @property
    def thread_id(self) -> str:
        for event in self.events():
            if event.get("type") == "thread.started":
                return str(event["thread_id"])
        raise AssertionError(f"no thread in Codex's output: {self.stderr[-2000:]}")


@dataclass(frozen=True)
class Codex:
    binary: Path
    sandbox: Sandbox
    model: ScriptedModel

    @property
    def home(self) -> Path:
        return self.sandbox.home / ".codex"

    def env(self, **extra: str) -> dict[str, str]:
        return self.sandbox.env(
            CODEX_HOME=str(self.home), **{KEY_VARIABLE: "test-not-a-key"}, **extra
        )

    def prepare(self, *, mcp: bool = False, settings: tuple[str, ...] = ()) -> None:
        """The user's config: the scripted model as provider, nothing outbound, project trusted
        (`settings`: more top-level lines)."""
        self.home.mkdir(parents=True, exist_ok=True)
        lines = [
            *settings,
            f'model = "{MODEL}"',
            'model_provider = "scripted"',
            'approval_policy = "never"',
            'sandbox_mode = "read-only"',
            "check_for_update_on_startup = false",
            "",
            "[model_providers.scripted]",
            'name = "Scripted"',
            f'base_url = "{self.model.url}/v1"',
            'wire_api = "responses"',
            f'env_key = "{KEY_VARIABLE}"',
            "",
            "[analytics]",
            "enabled = false",
            "",
            f'[projects."{self.sandbox.project}"]',
            'trust_level = "trusted"',
        ]
        if mcp:
            from tests.e2e.test_cli import planledger_command

            lines += [
                "",
                "[mcp_servers.planledger]",
                f'command = "{planledger_command()}"',
                'args = ["mcp"]',
                f'env = {{ PLANLEDGER_HOME = "{self.sandbox.ledger_home}" }}',
                'default_tools_approval_mode = "approve"',
            ]
        (self.home / "config.toml").write_text("\n".join(lines) + "\n")

    def install_hooks(self) -> subprocess.CompletedProcess[str]:
        """`planledger hooks install codex --user`, as the README says."""
        return self.sandbox.planledger("hooks", "install", "codex", "--user", env=self.env())

    def run(
        self, prompt: str, *flags: str, resume: str | None = None, check: bool = True
    ) -> CodexRun:
        command = [str(self.binary), "exec"]
        common = ["--json", "--skip-git-repo-check", "--dangerously-bypass-hook-trust"]
        if resume is not None:  # `resume` takes its options only before it
            command += [*common, *flags, "resume", resume, prompt]
        else:
            command += [*common, *flags, prompt]
        result = subprocess.run(
            command,
            cwd=self.sandbox.project,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        run = CodexRun(result.returncode, result.stdout, result.stderr)
        if check:
            assert run.code == 0, (run.code, result.stdout[-3000:], run.stderr[-3000:])
        return run

    def rollouts(self) -> list[Path]:
        return sorted((self.home / "sessions").rglob("rollout-*.jsonl"))
