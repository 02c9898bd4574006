"""A fault campaign against the installed `planledger`: the faults that once lost or misreported
commits, rerun against the current code, counted rather than asserted.

    python bench/fault_campaign.py [--rounds N] [--json FILE] [--scenarios 1,2,3,4,5]

  1 lost commits   warm: a home deleted and re-created, or a backup (SQLite backup API) restored
                   with `mv`, between commands; the commits acknowledged afterwards (exit 0,
                   "committed") are looked for with a cold `plan history --json`.
  2 SIGKILL        `plan update` killed at a random moment (cold CLI: 0-300 ms after it starts,
                   or in its last 300 ms; warm CLI: within the ~0.1 s it takes; the warm
                   process's child running it: 0-25 ms after it is forked, its whole life),
                   each killed call retried with its proposal id: acknowledged-but-lost,
                   doubled proposals, retries answering another decision.
  3 retries        4 writers on one session (SQLite and PostgreSQL), half warm, half cold, each
                   retrying some of its calls (same proposal id and content) while the others
                   commit: a retry must answer the decision recorded for it, never the current plan.
  4 hooks          6-12 `hook claude-code` PreToolUse TodoWrite at once, warm and cold, with the
                   store held locked part of the time, PLANLEDGER_HOOK_DEADLINE=1, and the warm
                   process's children SIGKILLed at random; and a 14 MB event warm and cold.
  5 PG outage      `planledger serve` behind a TCP proxy to PostgreSQL, POSTs in a loop, the
                   proxy cut for 10 s and restored: time and status of every POST, healing, and
                   every 200-acknowledged POST looked for in the store.

Everything runs in a TMPDIR of its own (its own warm processes, stopped at the end) and a
PostgreSQL schema of its own (dropped at the end). The default run (2 rounds) takes about 3
minutes on a 2-core machine. The table counts per scenario; the JSON (default bench/results/
fault_campaign.json) keeps every problem found with the commands and outputs behind it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import statistics
import subprocess
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import common  # puts the repository on sys.path: first of the bench imports
import fault_support
from fault_support import (
    ChildKiller,
    Done,
    Recorded,
    Sandbox,
    StoreLock,
    answer_of,
    children_of,
    codex_plan,
    cold_history,
    finish,
    free_port,
    kill,
    new_id,
    proxy_to,
    run,
    spawn,
    sqlite_backup,
    start_warm,
    stored_topics,
    warm_pids,
    warm_statuses,
)

DEADLINE = 1.0  # PLANLEDGER_HOOK_DEADLINE of scenario 4
OUTAGE_SECONDS = 10.0
SLOW_ANSWER = 6.0  # a POST during the outage answering later than this is counted
CHILD_WINDOW = 0.025  # a warm child runs an update in about 20-40 ms: kills within it
MAX_PROBLEMS = 40  # per row, in the JSON


@dataclass
class Row:
    """One line of the table, with what is behind it."""

    scenario: str
    runs: int = 0
    acknowledged: int = 0
    lost: int = 0
    doubled: int = 0
    wrong_retries: int | None = None
    hook_exits: int | None = None
    worst_seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def problem(self, text: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(text)
        else:
            self.details["problems_left_off"] = self.details.get("problems_left_off", 0) + 1

    def worst(self, seconds: float) -> None:
        self.worst_seconds = max(self.worst_seconds, round(seconds, 3))

    def count(self, key: str, by: int = 1) -> None:
        self.details[key] = self.details.get(key, 0) + by


def update_args(session: str, pid: str, as_json: bool = True, db: str | None = None) -> list[str]:
    args = ["plan", "update", session, "-", "--proposal-id", pid]
    args += ["--json"] if as_json else []
    return ["--database", db, *args] if db else args


def open_session(sandbox: Sandbox, home: Path, session: str, row: Row, **env: str) -> bool:
    done = run(sandbox, ["session", "open", session], sandbox.env(home, warm=False, **env))
    if done.code != 0:
        row.problem(f"setup failed: {done.brief()}")
    return done.code == 0


def history_of(
    sandbox: Sandbox, home: Path, session: str, row: Row, db: str | None = None
) -> Recorded:
    recorded, done = cold_history(sandbox, home, session, db)
    if recorded is None:
        row.problem(f"cold history unreadable: {done.brief()}")
        return Recorded()
    if recorded.gaps():
        row.problem(f"{session}: committed revisions not contiguous: {recorded.revisions}")
    return recorded


# -- 1: commits acknowledged by the warm process, then lost ------------------------------------


def scenario_lost(sandbox: Sandbox, rounds: int) -> list[Row]:
    recreate, restore = Row("1 home re-created, warm"), Row("1 backup restored (mv), warm")
    start_warm()
    for _ in range(rounds * 2):
        cycle_recreate(sandbox, recreate)
        cycle_restore(sandbox, restore)
    return [recreate, restore]


def acknowledged_updates(
    sandbox: Sandbox, home: Path, session: str, label: str, count: int, row: Row
) -> dict[str, int]:
    """`count` warm updates; the acknowledged ones' proposal ids and revisions."""
    acked: dict[str, int] = {}
    for n in range(count):
        pid = new_id(label)
        done = run(
            sandbox,
            update_args(session, pid),
            sandbox.env(home, warm=True),
            codex_plan(f"{label} {n}"),
        )
        row.runs += 1
        row.worst(done.seconds)
        answer = answer_of(done, as_json=True)
        if done.code == 0 and answer and answer[0] == "committed":
            acked[pid] = answer[1]
        else:
            row.problem(f"not acknowledged: {done.brief()}")
    return acked


