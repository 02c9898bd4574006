"""The real agent transcripts of the team's shared folder, read only through PLANLEDGER_SAMPLES
(.ci/run sets it): other people's data, never copied into the repository. A test that needs them
reports itself skipped, saying why, when the variable is unset."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SAMPLES_ENV = "PLANLEDGER_SAMPLES"


def samples(kind: str) -> Path:
    """The folder of `kind` (`claude`, `claude-tasks`) under PLANLEDGER_SAMPLES."""
    root = os.environ.get(SAMPLES_ENV)
    if not root:
        pytest.skip(f"{SAMPLES_ENV} is not set: the real transcripts are not read here")
    folder = Path(root) / kind
    if not folder.is_dir():
        pytest.fail(f"{SAMPLES_ENV}={root} has no {kind}/ folder")
    return folder
