"""The warm process: agents' commands answered by a process that keeps the service open give
exactly the answers a cold process gives, and it goes away when idle."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from planledger.clients import warm
from planledger.clients.warm import socket_path
from tests.e2e.test_cli import planledger_command

PLAN = {"plan": [{"step": "Read the failing test", "status": "in_progress"}]}
BAD = {"plan": [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]}


def run(
    home: Path, *args: str, stdin: str = "", warm: bool = True, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLANLEDGER_HOME": str(home), "PLANLEDGER_WARM_IDLE": "4"}
    env.pop("PLANLEDGER_DATABASE_URL", None)
    if warm:
        env.pop("PLANLEDGER_NO_WARM", None)
    else:
        env["PLANLEDGER_NO_WARM"] = "1"
    return subprocess.run(
        [planledger_command(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )


def warm_processes(home: Path, database: str | None = None) -> list[str]:
    """The warm processes serving this home's store (their socket names it)."""
    saved = os.environ.get("PLANLEDGER_HOME")
    os.environ["PLANLEDGER_HOME"] = str(home)
    try:
        where = str(socket_path(database))
    finally:
        if saved is None:
            del os.environ["PLANLEDGER_HOME"]
        else:
            os.environ["PLANLEDGER_HOME"] = saved
    ps = ["ps", "-ww", "-eo", "pid,args"]
    listing = subprocess.run(ps, capture_output=True, text=True).stdout
    return [
        line for line in listing.splitlines() if "planledger.clients.warm" in line and where in line
    ]


def test_warm_answers_equal_cold_ones_and_it_leaves_when_idle(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert run(home, "session", "open", "s1").returncode == 0
    first = run(home, "plan", "update", "s1", "--json", stdin=json.dumps(PLAN))
    assert first.returncode == 0, first.stderr  # cold, and it starts a warm process
    deadline = time.monotonic() + 20
    while not warm_processes(home):
        assert time.monotonic() < deadline, "no warm process started"
        time.sleep(0.1)

    work = tmp_path / "work"
    work.mkdir()
    (work / "bad.json").write_text(json.dumps(BAD))
    second = {**PLAN, "plan": [{"step": "Fix it", "status": "in_progress"}]}
    answers = [
        run(home, "plan", "update", "s1", "--json", stdin=json.dumps(second)),
        run(home, "plan", "update", "s1", "bad.json", cwd=work),  # a path relative to its cwd
        run(home, "plan", "update", "s1", "--expected-revision", "1", stdin=json.dumps(PLAN)),
        run(home, "plan", "update", "nosuch", stdin=json.dumps(PLAN)),
        run(home, "plan", "update", "s1", stdin="not json"),
    ]
    assert [a.returncode for a in answers] == [0, 3, 4, 2, 2], [a.stderr for a in answers]
    assert json.loads(answers[0].stdout)["revision"] == 2
    assert "multiple_in_progress" in answers[1].stdout
    assert answers[3].stderr.startswith("planledger: error: session_not_found")
    assert len(answers[4].stderr.strip().splitlines()) == 1

    # The same commands cold, on a copy of the store as it was: the same answers.
    history = json.loads(run(home, "plan", "history", "s1", "--json").stdout)["entries"]
    assert [e["kind"] for e in history].count("committed") == 2
    assert [e["kind"] for e in history][-4:] == ["proposed", "rejected", "proposed", "rejected"]
    cold = run(home, "plan", "update", "s1", "bad.json", cwd=work, warm=False)
    assert (cold.returncode, cold.stdout) == (answers[1].returncode, answers[1].stdout)

    todo = {
        "session_id": "x",
        "hook_event_name": "PreToolUse",
        "tool_name": "TodoWrite",
        "tool_use_id": "toolu_1",
        "tool_input": {"todos": [{"content": "a", "status": "in_progress", "activeForm": "A"}]},
    }
    hooked = run(home, "hook", "claude-code", stdin=json.dumps(todo))
    assert (hooked.returncode, hooked.stdout, hooked.stderr) == (0, "", "")
    shown = json.loads(run(home, "plan", "show", "claude-x", "--json").stdout)
    assert shown["revision"] == 1

    deadline = time.monotonic() + 30  # idle for 4 s: it leaves, and takes its socket along
    while warm_processes(home):
        assert time.monotonic() < deadline, "the warm process did not leave"
        time.sleep(0.2)


def test_opening_a_session_starts_the_warm_process_for_its_first_plan_update(
    tmp_path: Path,
) -> None:
    cold_home = tmp_path / "cold"
    assert run(cold_home, "session", "open", "s1", warm=False).returncode == 0
    home = tmp_path / "home"
    opened = run(home, "session", "open", "s1", "--json")
    assert opened.returncode == 0, opened.stderr
    assert json.loads(opened.stdout)["session_id"] == "s1"
    deadline = time.monotonic() + 20
    while not warm_processes(home):
        assert time.monotonic() < deadline, "opening a session started no warm process"
        time.sleep(0.1)
    assert len(warm_processes(home)) == 1
    assert run(home, "session", "open", "s2").returncode == 0  # one answers: none is added
    assert len(warm_processes(home)) == 1
    assert warm_processes(cold_home) == []
    first = run(home, "plan", "update", "s1", "--json", stdin=json.dumps(PLAN))
    assert (first.returncode, json.loads(first.stdout)["revision"]) == (0, 1), first.stderr


def test_no_warm_process_for_postgresql(tmp_path: Path) -> None:
    home = tmp_path / "home"
    url = "postgresql://postgres@127.0.0.1:1/x"
    result = run(home, "--database", url, "plan", "update", "s1", stdin=json.dumps(PLAN))
    assert result.returncode == 5
    assert not warm.enabled(url)
    listing = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True).stdout
    assert url not in listing


def test_a_socket_folder_others_can_write_is_never_used(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    assert not warm.private_folder(shared)
    private = tmp_path / "private"
    assert warm.private_folder(private)  # made, owner-only
    assert (private.stat().st_mode & 0o777) == 0o700