def check_acked(recorded: Recorded, acked: dict[str, int], row: Row, where: str) -> None:
    row.acknowledged += len(acked)
    for pid, revision in acked.items():
        decision = recorded.decision(pid)
        if decision is None or decision[0] != "committed":
            row.lost += 1
            row.problem(f"{where}: acknowledged {pid} (revision {revision}) not in the store")
        elif decision[1] != revision:
            row.problem(f"{where}: {pid} acknowledged as revision {revision}, stored {decision}")
    row.doubled += len(recorded.doubled())


def served_now() -> dict[int, int]:
    """Commands served so far by each warm process of the sandbox (a status call counts)."""
    return {int(status["pid"]): int(status.get("served", 0)) for status in warm_statuses()}


def served_since(before: dict[int, int]) -> int:
    """Commands the warm processes served since `before` (less this call's status request)."""
    now = served_now()
    return sum(count - before.get(pid, 0) for pid, count in now.items()) - len(now)


def cycle_recreate(sandbox: Sandbox, row: Row) -> None:
    home, session = sandbox.home("recreate"), "s1"
    if not open_session(sandbox, home, session, row):
        return
    before = served_now()
    acknowledged_updates(sandbox, home, session, "before", 1, row)
    shutil.rmtree(home)
    home.mkdir()
    opened = run(sandbox, ["session", "open", session], sandbox.env(home, warm=True))
    if opened.code != 0:
        row.problem(f"open after re-creating the home: {opened.brief()}")
    acked = acknowledged_updates(sandbox, home, session, "after", 4, row)
    row.count("served_warm", served_since(before))
    check_acked(history_of(sandbox, home, session, row), acked, row, "re-created home")


def cycle_restore(sandbox: Sandbox, row: Row) -> None:
    home, session = sandbox.home("restore"), "s1"
    store = home / "ledger.sqlite3"
    if not open_session(sandbox, home, session, row):
        return
    before = served_now()
    kept = acknowledged_updates(sandbox, home, session, "kept", 1, row)
    backup = home.parent / f"{home.name}.backup.sqlite3"
    sqlite_backup(store, backup)
    undone = acknowledged_updates(sandbox, home, session, "undone", 2, row)
    wal = store.with_name(store.name + "-wal")
    waited = time.monotonic()
    while wal.exists() and time.monotonic() - waited < 5.0:
        time.sleep(0.05)
    if wal.exists():
        row.problem(f"{wal} still there 5 s after the last command returned (restored anyway)")
    row.details["wal_wait_max_s"] = max(
        row.details.get("wal_wait_max_s", 0.0), round(time.monotonic() - waited, 3)
    )
    os.replace(backup, store)
    acked = acknowledged_updates(sandbox, home, session, "restored", 4, row)
    row.count("served_warm", served_since(before))
    recorded = history_of(sandbox, home, session, row)
    check_acked(recorded, acked, row, "restored backup")
    first = next(iter(acked.values()), None)
    if first is not None and first != len(kept) + 1:
        row.problem(f"first commit after the restore is revision {first}, not {len(kept) + 1}")
    for pid in undone:
        if recorded.decision(pid) is not None:
            row.problem(f"{pid}, committed after the backup, is in the restored store")
    verified = run(sandbox, ["verify", "--json"], sandbox.env(home, warm=False))
    if verified.code != 0:
        row.problem(f"verify after the restore: {verified.brief()}")


