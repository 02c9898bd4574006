"""The warm process: commands it answers give exactly the answers a cold process gives, reach
the store their caller names at the moment they run, and never outlive the code they ran.

Each case here was a fault of the earlier warm process (which kept the store open between
commands and was keyed by folder times): commits acknowledged into a deleted home or over a
restored backup and lost, a call answered from another database, old code answering after an
upgrade in place, hooks queued past their deadline."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from planledger.clients.hooks import guard
from planledger.clients.warm import control, identity
from planledger.service import open_planledger
from tests.e2e.hook_events import HookRun
from tests.e2e.test_cli import planledger_command
from tests.e2e.warm_support import started_warm_process, wait_for, warm_status

PLAN = {"plan": [{"step": "Read the failing test", "status": "in_progress"}]}
BAD = {"plan": [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]}


def plan(step: str) -> str:
    return json.dumps({"plan": [{"step": step, "status": "in_progress"}]})


def run(
    home: Path,
    *args: str,
    stdin: str = "",
    warm: bool = True,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PLANLEDGER_HOME": str(home), "PLANLEDGER_WARM_IDLE": "120"}
    environment.pop("PLANLEDGER_DATABASE_URL", None)
    environment["PLANLEDGER_NO_WARM"] = "" if warm else "1"
    return subprocess.run(
        [planledger_command(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**environment, **(env or {})},
        cwd=cwd,
        timeout=60,
    )


def served() -> int:
    status = warm_status()
    assert status is not None, "the warm process went away"
    count: int = status["served"]
    return count


def test_warm_answers_equal_cold_ones(tmp_path: Path) -> None:
    started_warm_process()
    home = tmp_path / "home"
    before = served()
    assert run(home, "session", "open", "s1").returncode == 0
    first = run(home, "plan", "update", "s1", "--json", stdin=json.dumps(PLAN))
    assert first.returncode == 0, first.stderr

    work = tmp_path / "work"
    work.mkdir()
    (work / "bad.json").write_text(json.dumps(BAD))
    answers = [
        run(home, "plan", "update", "s1", "--json", stdin=plan("Fix it")),
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
    assert served() >= before + 8  # every one of them was answered warm

    cold = run(home, "plan", "update", "s1", "bad.json", cwd=work, warm=False)
    assert (cold.returncode, cold.stdout) == (answers[1].returncode, answers[1].stdout)
    shown = [run(home, "plan", "show", "s1", warm=warm) for warm in (True, False)]
    assert shown[0].stdout == shown[1].stdout and "Fix it" in shown[0].stdout


def test_a_deleted_and_recreated_home_keeps_every_acknowledged_commit(tmp_path: Path) -> None:
    started_warm_process()
    home = tmp_path / "home"
    assert run(home, "session", "open", "s1").returncode == 0
    assert run(home, "plan", "update", "s1", stdin=plan("before")).returncode == 0
    shutil.rmtree(home)
    home.mkdir()
    before = served()
    assert run(home, "session", "open", "s1").returncode == 0
    acknowledged = []
    for step in ("one", "two", "three"):
        done = run(home, "plan", "update", "s1", "--json", stdin=plan(step))
        assert done.returncode == 0, done.stderr
        acknowledged.append(json.loads(done.stdout)["revision"])
    assert served() >= before + 4
    with open_planledger(f"sqlite:///{home / 'ledger.sqlite3'}", home=None) as ledger:
        history = ledger.history("s1").entries
        committed = [entry.revision for entry in history if entry.kind == "committed"]
    assert committed == acknowledged == [1, 2, 3]


def test_a_restored_backup_is_the_store_later_commands_see(tmp_path: Path) -> None:
    started_warm_process()
    home = tmp_path / "home"
    store = home / "ledger.sqlite3"
    assert run(home, "session", "open", "s1").returncode == 0
    assert run(home, "plan", "update", "s1", stdin=plan("kept")).returncode == 0
    backup = tmp_path / "backup.sqlite3"
    with closing(sqlite3.connect(store)) as source, closing(sqlite3.connect(backup)) as target:
        source.backup(target)
    for step in ("undone", "undone too"):
        assert run(home, "plan", "update", "s1", stdin=plan(step)).returncode == 0
    # Between commands nothing holds the store open, so its write-ahead log is gone and a
    # restore with `mv` is safe (the earlier warm process kept it, and the next reader replayed
    # the old log over the restored file).
    wal = store.with_name(store.name + "-wal")
    wait_for(lambda: not wal.exists(), "a process still holds the store open between commands")
    os.replace(backup, store)

    after = run(home, "plan", "update", "s1", "--json", stdin=plan("after the restore"))
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout)["revision"] == 2
    for warm in (True, False):
        shown = json.loads(run(home, "plan", "show", "s1", "--json", warm=warm).stdout)
        assert (shown["revision"], shown["steps"][0]["title"]) == (2, "after the restore")
    verified = run(home, "verify", "--json", warm=False)
    assert verified.returncode == 0 and json.loads(verified.stdout)["ok"], verified.stdout


def test_each_command_uses_the_database_its_caller_names(tmp_path: Path) -> None:
    started_warm_process()
    home = tmp_path / "home"
    other = f"sqlite:///{tmp_path / 'other.sqlite3'}"
    assert run(home, "--database", other, "session", "open", "x").returncode == 0
    named = {"PLANLEDGER_DATABASE_URL": other}
    done = run(home, "plan", "update", "x", "--json", stdin=plan("there"), env=named)
    assert done.returncode == 0, done.stderr
    assert run(home, "plan", "show", "x").returncode == 2  # not in the default store
    assert run(home, "session", "open", "x").returncode == 0  # the default store's own x
    assert run(home, "plan", "update", "x", stdin=plan("here")).returncode == 0
    there = json.loads(run(home, "--database", other, "plan", "show", "x", "--json").stdout)
    here = json.loads(run(home, "plan", "show", "x", "--json").stdout)
    assert (there["steps"][0]["title"], here["steps"][0]["title"]) == ("there", "here")


def test_an_upgrade_in_place_is_answered_by_the_new_code(tmp_path: Path) -> None:
    """The code is a copy on PYTHONPATH, edited in place (its folders' times unchanged)."""
    source = tmp_path / "src"
    for package in identity.PACKAGES:
        shutil.copytree(
            Path(identity.__file__).parents[3] / package,
            source / package,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    with (source / "planledger" / "__init__.py").open("a") as file:
        file.write("# a copy of its own\n")  # not the installation's key: a process of its own
    copy = {"PYTHONPATH": str(source)}
    home = tmp_path / "home"
    old_key = identity.code_key(source)
    try:
        first = run(home, "plan", "show", "nosuch", env=copy)
        assert first.stderr.startswith("planledger: error: session_not_found"), first.stderr
        wait_for(lambda: warm_status(old_key), "no warm process started for the copy")
        again = run(home, "plan", "show", "nosuch", env=copy)
        assert again.stderr == first.stderr

        exits = source / "planledger" / "clients" / "exits.py"
        folder_time = exits.parent.stat().st_mtime_ns
        text = exits.read_text().replace('"planledger: error:', '"planledger: error (new code):')
        with exits.open("r+") as file:  # in place, as an installer overwriting a file
            file.write(text)
        assert exits.parent.stat().st_mtime_ns == folder_time
        new_key = identity.code_key(source)
        assert new_key != old_key
        upgraded = run(home, "plan", "show", "nosuch", env=copy)
        assert upgraded.stderr.startswith("planledger: error (new code): session_not_found")
        wait_for(lambda: warm_status(new_key), "no warm process started for the new code")
        warm_answer = run(home, "plan", "show", "nosuch", env=copy)
        assert warm_answer.stderr == upgraded.stderr
        assert (warm_status(new_key) or {}).get("served", 0) >= 2
    finally:
        for key in (old_key, identity.code_key(source)):
            control.ask(identity.socket_path(key), "stop")


def hold_store(store: Path) -> tuple[threading.Event, threading.Thread]:
    """An exclusive transaction on `store` until the returned event is set."""
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        connection = sqlite3.connect(store, isolation_level=None)
        connection.execute("BEGIN EXCLUSIVE")
        locked.set()
        release.wait(60)
        connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    assert locked.wait(10)
    return release, holder


def test_hooks_at_once_each_keep_their_deadline_and_the_warm_process_lives_on(
    tmp_path: Path,
) -> None:
    status = started_warm_process()
    home = tmp_path / "home"
    assert run(home, "session", "open", "claude-s").returncode == 0
    event = {
        "session_id": "s",
        "hook_event_name": "PreToolUse",
        "tool_name": "TodoWrite",
        "tool_use_id": "toolu_1",
        "tool_input": {"todos": [{"content": "a", "status": "in_progress", "activeForm": "A"}]},
    }
    deadline = {"PLANLEDGER_HOOK_DEADLINE": "1"}

    def hook() -> HookRun:
        started = time.monotonic()
        done = run(home, "hook", "claude-code", stdin=json.dumps(event), env=deadline)
        return HookRun(done.returncode, done.stdout, done.stderr, time.monotonic() - started)

    release, holder = hold_store(home / "ledger.sqlite3")
    try:
        with ThreadPoolExecutor(6) as pool:
            runs = list(pool.map(lambda _: hook(), range(6)))
    finally:
        release.set()
        holder.join()
    for each in runs:
        assert (each.code, each.stdout) == (0, ""), each
        assert "gave up after 1 s" in each.stderr
        assert each.seconds < 4.0, each  # the deadline, not six deadlines one after another
    assert (warm_status() or {}).get("pid") == status["pid"]  # it never exits with a hook
    assert run(home, "hook", "claude-code", stdin=json.dumps(event)).returncode == 0
    shown = json.loads(run(home, "plan", "show", "claude-s", "--json").stdout)
    assert shown["revision"] == 1


def test_time_a_call_waited_counts_against_its_hook_deadline() -> None:
    try:
        guard.call_started = time.monotonic() - 0.75
        assert 0.2 < guard.time_left(1.0) <= 0.25
        assert guard.time_left(0.5) == 0.001  # past it already: give up at once
    finally:
        guard.call_started = None
    assert guard.time_left(1.0) == 1.0


def test_a_huge_event_gets_the_same_answer_warm_and_cold(tmp_path: Path) -> None:
    started_warm_process()
    home = tmp_path / "home"
    todo = {"content": "x" * (14 * 1024 * 1024), "status": "in_progress", "activeForm": "X"}
    event = {
        "session_id": "big",
        "hook_event_name": "PreToolUse",
        "tool_name": "TodoWrite",
        "tool_use_id": "toolu_big",
        "tool_input": {"todos": [todo]},
    }
    answers = [
        run(home, "hook", "claude-code", stdin=json.dumps(event), warm=warm)
        for warm in (False, True)
    ]
    assert answers[0].returncode == answers[1].returncode == 0
    assert answers[0].stdout == answers[1].stdout
    assert answers[0].stderr == answers[1].stderr


@pytest.fixture
def own(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A temporary folder of its own (short: a socket's path must fit 108 bytes): the warm
    processes started with it are this test's, stopped after it."""
    folder = tempfile.mkdtemp(prefix="w")
    env = {"TMPDIR": folder}
    yield env
    run(tmp_path / "home", "warm", "stop", env=env)
    shutil.rmtree(folder, ignore_errors=True)


def warm_processes(home: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    found = run(home, "warm", "status", "--json", env=env)
    assert found.returncode == 0, found.stderr
    processes: list[dict[str, Any]] = json.loads(found.stdout)["warm_processes"]
    return processes


def test_warm_status_and_stop(tmp_path: Path, own: dict[str, str]) -> None:
    home = tmp_path / "home"
    assert "no warm process is running" in run(home, "warm", "status", env=own).stdout
    assert run(home, "session", "open", "s1", env=own).returncode == 0  # cold; starts one
    [status] = wait_for(lambda: warm_processes(home, own), "no warm process started")
    assert status["current"] and status["key"] == identity.code_key()
    assert run(home, "plan", "update", "s1", stdin=plan("a"), env=own).returncode == 0
    [status] = warm_processes(home, own)
    assert status["served"] >= 2
    stopped = run(home, "warm", "stop", env=own)
    assert stopped.stdout.strip() == "stopped 1 warm process(es)"
    wait_for(lambda: not warm_processes(home, own), "warm stop left it running")
    assert run(home, "plan", "update", "s1", stdin=plan("b"), env=own).returncode == 0


def test_it_leaves_when_its_socket_is_gone_and_removes_only_its_own(
    tmp_path: Path, own: dict[str, str]
) -> None:
    home = tmp_path / "home"
    assert run(home, "session", "open", "s1", env=own).returncode == 0
    [status] = wait_for(lambda: warm_processes(home, own), "no warm process started")
    path = Path(own["TMPDIR"]) / f"planledger-{os.getuid()}" / f"{status['key']}.sock"
    path.unlink()
    path.write_text("another process's socket")  # stands in for a newer process's socket

    def gone() -> bool:
        try:
            os.kill(status["pid"], 0)
        except ProcessLookupError:
            return True
        return False

    wait_for(gone, "it did not leave when its socket was removed", seconds=15)
    assert path.read_text() == "another process's socket"
    path.unlink()
    assert run(home, "plan", "update", "s1", stdin=plan("a"), env=own).returncode == 0
    wait_for(lambda: warm_processes(home, own), "no new warm process started")


def test_a_killed_warm_process_leaves_its_caller_an_honest_answer(
    tmp_path: Path, own: dict[str, str]
) -> None:
    home = tmp_path / "home"
    assert run(home, "session", "open", "s1", env=own).returncode == 0
    [status] = wait_for(lambda: warm_processes(home, own), "no warm process started")
    release, holder = hold_store(home / "ledger.sqlite3")
    try:
        waiting = subprocess.Popen(
            [planledger_command(), "plan", "update", "s1"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PLANLEDGER_HOME": str(home), "PLANLEDGER_NO_WARM": "", **own},
        )
        assert waiting.stdin is not None
        waiting.stdin.write(plan("a"))
        waiting.stdin.close()
        time.sleep(1.0)  # its child waits on the lock
        children = children_of(status["pid"])
        assert children, "the command is not being run by a child of the warm process"
        for child in children:
            os.kill(int(child), signal.SIGKILL)
        waiting.wait(timeout=30)
        assert waiting.stdout is not None and waiting.stderr is not None
        out, err = waiting.stdout.read(), waiting.stderr.read()
    finally:
        release.set()
        holder.join()
    assert waiting.returncode == 5 and out == ""
    assert "may or may not have taken effect (retry with --proposal-id " in err
    proposal_id = err.split("--proposal-id ")[1].split(")")[0]
    retried = run(
        home, "plan", "update", "s1", "--proposal-id", proposal_id, "--json", stdin=plan("a")
    )
    assert json.loads(retried.stdout)["proposal_id"] == proposal_id
    assert [p["pid"] for p in warm_processes(home, own)] == [status["pid"]]  # it lives on


def test_a_socket_folder_others_can_write_is_never_used(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    assert not identity.private_folder(shared)
    private = tmp_path / "private"
    assert identity.private_folder(private)  # made, owner-only
    assert (private.stat().st_mode & 0o777) == 0o700


def test_the_code_key_follows_content_not_times(tmp_path: Path) -> None:
    for package in identity.PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "module.py").write_text("VALUE = 1\n")
    key = identity.code_key(tmp_path)
    module = tmp_path / "planledger" / "module.py"
    times = module.stat()
    module.write_text("VALUE = 2\n")
    os.utime(module, ns=(times.st_atime_ns, times.st_mtime_ns))
    assert identity.code_key(tmp_path) != key
    module.write_text("VALUE = 1\n")
    os.utime(module, ns=(times.st_atime_ns, times.st_mtime_ns + 10**9))
    assert identity.code_key(tmp_path) == key


def test_a_project_with_packages_of_the_same_names_is_never_imported(
    tmp_path: Path, own: dict[str, str]
) -> None:
    """A warm process (and a plan.json back-fill) started from a project folder that has its own
    `domain` or `planledger` package imports the installed code, not the project's."""
    project = tmp_path / "project"
    for package in identity.PACKAGES:
        (project / package).mkdir(parents=True)
        (project / package / "__init__.py").write_text("raise SystemExit('the project, not us')\n")
    home = tmp_path / "home"
    assert run(home, "session", "open", "s1", cwd=project, env=own).returncode == 0
    wait_for(lambda: warm_processes(home, own), "no warm process started from the project")
    done = run(home, "plan", "update", "s1", "--json", stdin=plan("a"), cwd=project, env=own)
    assert done.returncode == 0, done.stderr


def test_ctrl_c_reaches_the_command_as_it_would_cold(tmp_path: Path, own: dict[str, str]) -> None:
    """A command waiting on its standard input, interrupted: the same answer warm and cold, and
    no child of the warm process is left running it."""
    home = tmp_path / "home"
    assert run(home, "session", "open", "s1", env=own).returncode == 0
    [status] = wait_for(lambda: warm_processes(home, own), "no warm process started")
    answers = []
    for warm in (True, False):
        waiting = subprocess.Popen(
            [planledger_command(), "plan", "update", "s1"],
            stdin=subprocess.PIPE,  # kept open: the command waits for its proposal
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={
                **os.environ,
                "PLANLEDGER_HOME": str(home),
                "PLANLEDGER_NO_WARM": "" if warm else "1",
                **own,
            },
        )
        if warm:
            wait_for(lambda: children_of(status["pid"]), "no child runs the command")
        else:
            time.sleep(2.0)  # past its imports: it waits on its input
        waiting.send_signal(signal.SIGINT)
        waiting.wait(timeout=30)  # its input stays open: only the interruption ends it
        assert waiting.stdin and waiting.stdout and waiting.stderr
        answers.append((waiting.returncode, waiting.stdout.read(), waiting.stderr.read()))
        waiting.stdin.close()
    assert answers[0] == answers[1]
    assert answers[0][0] == 1 and "interrupted" in answers[0][2]
    assert children_of(status["pid"]) == []


def children_of(pid: int) -> list[str]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return found.stdout.split()
