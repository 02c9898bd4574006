"""A home where plan.json files cannot be written (PLANLEDGER_HOME is a file, so no folder
can be made under it: chmod means nothing to root), with the database elsewhere. A committed
decision is reported as committed: the failed file is a warning and a health signal only."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_server import stop
from tests.faults.support import STRICT_1, healthy_within, run, spawn_server, wait_until

pytestmark = pytest.mark.faults


@pytest.fixture
def unwritable_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.write_text("a file where the home folder should be\n")
    return home


def back_fills_of(database: str) -> list[str]:
    """The running `projections sync-files` processes given this database (other tests, run
    beside this one, start their own)."""
    found = []
    for process in Path("/proc").iterdir():
        try:
            args = (process / "cmdline").read_bytes().split(b"\0")
            env = (process / "environ").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile, or not a process
            continue
        if b"sync-files" in args and f"PLANLEDGER_DATABASE_URL={database}".encode() in env:
            found.append(process.name)
    return found


def test_cli_commits_with_a_warning_and_a_retry_writes_nothing(
    unwritable_home: Path, tmp_path: Path
) -> None:
    home = unwritable_home
    database = f"sqlite:///{tmp_path / 'db' / 'ledger.sqlite3'}"
    opened = run(home, database, "session", "open", "s1")
    assert opened.returncode == 0, str(opened)
    update = ("plan", "update", "s1", "-", "--proposal-id", "p1", "--json")
    first = run(home, database, *update, stdin=json.dumps(STRICT_1))
    assert first.returncode == 0, str(first)
    assert first.json()["status"] == "committed" and first.json()["revision"] == 1
    warnings = [line for line in first.stderr.splitlines() if line.strip()]
    assert warnings and all("warning" in line for line in warnings), str(first)
    assert "plan.json" in first.stderr, str(first)

    retry = run(home, database, *update, stdin=json.dumps(STRICT_1))
    assert retry.returncode == 0, str(retry)
    assert retry.json()["proposal_id"] == "p1" and retry.json()["revision"] == 1, str(retry)

    shown = run(home, database, "plan", "show", "s1", "--json")
    assert shown.returncode == 0, str(shown)
    assert shown.json()["revision"] == 1 and shown.json()["steps"] == STRICT_1["steps"]
    history = run(home, database, "plan", "history", "s1", "--json")
    assert history.returncode == 0, str(history)
    entries = history.json()["entries"]
    assert [(e["kind"], e["proposal_id"]) for e in entries] == [
        ("proposed", "p1"),
        ("committed", "p1"),
    ], "the retry wrote something"
    assert home.read_text().startswith("a file")  # untouched
    # Nothing was left behind: a back-fill that cannot write is never started (it used to
    # start itself again and again).
    time.sleep(1)
    assert not back_fills_of(database), "a back-fill was started"


def test_server_commits_and_healthz_reports_the_warning(
    unwritable_home: Path, tmp_path: Path
) -> None:
    database = f"sqlite:///{tmp_path / 'db' / 'ledger.sqlite3'}"
    server = spawn_server(database, unwritable_home, logs=tmp_path)
    try:
        assert (problem := healthy_within(server)) is None, problem
        with httpx.Client(base_url=server.url, timeout=15.0) as api:
            assert api.post("/sessions", json={"session_id": "s1"}).status_code == 201
            committed = api.post("/sessions/s1/plan", json=STRICT_1)
            assert committed.status_code == 200, committed.text
            assert committed.json()["status"] == "committed", committed.text
            assert api.get("/sessions/s1/plan").json()["revision"] == 1

            def degraded() -> dict[str, Any] | None:
                response = api.get("/healthz")
                body: dict[str, Any] = response.json()
                assert response.status_code == 200, response.text  # the database is fine
                return body if body.get("warnings") else None

            started = time.monotonic()
            health = wait_until(degraded, 5.0, "/healthz reporting the plan.json failure")
            assert health["status"] == "degraded", health
            assert any("plan.json" in warning for warning in health["warnings"]), health
            assert time.monotonic() - started < 5.0
    finally:
        stop(server.process)
    assert "Traceback" not in server.output(), server.output()