# -- 2: SIGKILL mid `plan update` ---------------------------------------------------------------


@dataclass
class Killed:
    pid: str
    content: str
    delay: float
    first: Done
    hit: int
    stored: list[str] = field(default_factory=list)  # its events when the kill was over
    retry: Done | None = None


def scenario_sigkill(sandbox: Sandbox, rounds: int) -> list[Row]:
    rows = []
    for mode in ("cold CLI", "warm CLI", "warm child"):
        row = Row(f"2 SIGKILL {mode}")
        for _ in range(rounds):
            sigkill_round(sandbox, mode, row, kills=8)
        rows.append(row)
    return rows


def sigkill_round(sandbox: Sandbox, mode: str, row: Row, kills: int) -> None:
    warm = mode != "cold CLI"
    home, session = sandbox.home("kill"), "k1"
    if not open_session(sandbox, home, session, row):
        return
    env = sandbox.env(home, warm=warm)
    if warm:
        start_warm()
    times = [
        run(sandbox, update_args(session, new_id("t")), env, codex_plan(f"t{n}")).seconds
        for n in range(3)
    ]
    took = statistics.median(times)
    row.details["update_s"] = round(took, 3)
    # Delays of 0-300 ms, within the time an update takes (a warm one is done in less); half
    # the cold kills land near the end of a cold update, not in its imports.
    window = min(0.3, took)
    offset = max(0.0, took - 0.3) if not warm else 0.0
    calls: list[Killed] = []
    for n in range(kills):
        pid, content = new_id("k"), codex_plan(f"killed {n} {uuid.uuid4().hex[:6]}")
        delay = random.uniform(0.0, window) + (offset if n % 2 else 0.0)
        parents = warm_pids() if mode == "warm child" else set()
        earlier = set(children_of(parents))
        args = update_args(session, pid)
        started = time.monotonic()
        process = spawn(sandbox, args, content, env)
        if mode == "warm child":  # the delay counts from the child's start, not the caller's
            victims = child_started(parents, earlier, process)
            delay = random.uniform(0.0, CHILD_WINDOW)
            time.sleep(delay)
            hit = kill(victims)
        else:
            time.sleep(delay)
            hit = kill([process.pid]) if process.poll() is None else 0
        first = finish(process, args, started)
        call = Killed(pid, content, round(delay, 3), first, hit)
        call.stored = stored_topics(home / "ledger.sqlite3", pid)
        call.retry = run(sandbox, args, env, content)
        calls.append(call)
        row.runs += 1
        row.count("kills_landed", 1 if hit else 0)
        row.worst(first.seconds)
        row.worst(call.retry.seconds)
    judge_killed(sandbox, home, session, calls, row)


def child_started(parents: set[int], earlier: set[int], caller: subprocess.Popen[str]) -> list[int]:
    """The warm processes' new children (not in `earlier`: a status request's child lingers)
    once one is there, or [] if the caller ended first or none came within 3 s."""
    deadline = time.monotonic() + 3.0
    while caller.poll() is None and time.monotonic() < deadline:
        if found := [pid for pid in children_of(parents) if pid not in earlier]:
            return found
        time.sleep(0.001)
    return []


