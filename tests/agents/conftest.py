"""The agents' real binaries (pinned in agents.json, installed by `.ci/run`) against scripted
model servers on 127.0.0.1. A missing binary fails the test, as a missing PostgreSQL does."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.agents import install
from tests.agents.claude import ClaudeCode
from tests.agents.model.server import Script, ScriptedModel
from tests.agents.rig import Sandbox


def pinned_binary(agent: str) -> Path:
    path = install.binary(agent)
    if not path.exists():
        pin = install.pins()[agent]
        pytest.fail(
            f"{pin['package']}@{pin['version']} is required and not installed at {path} "
            "(python -m tests.agents.install; .ci/run does it)",
            pytrace=False,
        )
    return path


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path).make()


@pytest.fixture
def model() -> Iterator[Callable[[Script], ScriptedModel]]:
    """Start a scripted model server (stopped after the test); it must have seen no error."""
    started: list[ScriptedModel] = []

    def start(script: Script) -> ScriptedModel:
        started.append(ScriptedModel(script).start())
        return started[-1]

    yield start
    for server in started:
        server.stop()
        assert not server.errors, server.errors


@pytest.fixture
def claude(
    sandbox: Sandbox, model: Callable[[Script], ScriptedModel]
) -> Callable[[Script], ClaudeCode]:
    """Claude Code with the ledger's hooks installed in the project, as the README says."""
    binary = pinned_binary("claude")

    def make(script: Script) -> ClaudeCode:
        agent = ClaudeCode(binary, sandbox, model(script))
        agent.install_hooks()
        return agent

    return make
