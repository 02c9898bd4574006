"""One isolated world per agent test: a home, XDG folders, the agent's config home, a project
folder and a ledger of their own, and every outbound feature of the agents off."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.test_cli import planledger_command


@dataclass(frozen=True)
class Sandbox:
    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def project(self) -> Path:
        return self.root / "project"

    @property
    def ledger_home(self) -> Path:
        return self.root / "ledger"

    def make(self) -> Sandbox:
        for folder in (self.home, self.project, self.ledger_home):
            folder.mkdir(parents=True, exist_ok=True)
        return self

    def env(self, **extra: str) -> dict[str, str]:
        """The environment an agent (and the hooks it runs) gets: nothing of ours leaks in."""
        planledger_bin = str(Path(planledger_command()).parent)
        env = {
            "PATH": os.pathsep.join([planledger_bin, os.environ.get("PATH", "/usr/bin:/bin")]),
            "HOME": str(self.home),
            "USER": "tester",
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "TMPDIR": str(self.root),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "PLANLEDGER_HOME": str(self.ledger_home),
            "NO_COLOR": "1",
        }
        env.update(extra)
        return env

    def planledger(
        self, *args: str, check: bool = True, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [planledger_command(), *args],
            cwd=self.project,
            env=env or self.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check:
            assert result.returncode == 0, (args, result.stdout, result.stderr)
        return result

    def planledger_json(self, *args: str) -> Any:
        return json.loads(self.planledger(*args, "--json").stdout)

    def sessions(self) -> dict[str, Any]:
        """The ledger's sessions by id."""
        listed = self.planledger_json("session", "list")
        rows = listed["sessions"] if isinstance(listed, dict) else listed
        return {row["session_id"]: row for row in rows}

    def plan(self, session: str) -> Any:
        return self.planledger_json("plan", "show", session)