def judge_killed(sandbox: Sandbox, home: Path, session: str, calls: list[Killed], row: Row) -> None:
    recorded = history_of(sandbox, home, session, row)
    row.wrong_retries = row.wrong_retries or 0
    for call in calls:
        first = answer_of(call.first, as_json=True)
        recorded_as = recorded.decision(call.pid)
        if call.first.code == 0 and first and first[0] == "committed":
            row.acknowledged += 1
            if recorded_as is None or recorded_as[0] != "committed":
                row.lost += 1
                row.problem(f"acknowledged, not stored: {call.first.brief()}")
        elif call.first.code not in (-9, 5):
            row.problem(f"killed call answered unexpectedly: {call.first.brief()}")
        if call.first.code == 5:
            row.count("exit_5_may_or_may_not")
        if call.first.code is not None and call.first.code < 0:
            row.count("killed_before_answer")
        if call.first.code != 0:
            outcome = "+".join(call.stored) or "nothing"
            row.count(f"killed, then stored: {outcome}")
        assert call.retry is not None
        retried = answer_of(call.retry, as_json=True)
        if retried is None or recorded_as is None or retried != recorded_as:
            row.wrong_retries += 1
            row.problem(
                f"retry of {call.pid} (delay {call.delay}s, first exit {call.first.code}) "
                f"answered {retried}, recorded {recorded_as}: {call.retry.brief()}"
            )
    doubled = recorded.doubled()
    row.doubled += len(doubled)
    if doubled:
        row.problem(f"proposal ids recorded twice: {doubled}")
    if undecided := recorded.undecided():
        row.problem(f"proposed but never decided: {undecided}")
    verified = run(sandbox, ["verify", "--json"], sandbox.env(home, warm=False))
    if verified.code != 0:
        row.problem(f"verify: {verified.brief()}")


# -- 3: retries under concurrent writers --------------------------------------------------------


@dataclass
class Call:
    writer: int
    pid: str
    retry: bool
    as_json: bool
    done: Done


def scenario_retries(sandbox: Sandbox, rounds: int, postgres: str | None) -> list[Row]:
    rows = []
    for store in ("sqlite", "postgres"):
        row = Row(f"3 retries, 4 writers, {store}")
        row.wrong_retries = 0
        for _ in range(rounds):
            if store == "sqlite":
                retries_round(sandbox, row, None)
            elif postgres:
                with schema(postgres, "fc_retries") as url:
                    retries_round(sandbox, row, url)
        rows.append(row)
    return rows


def retries_round(sandbox: Sandbox, row: Row, db: str | None) -> None:
    home, session = sandbox.home("retry"), "r1"
    extra = {"PLANLEDGER_DATABASE_URL": db} if db else {}
    if not open_session(sandbox, home, session, row, **extra):
        return
    start_warm()
    calls: list[Call] = []
    lock = threading.Lock()

    def writer(index: int) -> None:
        env = sandbox.env(home, warm=index % 2 == 0, **extra)
        mine: list[tuple[str, str]] = []
        for n in range(5):
            pid = new_id(f"w{index}")
            content = codex_plan(f"writer {index} call {n} {pid}", valid=random.random() > 0.2)
            todo = [(pid, content, False)]
            if mine and random.random() < 0.6:  # an earlier call, after others committed
                todo.append((*random.choice(mine), True))
            if random.random() < 0.3:  # this one again, at once
                todo.append((pid, content, True))
            mine.append((pid, content))
            for p, c, is_retry in todo:
                as_json = random.random() < 0.5
                done = run(sandbox, update_args(session, p, as_json), env, c)
                with lock:
                    calls.append(Call(index, p, is_retry, as_json, done))

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(writer, range(4)))
    recorded = history_of(sandbox, home, session, row, db)
    judge_retries(calls, recorded, row)


