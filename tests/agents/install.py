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
        npm_install(prefix, f"{pin['package']}@{pin['version']}")
    return path


def plugin_modules(agent: str) -> Path | None:
    """The `node_modules` holding the agent's plugin package (OpenCode's `@opencode-ai/plugin`,
    which OpenCode otherwise installs from npm into every config folder that has plugins)."""
    pin = pins()[agent]
    if "plugin" not in pin:
        return None
    return cache_root() / f"{agent}-plugin-{pin['version']}" / "node_modules"


def install_plugin(agent: str) -> Path | None:
    modules = plugin_modules(agent)
    if modules is None or modules.exists():
        return modules
    pin = pins()[agent]
    print(f"installing {pin['plugin']}@{pin['version']} into {modules.parent}", flush=True)
    npm_install(modules.parent, f"{pin['plugin']}@{pin['version']}")
    return modules


def npm_install(prefix: Path, package: str) -> None:
    subprocess.run(
        [
            "npm",
            "install",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--prefix",
            str(prefix),
            package,
        ],
        check=True,
    )


if __name__ == "__main__":
    for name in sys.argv[1:] or pins():
        print(install(name))
        plugin = install_plugin(name)
        if plugin is not None:
            print(plugin)
