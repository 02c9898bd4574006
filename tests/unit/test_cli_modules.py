"""The command line imports only the named command's module: each word of WHERE is
registered by the module it names, and every top-level command has its word."""

from __future__ import annotations

import json
import subprocess
import sys

from planledger.clients import cli

PROBE = """
import importlib, json, sys
from planledger.clients.cli import app
for name in sys.argv[1:]:
    importlib.import_module(f"planledger.clients.cli.{name}")
print(json.dumps(sorted(app.root.commands.choices)))
"""


def registered(*modules: str) -> set[str]:
    """The top-level commands once these modules alone are imported (a fresh process)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *modules], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout))


def test_each_command_is_registered_by_the_module_it_is_mapped_to() -> None:
    groups = {"session", "goal", "plan"}  # (defined by app itself)
    for module in cli.MODULES:
        own = registered(module) - groups
        mapped = {word for word, name in cli.WHERE.items() if name == module} - groups
        assert own == mapped, module
    assert registered(*cli.MODULES) == set(cli.WHERE)