def judge_retries(calls: list[Call], recorded: Recorded, row: Row) -> None:
    positions: dict[str, Any] = {}
    for call in calls:
        if call.as_json and not call.retry:
            with contextlib.suppress(ValueError, KeyError, TypeError):
                positions[call.pid] = json.loads(call.done.stdout)["store_position"]
    for call in calls:
        row.runs += 1
        row.worst(call.done.seconds)
        answer = answer_of(call.done, call.as_json)
        recorded_as = recorded.decision(call.pid)
        if call.done.code == 5:
            row.count("exit_5_unavailable")
        if call.as_json and answer is not None:
            with contextlib.suppress(ValueError, KeyError, TypeError):
                if json.loads(call.done.stdout)["proposal_id"] != call.pid:
                    row.problem(f"answer names another proposal: {call.done.brief()}")
        if not call.retry:
            if answer and answer[0] == "committed" and call.done.code == 0:
                row.acknowledged += 1
                if recorded_as is None or recorded_as[0] != "committed":
                    row.lost += 1
                    row.problem(f"acknowledged, not stored: {call.done.brief()}")
            if answer is not None and answer != recorded_as:
                row.count("wrong_first_answers")
                row.problem(f"first answer {answer}, recorded {recorded_as}: {call.done.brief()}")
            elif answer is None and call.done.code != 5:
                row.problem(f"no decision answered: {call.done.brief()}")
            continue
        row.count("retries")
        if recorded_as is not None and recorded_as[0] == "rejected":
            row.count("retries_of_rejected")
        if call.as_json and answer is not None:
            with contextlib.suppress(ValueError, KeyError, TypeError):
                decided = json.loads(call.done.stdout)
                if decided["current_revision"] != decided["revision"]:
                    row.count("json_retries_after_the_plan_moved")
                first = positions.get(call.pid)
                if first is not None and decided.get("store_position") != first:
                    row.count("json_retries_store_position_differs")
                    row.details["store_position_example"] = (
                        f"{call.pid}: first answer {first}, retry {decided.get('store_position')}"
                    )
        if answer is None or answer != recorded_as:
            assert row.wrong_retries is not None
            row.wrong_retries += 1
            row.problem(
                f"retry ({'json' if call.as_json else 'text'}) answered {answer}, "
                f"recorded {recorded_as}: {call.done.brief()}"
            )
    doubled = recorded.doubled()
    row.doubled += len(doubled)
    if doubled:
        row.problem(f"proposal ids recorded twice: {doubled}")


# -- 4: hooks under a locked store, killed children, a deadline ---------------------------------


def todo_event(session: str, label: str) -> dict[str, Any]:
    items = [(f"{label} read", "completed"), (f"{label} fix", "in_progress")]
    items.append((f"{label} test", "pending"))
    return {
        "session_id": session,
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": "/work/project",
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "TodoWrite",
        "tool_input": {
            "todos": [{"content": c, "status": s, "activeForm": c.title()} for c, s in items]
        },
        "tool_use_id": new_id("toolu"),
    }


def scenario_hooks(sandbox: Sandbox, rounds: int) -> list[Row]:
    rows = [Row("4 hooks at once, warm"), Row("4 hooks at once, cold")]
    for row in rows:
        row.hook_exits = 0
    home = sandbox.home("hooks")
    if not open_session(sandbox, home, "claude-h", rows[0]):
        return rows
    silent: dict[str, Row] = {}
    # Each round: warm, locked and killed; warm, killed; warm, locked; cold, locked.
    batches = [(True, True, True), (True, False, True), (True, True, False), (False, True, False)]
    for _ in range(rounds):
        for warm, locked, killing in batches:
            hook_batch(sandbox, home, (warm, locked, killing), rows[0 if warm else 1], silent)
    recorded = history_of(sandbox, home, "claude-h", rows[0])
    for tool_use_id, row in silent.items():
        row.acknowledged += 1
        if not recorded.committed(tool_use_id):
            row.lost += 1
            row.problem(f"hook {tool_use_id} answered nothing (committed) but is not stored")
    rows[0].doubled += len(recorded.doubled())
    for row in rows:
        row.details["worst_over_deadline"] = round(row.worst_seconds / DEADLINE, 2)
        row.details["median_s"] = round(statistics.median(row.details.get("seconds", [0])), 3)
    rows.append(huge_event(sandbox, rounds))
    return rows


