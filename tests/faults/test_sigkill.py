"""SIGKILL of writers under load: 2 servers and 2 CLI loops write to one PostgreSQL schema
while servers and CLI processes are killed and restarted. Afterwards every acknowledged commit
is in the history exactly once, revisions are contiguous, `verify` is clean, and the views
equal a rebuild from the events."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from planledger.service import open_planledger
from tests.e2e.test_server import Server, stop
from tests.faults.support import (
    codex,
    finish,
    healthy_within,
    restart,
    run,
    spawn,
    spawn_server,
)

pytestmark = [pytest.mark.faults, pytest.mark.postgres]

LOAD_SECONDS = 8.0
KILL_EVERY = 1.0  # seconds between kills: about 8 kills, servers and CLI processes alternating
SESSION = "s1"


@dataclass
class Tally:
    """What the writers were told: acknowledged proposal ids, and every other outcome."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    acknowledged: list[str] = field(default_factory=list)
    unacknowledged: int = 0
    wrong: list[str] = field(default_factory=list)  # answers a writer must never get

    def ack(self, proposal_id: str) -> None:
        with self.lock:
            self.acknowledged.append(proposal_id)

    def lost(self) -> None:
        with self.lock:
            self.unacknowledged += 1

    def bad(self, what: str) -> None:
        with self.lock:
            self.wrong.append(what)


class Load:
    """Writers until `stop` is set: one HTTP thread per server slot, two CLI loops."""

    def __init__(self, database: str, home: Path, slots: list[Server]) -> None:
        self.database = database
        self.home = home
        self.slots = slots  # replaced in place when a server is restarted
        self.tally = Tally()
        self.stop = threading.Event()
        self.cli: list[subprocess.Popen[str] | None] = [None, None]
        self.threads = [
            *(threading.Thread(target=self.http_loop, args=(i,)) for i in range(len(slots))),
            *(threading.Thread(target=self.cli_loop, args=(i,)) for i in range(len(self.cli))),
        ]

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(60)
        assert not any(thread.is_alive() for thread in self.threads), "a writer hangs"

    def http_loop(self, slot: int) -> None:
        with httpx.Client(timeout=httpx.Timeout(10.0)) as client:
            while not self.stop.is_set():
                proposal_id = f"h{slot}-{uuid.uuid4().hex[:10]}"
                body = {**codex(random.randrange(10**9)), "proposal_id": proposal_id}
                try:
                    response = client.post(
                        f"{self.slots[slot].url}/sessions/{SESSION}/plan", json=body
                    )
                except httpx.TransportError:  # killed, or not up again yet
                    self.tally.lost()
                    time.sleep(0.05)
                    continue
                if response.status_code == 200:
                    decided = response.json()
                    if decided["status"] == "committed" and decided["proposal_id"] == proposal_id:
                        self.tally.ack(proposal_id)
                    else:
                        self.tally.bad(f"HTTP 200 {response.text[:300]}")
                elif response.status_code == 503:
                    self.tally.lost()
                else:
                    self.tally.bad(f"HTTP {response.status_code} {response.text[:300]}")

    def cli_loop(self, slot: int) -> None:
        while not self.stop.is_set():
            proposal_id = f"c{slot}-{uuid.uuid4().hex[:10]}"
            args = ("plan", "update", SESSION, "-", "--proposal-id", proposal_id, "--json")
            started = time.monotonic()
            payload = json.dumps(codex(random.randrange(10**9)))
            process = spawn(self.home, self.database, *args, stdin=payload)
            self.cli[slot] = process
            done = finish(process, args, started)
            self.cli[slot] = None
            if done.returncode == 0:
                decided = done.json()
                if decided["status"] == "committed" and decided["proposal_id"] == proposal_id:
                    self.tally.ack(proposal_id)
                else:
                    self.tally.bad(f"exit 0 without this commit: {done}")
            elif done.returncode in (-signal.SIGKILL, 5):
                self.tally.lost()
            else:
                self.tally.bad(str(done))


def test_sigkill_of_servers_and_cli_writers_loses_and_doubles_nothing(
    postgres_url: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    opened = run(home, postgres_url, "session", "open", SESSION)
    assert opened.returncode == 0, str(opened)
    slots = [spawn_server(postgres_url, tmp_path / f"server-{i}") for i in range(2)]
    kills: list[str] = []
    try:
        for server in slots:
            assert (problem := healthy_within(server)) is None, problem
        with Load(postgres_url, home, slots) as load:
            deadline = time.monotonic() + LOAD_SECONDS
            victim = 0
            while time.monotonic() < deadline:
                time.sleep(KILL_EVERY)
                if victim % 2 == 0:  # a server: killed, then started again on its port
                    index = (victim // 2) % len(slots)
                    slots[index].process.send_signal(signal.SIGKILL)
                    slots[index].process.wait(10)
                    slots[index] = restart(slots[index], postgres_url, tmp_path / f"server-{index}")
                    kills.append(f"server {index}")
                else:  # a CLI writer, wherever it is in its run
                    process = load.cli[(victim // 2) % len(load.cli)]
                    if process is not None and process.poll() is None:
                        process.send_signal(signal.SIGKILL)
                        kills.append("cli")
                victim += 1
            load.stop.set()  # the writers finish while the restarted servers come up
            for server in slots:  # the restarted servers serve again
                assert (problem := healthy_within(server)) is None, problem
        tally = load.tally
    finally:
        for server in slots:
            stop(server.process)

    assert tally.wrong == [], tally.wrong
    assert len(kills) >= 5 and "cli" in kills, kills
    assert len(tally.acknowledged) >= 10, "too little load to mean anything"
    assert any(a.startswith("h") for a in tally.acknowledged), "no HTTP write acknowledged"
    assert any(a.startswith("c") for a in tally.acknowledged), "no CLI write acknowledged"

    with open_planledger(postgres_url, home=None) as ledger:
        history = ledger.history(SESSION).as_json()
        shown = ledger.plan(SESSION).model_dump(mode="json")
    commits = [e for e in history["entries"] if e["kind"] == "committed"]
    assert [c["revision"] for c in commits] == list(range(1, len(commits) + 1)), "gaps"
    counted = Counter(c["proposal_id"] for c in commits)
    assert [pid for pid, n in counted.items() if n > 1] == [], "a proposal committed twice"
    missing = set(tally.acknowledged) - set(counted)
    assert not missing, f"acknowledged but not in the history: {sorted(missing)}"
    assert len(tally.acknowledged) == len(set(tally.acknowledged))

    verified = run(home, postgres_url, "verify")
    assert verified.returncode == 0, str(verified)
    rebuilt = run(home, postgres_url, "projections", "rebuild")
    assert rebuilt.returncode == 0, str(rebuilt)
    with open_planledger(postgres_url, home=None) as ledger:  # the views equal a rebuild
        assert ledger.history(SESSION).as_json() == history
        assert ledger.plan(SESSION).model_dump(mode="json") == shown
