"""Install the pinned agent binaries (tests/agents/agents.json) with npm into a cache outside the
repository, reused between runs: `python -m tests.agents.install`. `.ci/run` calls it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PINS = Path(__file__).with_name("agents.json")


def cache_root() -> Path:
    default = Path.home() / ".cache" / "planledger-agents"
    return Path(os.environ.get("PLANLEDGER_AGENTS_CACHE", default))


def pins() -> dict[str, dict[str, str]]:
    loaded: dict[str, dict[str, str]] = json.loads(PINS.read_text())
    return loaded


def binary(agent: str) -> Path:
    """Where the pinned binary of `agent` is once installed."""
    pin = pins()[agent]
    return cache_root() / f"{agent}-{pin['version']}" / "node_modules" / ".bin" / pin["bin"]


def install(agent: str) -> Path:
    pin = pins()[agent]
    path = binary(agent)
    if not path.exists():
        prefix = path.parents[2]
        print(f"installing {pin['package']}@{pin['version']} into {prefix}", flush=True)
        subprocess.run(
            [
                "npm",
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
                str(prefix),
                f"{pin['package']}@{pin['version']}",
            ],
            check=True,
        )
    return path


if __name__ == "__main__":
    for name in sys.argv[1:] or pins():
        print(install(name))