def hook_batch(
    sandbox: Sandbox,
    home: Path,
    faults: tuple[bool, bool, bool],
    row: Row,
    silent: dict[str, Row],
) -> None:
    """6-12 hooks at once; `faults`: (warm, the store locked part of the time, the warm
    process's children killed at random)."""
    warm, locked, killing = faults
    if warm:
        start_warm()
    size = random.randint(6, 12)
    env = sandbox.env(home, warm=warm, PLANLEDGER_HOOK_DEADLINE=str(int(DEADLINE)))
    events = [todo_event("h", f"hook {uuid.uuid4().hex[:6]}") for _ in range(size)]
    store = home / "ledger.sqlite3"

    def hook(event: dict[str, Any]) -> Done:
        return run(sandbox, ["hook", "claude-code"], env, json.dumps(event), timeout=60)

    with contextlib.ExitStack() as stack:
        if locked:
            stack.enter_context(StoreLock(store, random.uniform(0, 0.5), random.uniform(0.5, 2.5)))
        killer = stack.enter_context(ChildKiller()) if killing else None
        with ThreadPoolExecutor(size) as pool:
            answers = list(pool.map(hook, events))
    row.count("batches")
    row.count("batches_locked", int(locked))
    if killer is not None:
        row.count("children_killed", killer.kills)
    for event, done in zip(events, answers, strict=True):
        row.runs += 1
        if done.seconds > row.worst_seconds:
            row.details["worst_hook"] = f"{faults} (warm, locked, killing): {done.brief()}"
        row.worst(done.seconds)
        row.details.setdefault("seconds", []).append(round(done.seconds, 3))
        if done.code != 0:
            assert row.hook_exits is not None
            row.hook_exits += 1
            row.problem(f"hook exit {done.code}: {done.brief()}")
        if done.stdout.strip():
            row.problem(f"hook answered a valid list: {done.brief()}")
        if done.code == 0 and not done.stdout and not done.stderr:
            silent[str(event["tool_use_id"])] = row
        for line in done.stderr.strip().splitlines():
            kind = (
                "gave_up_at_deadline"
                if "gave up" in line
                else "warm_gave_no_answer"
                if "no answer in time" in line
                else "other_stderr"
            )
            row.count(kind)
            if kind == "other_stderr":
                row.problem(f"hook stderr: {line[:300]}")


def huge_event(sandbox: Sandbox, rounds: int) -> Row:
    row = Row("4 hook, 14 MB event")
    row.hook_exits = 0
    home = sandbox.home("huge")
    event = todo_event("big", "huge")
    event["tool_input"]["todos"][1]["content"] = "x" * (14 * 1024 * 1024)
    text = json.dumps(event)
    for _ in range(rounds):
        answers = []
        for warm in (False, True):
            if warm:
                start_warm()
            done = run(sandbox, ["hook", "claude-code"], sandbox.env(home, warm=warm), text)
            answers.append(done)
            row.runs += 1
            row.worst(done.seconds)
            row.details.setdefault("seconds", []).append(
                {"warm": warm, "s": round(done.seconds, 3), "exit": done.code}
            )
            if done.code != 0:
                row.hook_exits += 1
        cold, warm_done = answers
        row.details["answer"] = {"stdout": cold.stdout[:300], "stderr": cold.stderr[:300]}
        if (cold.code, cold.stdout, cold.stderr) != (
            warm_done.code,
            warm_done.stdout,
            warm_done.stderr,
        ):
            row.count("different_answers")
            row.problem(f"cold and warm differ: cold {cold.brief()} / warm {warm_done.brief()}")
    return row


# -- 5: a PostgreSQL outage under the HTTP server -----------------------------------------------


@contextlib.contextmanager
def schema(base: str, tag: str) -> Iterator[str]:
    name = f"{tag}_{uuid.uuid4().hex[:10]}"
    common.create_schema(base, name)
    try:
        yield f"{base}?schema={name}"
    finally:
        common.drop_schema(base, name)


@dataclass
class Post:
    pid: str
    phase: str
    at: float
    status: int | None
    seconds: float
    body: str


def scenario_outage(sandbox: Sandbox, rounds: int, postgres: str) -> list[Row]:
    row = Row("5 PG outage under serve")
    row.details["outages"] = []
    for _ in range(rounds):
        with schema(postgres, "fc_outage") as url, proxy_to(postgres) as proxy:
            outage_round(sandbox, row, url, proxy.url(url), proxy.cut, proxy.restore)
    return [row]


def outage_round(
    sandbox: Sandbox,
    row: Row,
    url: str,
    proxied: str,
    cut: Callable[[], None],
    restore: Callable[[], None],
) -> None:
    import httpx

    home = sandbox.home("serve")
    port = free_port()
    log = home / "serve.log"
    env = sandbox.env(home, warm=False, PLANLEDGER_DATABASE_URL=proxied)
    with log.open("wb") as sink:
        server = subprocess.Popen(
            [sandbox.command, "serve", "--port", str(port)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
        )
    base = f"http://127.0.0.1:{port}"
    posts: list[Post] = []
    stop = threading.Event()
    outage: dict[str, Any] = {}
    try:
        if not wait_healthy(base, server, 60.0):
            row.problem(f"server not healthy in 60 s: {log.read_text()[-1500:]}")
            return
        created = httpx.post(f"{base}/sessions", json={"session_id": "o1"}, timeout=30)
        if created.status_code != 201:
            row.problem(f"POST /sessions: {created.status_code} {created.text[:300]}")
            return
        origin = time.monotonic()

        def poster(index: int) -> None:
            with httpx.Client(base_url=base, timeout=60.0) as client:
                while not stop.is_set():
                    pid = new_id(f"p{index}")
                    body = {**json.loads(codex_plan(f"post {pid}")), "proposal_id": pid}
                    started = time.monotonic()
                    try:
                        response = client.post("/sessions/o1/plan", json=body)
                        status: int | None = response.status_code
                        text = response.text[:300]
                    except httpx.HTTPError as error:
                        status, text = None, f"{type(error).__name__}: {error}"
                    seconds = time.monotonic() - started
                    posts.append(Post(pid, "", started - origin, status, seconds, text))
                    if status != 200:
                        time.sleep(0.1)

        threads = [threading.Thread(target=poster, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        time.sleep(3.0)
        cut()
        outage["cut_at"] = round(time.monotonic() - origin, 3)
        time.sleep(OUTAGE_SECONDS)
        restore()
        outage["restored_at"] = round(time.monotonic() - origin, 3)
        time.sleep(8.0)
        stop.set()
        for thread in threads:
            thread.join(90)
        judge_outage(sandbox, home, url, posts, outage, row)
    finally:
        stop.set()
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        output = log.read_text(errors="replace")
        if "Traceback" in output:
            row.problem(f"server log has a traceback: {output[-1500:]}")


def wait_healthy(base: str, server: subprocess.Popen[bytes], timeout: float) -> bool:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and server.poll() is None:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{base}/healthz", timeout=2.0).status_code == 200:
                return True
        time.sleep(0.2)
    return False


def judge_outage(
    sandbox: Sandbox,
    home: Path,
    url: str,
    posts: list[Post],
    outage: dict[str, Any],
    row: Row,
) -> None:
    cut_at, restored_at = float(outage["cut_at"]), float(outage["restored_at"])
    for p in posts:  # by when it ran: ended before the cut, overlapped the outage, or after
        ended = p.at + p.seconds
        p.phase = "before" if ended < cut_at else "after" if p.at >= restored_at else "outage"
    during = [p for p in posts if p.phase == "outage"]
    outage["posts_during"] = [
        {"status": p.status, "s": round(p.seconds, 3), "at": round(p.at, 2)} for p in during
    ]
    for p in during:
        if p.status == 200 and p.at + p.seconds < restored_at:
            row.problem(f"POST at {p.at:.1f}s answered 200 while the database was cut")
    healed = [
        p.at + p.seconds - restored_at for p in posts if p.status == 200 and p.phase != "before"
    ]
    healed = [seconds for seconds in healed if seconds >= 0]
    outage["first_200_after_restore_s"] = round(min(healed), 3) if healed else None
    late = [p for p in posts if p.phase == "after" and p.at > restored_at + 5 and p.status != 200]
    outage["non_200_later_than_5s_after_restore"] = len(late)
    outage["statuses"] = {
        phase: dict(sorted(_tally(p.status for p in posts if p.phase == phase).items()))
        for phase in ("before", "outage", "after")
    }
    row.details["outages"].append(outage)
    if not healed:
        row.problem("no POST succeeded after the proxy came back")
    for p in late[:5]:
        row.problem(
            f"{p.at:.1f}s, {p.at - restored_at:.1f}s after the restore: {p.status} {p.body}"
        )
    for p in posts:
        row.runs += 1
        if p.phase == "outage":
            row.worst(p.seconds)
        if p.seconds > SLOW_ANSWER:
            row.count("answers_over_6s")
            row.problem(f"POST at {p.at:.1f}s ({p.phase}) took {p.seconds:.1f}s: {p.status}")
        if p.status is not None and p.status >= 500 and p.status != 503:
            row.count("5xx_other_than_503")
            row.problem(f"POST at {p.at:.1f}s ({p.phase}): {p.status} {p.body}")
        if p.status is None:
            row.count("transport_errors")
            row.problem(f"POST at {p.at:.1f}s ({p.phase}): no HTTP answer: {p.body}")
    recorded = history_of(sandbox, home, "o1", row, url)
    for p in posts:
        if p.status == 200:
            row.acknowledged += 1
            if not recorded.committed(p.pid):
                row.lost += 1
                row.problem(f"200-acknowledged {p.pid} (at {p.at:.1f}s) not in the store")
        elif p.status == 503 and recorded.committed(p.pid):
            row.count("503_yet_committed")
            row.details["503_yet_committed_example"] = (
                f"{p.pid} at {p.at:.2f}s for {p.seconds:.2f}s (cut at {cut_at:.2f}s): {p.body}"
            )
    row.doubled += len(recorded.doubled())


def _tally(values: Iterator[int | None] | Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[str(value)] = counts.get(str(value), 0) + 1
    return counts


# -- the campaign -------------------------------------------------------------------------------


def print_table(rows: list[Row]) -> None:
    head = ("scenario", "runs", "acked", "lost", "doubled", "wrong retry", "hook exit≠0", "worst s")
    cells = [
        (
            r.scenario,
            str(r.runs),
            str(r.acknowledged),
            str(r.lost),
            str(r.doubled),
            "-" if r.wrong_retries is None else str(r.wrong_retries),
            "-" if r.hook_exits is None else str(r.hook_exits),
            f"{r.worst_seconds:.2f}",
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in [head, *cells]) for i in range(len(head))]
    for line in [head, *cells]:
        print(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(line, widths, strict=True))
            )
        )
    for r in rows:
        shown = {k: v for k, v in r.details.items() if not isinstance(v, list | dict)}
        if shown:
            print(f"  {r.scenario}: {shown}")
        for text in r.problems[:6]:
            print(f"    ! {text[:400]}")
        if len(r.problems) > 6:
            print(f"    ! ... {len(r.problems) - 6} more in the JSON")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.strip().split("\n")[0])
    p.add_argument("--rounds", type=int, default=2, help="repeats of each scenario")
    p.add_argument("--json", type=Path, default=common.RESULTS / "fault_campaign.json")
    p.add_argument("--scenarios", default="1,2,3,4,5", help="which, e.g. 2,4")
    p.add_argument("--postgres", default=common.DEFAULT_POSTGRES, help="server for 3 and 5")
    args = p.parse_args()
    if args.rounds < 1:
        p.error("--rounds must be >= 1")
    args.benchmark, args.database, args.output = "fault_campaign", args.postgres, args.json
    chosen = {s.strip() for s in args.scenarios.split(",") if s.strip()}
    sandbox = Sandbox()
    rows: list[Row] = []
    timings: dict[str, float] = {}
    scenarios: dict[str, Callable[[], list[Row]]] = {
        "1": lambda: scenario_lost(sandbox, args.rounds),
        "2": lambda: scenario_sigkill(sandbox, args.rounds),
        "3": lambda: scenario_retries(sandbox, args.rounds, args.postgres),
        "4": lambda: scenario_hooks(sandbox, args.rounds),
        "5": lambda: scenario_outage(sandbox, args.rounds, args.postgres),
    }
    began = time.monotonic()
    try:
        document = common.result(args)
        for key, scenario in scenarios.items():
            if key not in chosen:
                continue
            started = time.monotonic()
            try:
                rows += scenario()
            except Exception as error:  # a campaign reports a broken scenario and goes on
                crashed = Row(f"{key} (crashed)")
                crashed.problem(f"{type(error).__name__}: {error}")
                crashed.details["traceback"] = traceback.format_exc()
                rows.append(crashed)
            timings[key] = round(time.monotonic() - started, 1)
            print(f"scenario {key} done in {timings[key]} s", flush=True)
    finally:
        sandbox.close()
    print_table(rows)
    misses = fault_support.STATUS_MISSES["count"]
    print(f"total {time.monotonic() - began:.0f} s; load average {os.getloadavg()}")
    print(f"warm status requests that found no warm process, then found it: {misses}")
    document.update(
        scenario_seconds=timings,
        warm_status_misses=fault_support.STATUS_MISSES["count"],
        total_seconds=round(time.monotonic() - began, 1),
        rows=[asdict(r) for r in rows],
    )
    common.write_result(args.json, document)


if __name__ == "__main__":
    main()
