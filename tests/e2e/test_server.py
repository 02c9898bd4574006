"""The HTTP server, end to end: the installed `planledger serve` as a subprocess, driven by httpx.

Every test starts a real server on a free loopback port (on SQLite, PostgreSQL or both), waits
for /healthz, and always terminates it afterwards. Server-sent events are read on a background
thread into a queue, so a test waits for an event with a deadline and never hangs.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import as_reader
from tests.e2e.test_cli import planledger_command

STARTUP_TIMEOUT = 30.0
REQUEST_TIMEOUT = httpx.Timeout(15.0)
EVENT_TIMEOUT = 10.0
MAX_BODY_BYTES = 256 * 1024

PLAN_1 = {
    "title": "Implement session export",
    "steps": [
        {"id": "inspect", "title": "Inspect durable state", "status": "in_progress"},
        {"id": "implement", "title": "Implement archive writer", "status": "pending"},
    ],
}
PLAN_2 = {
    "title": "Implement session export",
    "steps": [
        {"id": "inspect", "title": "Inspect durable state", "status": "completed"},
        {"id": "implement", "title": "Implement archive writer", "status": "in_progress"},
        {"id": "verify", "title": "Run the regression suite", "status": "pending"},
    ],
}
PLAN_3 = {
    "title": "Implement session export",
    "steps": [
        {"id": "inspect", "title": "Inspect durable state", "status": "completed"},
        {"id": "implement", "title": "Implement archive writer", "status": "completed"},
        {"id": "verify", "title": "Run the regression suite", "status": "in_progress"},
    ],
}
CODEX_1 = {
    "explanation": "Reproduce first",
    "plan": [
        {"step": "Locate the failure", "status": "completed"},
        {"step": "Fix and run the regression", "status": "in_progress"},
        {"step": "Locate the failure", "status": "pending"},
        {"step": "Write it up", "status": "cancelled"},
    ],
}
PLAN_VIEW_KEYS = {
    "session_id",
    "revision",
    "policy",
    "title",
    "goal_id",
    "steps",
    "pending_proposal",
    "updated_at",
}
SESSION_KEYS = {"session_id", "mode", "goals", "should_continue"}


# -- the server process -----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log: Path
    token: str | None = None

    def client(self, token: str | None = None, *, anonymous: bool = False) -> httpx.Client:
        """A client sending the server's token (or `token`), or none at all if `anonymous`."""
        given = None if anonymous else (token or self.token)
        headers = {"Authorization": f"Bearer {given}"} if given else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=REQUEST_TIMEOUT)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def wait_healthy(server: Server) -> bool:
    """True once /healthz answers 200; False if the process exited first."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            return False
        with suppress(httpx.TransportError):
            if httpx.get(f"{server.url}/healthz", timeout=2.0).status_code == 200:
                return True
        time.sleep(0.05)
    stop(server.process)
    pytest.fail(f"the server did not answer /healthz in {STARTUP_TIMEOUT}s:\n{server.output()}")


@contextmanager
def running_server(
    database: str, home: Path, token: str | None = None, extra: tuple[str, ...] = ()
) -> Iterator[Server]:
    """`planledger --database URL serve --port P` on a free port, terminated on exit."""
    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PLANLEDGER_HOME": str(home)}
    env.pop("PLANLEDGER_DATABASE_URL", None)
    env.pop("PLANLEDGER_TOKEN", None)
    if token:
        env["PLANLEDGER_TOKEN"] = token
    for _ in range(3):  # another process may take the free port before the server binds it
        port = free_port()
        log = home / f"serve-{port}.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                [
                    planledger_command(),
                    "--database",
                    database,
                    "serve",
                    "--port",
                    str(port),
                    *extra,
                ],
                stdout=sink,
                stderr=subprocess.STDOUT,
                env=env,
            )
        server = Server(f"http://127.0.0.1:{port}", process, log, token)
        try:
            healthy = wait_healthy(server)
        except BaseException:
            stop(process)
            raise
        if healthy:
            break
        stop(process)
        if "address already in use" not in server.output().lower():
            pytest.fail(f"the server exited at startup:\n{server.output()}")
    else:
        pytest.fail("could not find a free port for the server")
    try:
        yield server
    finally:
        stop(process)
    output = server.output()
    assert "Traceback" not in output and "Exception in" not in output, output


@pytest.fixture
def server(database_url: str, tmp_path: Path) -> Iterator[Server]:
    with running_server(database_url, tmp_path / "home") as running:
        yield running


@pytest.fixture
def sqlite_server(sqlite_url: str, tmp_path: Path) -> Iterator[Server]:
    with running_server(sqlite_url, tmp_path / "home") as running:
        yield running


@pytest.fixture
def api(server: Server) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


# -- server-sent events -----------------------------------------------------------------------


@dataclass
class Sse:
    id: int | None
    event: str
    data: Any


@dataclass
class EventStream:
    """GET /sessions/{id}/events read on a thread; events wait in a queue for the test."""

    server: Server
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    status: int | None = None
    body: str = ""
    error: BaseException | None = None

    def __post_init__(self) -> None:
        self.events: queue.Queue[Sse | None] = queue.Queue()
        self._ready = threading.Event()
        self._closed = False
        self._client = self.server.client()
        self._response: httpx.Response | None = None
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        if not self._ready.wait(EVENT_TIMEOUT):
            self.close()
            pytest.fail(f"no response headers from {self.path} in {EVENT_TIMEOUT}s")

    def _read(self) -> None:
        try:
            timeout = httpx.Timeout(10.0, read=60.0)  # the server pings every 15 s
            with self._client.stream(
                "GET", self.path, headers=self.headers, timeout=timeout
            ) as response:
                self._response = response
                self.status = response.status_code
                if response.status_code != 200:
                    self.body = response.read().decode()
                    return
                self._ready.set()
                self._parse(response.iter_lines())
        except Exception as error:
            if not self._closed:
                self.error = error
        finally:
            self._ready.set()
            self.events.put(None)

    def _parse(self, lines: Iterator[str]) -> None:
        fields: dict[str, str] = {}
        data: list[str] = []
        for line in lines:
            if line == "":
                if data or fields:
                    event_id = fields.get("id")
                    self.events.put(
                        Sse(
                            id=int(event_id) if event_id is not None else None,
                            event=fields.get("event", "message"),
                            data=json.loads("\n".join(data)) if data else None,
                        )
                    )
                fields, data = {}, []
                continue
            if line.startswith(":"):
                continue  # a comment (ping)
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                data.append(value)
            else:
                fields[name] = value

    def take(self, count: int, timeout: float = EVENT_TIMEOUT) -> list[Sse]:
        """Exactly the next `count` events, within `timeout` seconds."""
        taken: list[Sse] = []
        deadline = time.monotonic() + timeout
        while len(taken) < count:
            remaining = deadline - time.monotonic()
            try:
                event = self.events.get(timeout=max(remaining, 0.001))
            except queue.Empty:
                pytest.fail(f"got {len(taken)} of {count} events in {timeout}s: {taken}")
            if event is None:
                pytest.fail(f"the stream ended after {len(taken)} of {count} events: {self.error}")
            taken.append(event)
        return taken

    def quiet(self, seconds: float = 0.5) -> list[Sse]:
        """Whatever arrives within `seconds` (a test expects nothing)."""
        time.sleep(seconds)
        extra: list[Sse] = []
        with suppress(queue.Empty):
            while (event := self.events.get_nowait()) is not None:
                extra.append(event)
        return extra

    def close(self) -> None:
        """Hang up: shut the socket down, which wakes the reading thread at once."""
        self._closed = True
        if self._response is not None:
            stream = self._response.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is not None:
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        with suppress(Exception):
            self._client.close()
        self._thread.join(timeout=5)


@contextmanager
def event_stream(
    server: Server, session_id: str, headers: dict[str, str] | None = None, query: str = ""
) -> Iterator[EventStream]:
    stream = EventStream(server, f"/sessions/{session_id}/events{query}", headers or {})
    try:
        yield stream
    finally:
        stream.close()


# -- helpers ----------------------------------------------------------------------------------


def open_session(api: httpx.Client, session_id: str, mode: str = "work") -> dict[str, Any]:
    response = api.post("/sessions", json={"session_id": session_id, "mode": mode})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def propose(api: httpx.Client, session_id: str, payload: Any, status: int) -> dict[str, Any]:
    response = api.post(f"/sessions/{session_id}/plan", json=payload)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    return body


def get_json(api: httpx.Client, path: str, status: int = 200) -> Any:
    response = api.get(path)
    assert response.status_code == status, (path, response.text)
    return response.json()


def assert_plan_view(view: dict[str, Any], session_id: str, revision: int) -> None:
    assert set(view) >= PLAN_VIEW_KEYS, view
    assert view["session_id"] == session_id and view["revision"] == revision
    for step in view["steps"]:
        assert {"id", "title", "status"} <= set(step)


def codes(body: dict[str, Any]) -> list[str]:
    return [violation["code"] for violation in body["violations"]]


# -- 1. routes and status codes ---------------------------------------------------------------


def test_healthz_sessions_and_mode(api: httpx.Client) -> None:
    health = get_json(api, "/healthz")
    assert health == {"status": "ok", "store_position": 0}
    created = api.post("/sessions", json={"session_id": "s1"})
    assert created.status_code == 201, created.text
    assert created.json() == {
        "session_id": "s1",
        "mode": "work",
        "goals": [],
        "should_continue": False,
        "source": "http",
        "parent_session_id": None,
        "cwd": None,
    }
    assert open_session(api, "s.2-_x", mode="plan")["mode"] == "plan"
    assert open_session(api, "x" * 128)["session_id"] == "x" * 128

    again = api.post("/sessions", json={"session_id": "s1", "mode": "plan"})
    assert again.status_code == 409 and "error" in again.json()
    for invalid in (".hidden", "with space", "x" * 129, "", "slash/id", "ünïcode"):
        response = api.post("/sessions", json={"session_id": invalid})
        assert response.status_code == 422, (invalid, response.text)

    shown = get_json(api, "/sessions/s1")
    assert set(shown) >= SESSION_KEYS and shown["mode"] == "work"  # the 409 changed nothing
    missing = get_json(api, "/sessions/nope", status=404)
    assert "error" in missing
    assert api.get("/sessions/.hidden").status_code == 422

    moved = api.put("/sessions/s1/mode", json={"mode": "plan"})
    assert moved.status_code == 200 and moved.json()["mode"] == "plan"
    assert get_json(api, "/sessions/s1")["mode"] == "plan"
    assert api.put("/sessions/s1/mode", json={"mode": "work"}).json()["mode"] == "work"
    assert api.put("/sessions/nope/mode", json={"mode": "plan"}).status_code == 404
    assert api.put("/sessions/s1/mode", json={"mode": "sideways"}).status_code == 422
    assert get_json(api, "/healthz")["status"] == "ok"
    listed = {item["session_id"]: item for item in get_json(api, "/sessions")["sessions"]}
    assert listed["s1"] == {
        "session_id": "s1",
        "mode": "work",
        "revision": 0,
        "updated_at": listed["s1"]["updated_at"],
        "title": None,
        "progress": {"completed": 0, "total": 0},
        "source": "http",
        "parent_session_id": None,
        "cwd": None,
        "corrupt": False,
    }


def test_strict_plan_lifecycle(api: httpx.Client) -> None:
    open_session(api, "s1")
    empty = get_json(api, "/sessions/s1/plan")
    assert_plan_view(empty, "s1", 0)
    assert empty["steps"] == [] and empty["title"] is None

    committed = propose(api, "s1", PLAN_1, 200)
    assert committed["status"] == "committed" and committed["revision"] == 1
    assert committed["violations"] == [] and committed["proposal_id"]
    assert_plan_view(committed["plan"], "s1", 1)
    assert committed["plan"]["steps"] == PLAN_1["steps"]
    assert committed["plan"]["policy"] == "strict"
    assert get_json(api, "/sessions/s1/plan") == committed["plan"]  # read-your-writes

    stale = propose(api, "s1", {**PLAN_2, "expected_revision": 0}, 409)
    assert stale["status"] == "conflict" and stale["current_revision"] == 1
    assert stale["revision"] == 1 and "revision_conflict" in codes(stale)
    assert get_json(api, "/sessions/s1/plan")["revision"] == 1

    second = propose(api, "s1", {**PLAN_2, "expected_revision": 1}, 200)
    assert second["revision"] == 2 and second["plan"]["steps"] == PLAN_2["steps"]
    assert get_json(api, "/sessions/s1/plan")["steps"] == PLAN_2["steps"]

    # Every rule broken at once: every violation reported, the revision unchanged.
    bad = {
        "title": " ",
        "mode": "plan",
        "colour": "blue",
        "steps": [
            {"id": "inspect", "title": "", "status": "pending"},
            {"id": "inspect", "title": "Again", "status": "in_progress"},
            {"id": "x y", "title": "Bad id", "status": "in_progress"},
            {"id": "z", "title": "z" * 501, "status": "blocked"},
            {"id": "", "title": "No id", "status": "pending"},
        ],
    }
    rejected = propose(api, "s1", bad, 422)
    assert rejected["status"] == "rejected" and rejected["revision"] == 2
    assert set(codes(rejected)) == {
        "mode_change_forbidden",
        "unknown_field",
        "blank_title",
        "blank_step_title",
        "duplicate_step_id",
        "invalid_step_id",
        "too_long",
        "invalid_status",
        "blank_step_id",
        "multiple_in_progress",
        "step_removed",
        "completed_step_reopened",
    }
    for violation in rejected["violations"]:
        assert violation["message"].strip()
    removed = [v for v in rejected["violations"] if v["code"] == "step_removed"]
    assert {v["step_id"] for v in removed} == {"implement", "verify"}
    assert any(v.get("index") == 3 for v in rejected["violations"] if v["code"] == "too_long")

    no_current = {
        "title": "t",
        "steps": [*PLAN_2["steps"][:2], {"id": "n", "title": "N", "status": "pending"}],
    }
    no_current["steps"][1] = {**no_current["steps"][1], "status": "pending"}
    assert "no_step_in_progress" in codes(propose(api, "s1", no_current, 422))
    too_many = {
        "title": "t",
        "steps": [{"id": f"s{i}", "title": "x", "status": "completed"} for i in range(101)],
    }
    assert "too_many_steps" in codes(propose(api, "s1", too_many, 422))
    assert "policy_mismatch" in codes(propose(api, "s1", CODEX_1, 422))
    assert "unknown_goal" in codes(propose(api, "s1", {**PLAN_2, "goal_id": "ghost"}, 422))

    view = get_json(api, "/sessions/s1/plan")
    assert view["revision"] == 2 and view["steps"] == PLAN_2["steps"]
    assert view["last_rejection"]["violations"][0]["code"] == "unknown_goal"

    # Idempotent retry: same proposal_id and content writes nothing; other content is refused.
    retry = {**PLAN_3, "proposal_id": "retry-1"}
    first = propose(api, "s1", retry, 200)
    assert first["revision"] == 3 and first["proposal_id"] == "retry-1"
    again = propose(api, "s1", retry, 200)
    assert again["revision"] == 3 and again["proposal_id"] == "retry-1"
    reused = propose(api, "s1", {**PLAN_2, "proposal_id": "retry-1"}, 422)
    assert codes(reused) == ["proposal_id_reused"]
    # Another writer moves the plan on: the retry still answers its own commit and plan.
    later = {
        "title": PLAN_3["title"],
        "steps": [*PLAN_3["steps"], {"id": "later", "title": "Later", "status": "pending"}],
    }
    assert propose(api, "s1", later, 200)["revision"] == 4
    late_retry = propose(api, "s1", retry, 200)
    assert (late_retry["revision"], late_retry["plan"]["revision"]) == (3, 3)
    assert late_retry["plan"]["steps"] == first["plan"]["steps"]

    unknown = api.post("/sessions/nope/plan", json=PLAN_1)
    assert unknown.status_code == 404 and "error" in unknown.json()
    assert api.get("/sessions/nope/plan").status_code == 404


def test_codex_plan_and_clearing(api: httpx.Client) -> None:
    open_session(api, "c1")
    committed = propose(api, "c1", CODEX_1, 200)
    plan = committed["plan"]
    assert committed["status"] == "committed" and plan["policy"] == "replace"
    assert [step["title"] for step in plan["steps"]] == [s["step"] for s in CODEX_1["plan"]]
    ids = [step["id"] for step in plan["steps"]]
    assert len(set(ids)) == len(ids) and ids[0] != ids[2]  # duplicates get a suffix
    assert get_json(api, "/sessions/c1/plan")["steps"] == plan["steps"]

    assert propose(api, "c1", CODEX_1, 200)["plan"]["steps"] == plan["steps"]  # deterministic
    two_current = {
        "plan": [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]
    }
    rejected = propose(api, "c1", two_current, 422)
    assert "multiple_in_progress" in codes(rejected) and rejected["revision"] == 2
    assert "blank_step_title" in codes(
        propose(api, "c1", {"plan": [{"step": " ", "status": "pending"}]}, 422)
    )
    stale = propose(api, "c1", {"plan": [], "expected_revision": 1}, 409)
    assert stale["current_revision"] == 2

    cleared = propose(api, "c1", {"plan": [], "expected_revision": 2}, 200)
    assert cleared["revision"] == 3
    view = get_json(api, "/sessions/c1/plan")
    assert view["revision"] == 3 and view["steps"] == [] and view["title"] is None
    compaction = get_json(api, "/sessions/c1/plan/compaction")
    assert compaction["state"] == "absent"
    assert "policy_mismatch" in codes(propose(api, "c1", PLAN_1, 422))  # the policy stays
    assert get_json(api, "/sessions/c1/plan")["policy"] == "replace"


def test_plan_at_revision_history_and_compaction(api: httpx.Client) -> None:
    open_session(api, "h1")
    assert get_json(api, "/sessions/h1/plan/compaction")["state"] == "absent"
    assert get_json(api, "/sessions/h1/plan/history") == {"session_id": "h1", "entries": []}
    first = propose(api, "h1", PLAN_1, 200)
    rejected = propose(api, "h1", {**PLAN_2, "steps": PLAN_2["steps"][:1]}, 422)
    second = propose(api, "h1", PLAN_2, 200)

    at_0 = get_json(api, "/sessions/h1/plan?revision=0")
    assert_plan_view(at_0, "h1", 0)
    assert at_0["steps"] == []
    assert get_json(api, "/sessions/h1/plan?revision=1")["steps"] == PLAN_1["steps"]
    assert get_json(api, "/sessions/h1/plan?revision=2")["steps"] == PLAN_2["steps"]
    assert "error" in get_json(api, "/sessions/h1/plan?revision=3", status=404)
    assert api.get("/sessions/h1/plan?revision=-1").status_code == 422
    assert api.get("/sessions/h1/plan?revision=one").status_code == 422
    diff = get_json(api, "/sessions/h1/plan/diff?from=0&to=2")
    assert [step["id"] for step in diff["added"]] == ["inspect", "implement", "verify"]
    diff = get_json(api, "/sessions/h1/plan/diff?from=1&to=2")
    assert (diff["from"], diff["to"], diff["removed"], diff["retitled"]) == (1, 2, [], [])
    assert [change["step_id"] for change in diff["status"]] == ["inspect", "implement"]
    assert "error" in get_json(api, "/sessions/h1/plan/diff?from=1&to=3", status=404)
    assert api.get("/sessions/h1/plan/diff?from=1").status_code == 422

    history = get_json(api, "/sessions/h1/plan/history")
    assert history["session_id"] == "h1"
    entries = history["entries"]
    assert [e["kind"] for e in entries] == [
        "proposed",
        "committed",
        "proposed",
        "rejected",
        "proposed",
        "committed",
    ]
    positions = [e["position"] for e in entries]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    for entry in entries:
        assert {"position", "kind", "proposal_id", "at"} <= set(entry)
    assert [e["proposal_id"] for e in entries] == [
        first["proposal_id"],
        first["proposal_id"],
        rejected["proposal_id"],
        rejected["proposal_id"],
        second["proposal_id"],
        second["proposal_id"],
    ]
    assert entries[1]["revision"] == 1 and entries[5]["revision"] == 2
    assert entries[1]["transitions"] == [
        {"step_id": "inspect", "from": None, "to": "in_progress"},
        {"step_id": "implement", "from": None, "to": "pending"},
    ]
    assert entries[5]["transitions"] == [
        {"step_id": "inspect", "from": "in_progress", "to": "completed"},
        {"step_id": "implement", "from": "pending", "to": "in_progress"},
        {"step_id": "verify", "from": None, "to": "pending"},
    ]
    assert entries[3]["violations"] == rejected["violations"]
    assert api.get("/sessions/nope/plan/history").status_code == 404

    full = get_json(api, "/sessions/h1/plan/compaction")
    assert full["state"] == "present" and full["revision"] == 2
    assert full["current"] == {"id": "implement", "title": "Implement archive writer"}
    assert full["next"] == [{"id": "verify", "title": "Run the regression suite"}]
    assert (full["completed"], full["cancelled"], full["total"]) == (1, 0, 3)
    assert len(full["text"]) <= 2000 and full["truncated"] is False
    for max_chars in (0, 1, 2, 10, 40, 100, 100_000):
        snapshot = get_json(api, f"/sessions/h1/plan/compaction?max_chars={max_chars}")
        assert snapshot["state"] == "present"
        assert len(snapshot["text"]) <= max_chars, (max_chars, snapshot["text"])
    assert get_json(api, "/sessions/h1/plan/compaction?max_chars=10")["truncated"] is True
    for bad in ("-1", "100001", "many"):
        assert api.get(f"/sessions/h1/plan/compaction?max_chars={bad}").status_code == 422
    assert api.get("/sessions/nope/plan/compaction").status_code == 404


def test_goals(api: httpx.Client) -> None:
    open_session(api, "g1")
    assert get_json(api, "/sessions/g1/goals") == []
    started = api.post("/sessions/g1/goals", json={"goal_id": "ship", "objective": "Ship it"})
    assert started.status_code == 201, started.text
    assert started.json()["goals"] == [
        {"goal_id": "ship", "objective": "Ship it", "state": "active"}
    ]
    assert started.json()["should_continue"] is True
    assert get_json(api, "/sessions/g1/goals") == started.json()["goals"]
    duplicate = api.post("/sessions/g1/goals", json={"goal_id": "ship", "objective": "Again"})
    assert duplicate.status_code == 409

    def move(goal: str, action: str, status: int = 200) -> dict[str, Any]:
        response = api.post(f"/sessions/g1/goals/{goal}/{action}")
        assert response.status_code == status, (action, response.text)
        body: dict[str, Any] = response.json()
        return body

    assert move("ship", "resume", 409)["error"]  # not blocked
    blocked = move("ship", "block")
    assert blocked["goals"][0]["state"] == "blocked" and blocked["should_continue"] is False
    assert move("ship", "block", 409)["error"]
    assert move("ship", "resume")["should_continue"] is True
    completed = move("ship", "complete")
    assert completed["goals"][0]["state"] == "completed" and not completed["should_continue"]
    for action in ("complete", "block", "resume", "cancel"):
        move("ship", action, 409)  # a completed goal is final
    move("ghost", "complete", 404)
    assert api.post("/sessions/g1/goals/ship/explode").status_code == 422

    api.post("/sessions/g1/goals", json={"goal_id": "other", "objective": "Other"})
    assert move("other", "cancel")["goals"][1]["state"] == "cancelled"
    move("other", "resume", 409)
    assert get_json(api, "/sessions/g1")["goals"] == get_json(api, "/sessions/g1/goals")

    api.post("/sessions/g1/goals", json={"goal_id": "planned", "objective": "With a plan"})
    tied = propose(api, "g1", {**PLAN_1, "goal_id": "planned"}, 200)
    assert tied["plan"]["goal_id"] == "planned"
    assert get_json(api, "/sessions/g1/plan/compaction")["goal_id"] == "planned"

    missing = api.post("/sessions/nope/goals", json={"goal_id": "g", "objective": "x"})
    assert missing.status_code == 404
    assert api.get("/sessions/nope/goals").status_code == 404
    assert api.post("/sessions/nope/goals/g/complete").status_code == 404


def test_read_your_writes_on_every_commit(api: httpx.Client) -> None:
    open_session(api, "ryw")
    steps = [{"id": "s0", "title": "Step 0", "status": "in_progress"}]
    for revision in range(1, 16):
        payload = {"title": f"Revision {revision}", "steps": steps}
        committed = propose(api, "ryw", payload, 200)
        assert committed["revision"] == revision
        view = get_json(api, "/sessions/ryw/plan")
        assert view["revision"] == revision and view["title"] == f"Revision {revision}"
        assert get_json(api, "/sessions/ryw/plan/history")["entries"][-1]["revision"] == revision
        assert get_json(api, "/sessions/ryw/plan/compaction")["revision"] == revision
        steps = [{**step, "status": "completed"} for step in steps]
        steps.append({"id": f"s{revision}", "title": f"Step {revision}", "status": "in_progress"})


# -- 2. server-sent events --------------------------------------------------------------------


def assert_stream_matches_history(events: list[Sse], history: dict[str, Any]) -> None:
    entries = history["entries"]
    assert [e.event for e in events] == [f"plan.{entry['kind']}" for entry in entries]
    assert [e.data["proposal_id"] for e in events] == [entry["proposal_id"] for entry in entries]
    ids = [e.id for e in events]
    assert all(isinstance(i, int) for i in ids)
    assert ids == sorted(ids) and len(set(ids)) == len(ids), ids
    for event in events:
        assert event.data["id"] == event.id and event.data["session_id"] == history["session_id"]


def test_events_order_and_resume(server: Server, api: httpx.Client) -> None:
    open_session(api, "e1")
    open_session(api, "other")  # its events must never show on e1's stream
    outcomes = [
        propose(api, "e1", PLAN_1, 200),
        propose(api, "other", PLAN_1, 200),
        propose(api, "e1", {**PLAN_2, "steps": PLAN_2["steps"][:1]}, 422),
        propose(api, "e1", {**PLAN_2, "expected_revision": 0}, 409),
        propose(api, "e1", {**PLAN_2, "expected_revision": 1}, 200),
    ]
    history = get_json(api, "/sessions/e1/plan/history")
    assert len(history["entries"]) == 8

    with event_stream(server, "e1") as stream:
        assert stream.status == 200
        events = stream.take(8)
        assert stream.quiet(0.5) == []
    assert_stream_matches_history(events, history)
    kinds = [e.event for e in events]
    assert kinds == [
        "plan.proposed",
        "plan.committed",
        "plan.proposed",
        "plan.rejected",
        "plan.proposed",
        "plan.rejected",
        "plan.proposed",
        "plan.committed",
    ]
    first, rejected, conflict, second = outcomes[0], outcomes[2], outcomes[3], outcomes[4]
    assert events[1].id == first["store_position"] and events[7].id == second["store_position"]
    assert events[1].data["revision"] == 1 and events[1].data["plan"]["steps"] == PLAN_1["steps"]
    assert events[7].data["plan"]["steps"] == PLAN_2["steps"]
    assert events[3].data["violations"] == rejected["violations"]
    assert events[5].data["violations"] == conflict["violations"]
    assert events[6].data["expected_revision"] == 1

    ids = [e.id for e in events]
    assert all(i is not None for i in ids)
    for k in range(len(ids)):  # resume after every event: all later ones, none twice
        with event_stream(server, "e1", headers={"Last-Event-ID": str(ids[k])}) as resumed:
            later = resumed.take(len(ids) - k - 1) if k < len(ids) - 1 else []
            assert resumed.quiet(0.2) == []
        assert [e.id for e in later] == ids[k + 1 :]
        assert [e.event for e in later] == kinds[k + 1 :]
    with event_stream(server, "e1", query=f"?after={ids[3]}") as after:
        assert [e.id for e in after.take(4)] == ids[4:]
    with event_stream(server, "e1", headers={"Last-Event-ID": "0"}) as from_zero:
        assert [e.id for e in from_zero.take(8)] == ids

    missing = EventStream(server, "/sessions/nope/events")
    missing.close()
    assert missing.status == 404 and "error" in json.loads(missing.body)
    bad = api.get("/sessions/e1/events", headers={"Last-Event-ID": "abc"})
    assert bad.status_code == 422


def test_events_live_and_reconnect(server: Server, api: httpx.Client) -> None:
    open_session(api, "live")
    propose(api, "live", PLAN_1, 200)
    seen: list[Sse] = []
    with event_stream(server, "live") as stream:
        seen += stream.take(2)  # the history so far
        assert stream.quiet(0.3) == []
        committed = propose(api, "live", PLAN_2, 200)
        live = stream.take(2)
        assert [e.event for e in live] == ["plan.proposed", "plan.committed"]
        assert live[1].id == committed["store_position"] and live[1].data["revision"] == 2
        assert live[1].data["plan"]["steps"] == PLAN_2["steps"]
        rejected = propose(api, "live", {**PLAN_3, "steps": []}, 422)
        live += stream.take(2)
        assert [e.event for e in live[2:]] == ["plan.proposed", "plan.rejected"]
        assert live[3].data["violations"] == rejected["violations"]
        seen += live
        assert stream.quiet(0.3) == []

    # Disconnected: more happens; a reconnect from the last seen id gets exactly the rest.
    propose(api, "live", PLAN_3, 200)
    propose(api, "live", {**PLAN_3, "expected_revision": 1}, 409)
    with event_stream(server, "live", headers={"Last-Event-ID": str(seen[-1].id)}) as stream:
        rest = stream.take(4)
        propose(api, "live", {**PLAN_3, "title": "Renamed"}, 200)  # and live after the replay
        rest += stream.take(2)
        assert stream.quiet(0.3) == []
    everything = seen + rest
    history = get_json(api, "/sessions/live/plan/history")
    assert_stream_matches_history(everything, history)
    with event_stream(server, "live") as stream:
        assert [e.id for e in stream.take(len(everything))] == [e.id for e in everything]


# -- 3. bearer token --------------------------------------------------------------------------

TOKEN = "s3cret-token"
GUARDED_ROUTES: list[tuple[str, str, Any]] = [
    ("POST", "/sessions", {"session_id": "new"}),
    ("GET", "/sessions/s1", None),
    ("PUT", "/sessions/s1/mode", {"mode": "plan"}),
    ("POST", "/sessions/s1/plan", PLAN_1),
    ("GET", "/sessions/s1/plan", None),
    ("GET", "/sessions/s1/plan?revision=0", None),
    ("GET", "/sessions/s1/plan/history", None),
    ("GET", "/sessions/s1/plan/compaction?max_chars=50", None),
    ("POST", "/sessions/s1/goals", {"goal_id": "g", "objective": "x"}),
    ("GET", "/sessions/s1/goals", None),
    ("POST", "/sessions/s1/goals/g0/block", None),
    ("GET", "/sessions/s1/events", None),
    ("GET", "/sessions/nope", None),  # 401 before 404: no probing for session ids
    ("POST", "/sessions", {"session_id": ".bad"}),  # 401 before 422
    ("GET", "/sessions/.bad", None),
    ("GET", "/sessions", None),
    ("GET", "/docs", None),
    ("GET", "/docs/assets/swagger-ui-bundle.js", None),
    ("GET", "/openapi.json", None),
    ("GET", "/ui", None),
]


def test_token_guards_every_route_but_healthz(sqlite_url: str, tmp_path: Path) -> None:
    with running_server(sqlite_url, tmp_path / "home", token=TOKEN) as server:
        with server.client() as api:
            open_session(api, "s1")
            api.post("/sessions/s1/goals", json={"goal_id": "g0", "objective": "x"})
            before = get_json(api, "/sessions/s1")
        wrong_headers: list[dict[str, str]] = [
            {},
            {"Authorization": "Bearer wrong"},
            {"Authorization": f"Bearer {TOKEN}x"},
            {"Authorization": f"Bearer {TOKEN[:-1]}"},
            {"Authorization": f"Basic {TOKEN}"},
            {"Authorization": TOKEN},
            {"Authorization": "Bearer"},
            {"X-Token": TOKEN},
        ]
        with server.client(anonymous=True) as anonymous:
            health = anonymous.get("/healthz")
            assert health.status_code == 200 and health.json()["status"] == "ok"
            for method, path, body in GUARDED_ROUTES:
                for headers in wrong_headers:
                    response = anonymous.request(method, path, json=body, headers=headers)
                    assert response.status_code == 401, (method, path, headers, response.text)
                    assert response.json()["error"]["code"] == "unauthorized"
                    assert response.headers["www-authenticate"] == "Bearer"
        with server.client() as api:
            assert get_json(api, "/sessions/s1") == before  # nothing changed
            assert get_json(api, "/sessions/s1/plan")["revision"] == 0
            assert api.get("/sessions/new").status_code == 404
            for method, path, body in GUARDED_ROUTES:
                if path.endswith("/events"):
                    continue
                response = api.request(method, path, json=body)
                assert response.status_code != 401 and response.status_code < 500, (method, path)
            assert get_json(api, "/sessions/s1/plan")["revision"] == 1
            lowercase = api.get("/sessions/s1", headers={"Authorization": f"bearer {TOKEN}"})
            assert lowercase.status_code == 200
        with event_stream(server, "s1") as stream:  # the client sends the right token
            assert stream.status == 200
            assert [e.event for e in stream.take(2)] == ["plan.proposed", "plan.committed"]


def test_named_tokens_read_write_and_name_each_proposals_actor(
    database_url: str, tmp_path: Path
) -> None:
    """A read token reads everything and writes nothing (403, nothing changes); two write
    tokens each have their name recorded as the actor of the proposals they send; a revoked
    token is refused within about a second; PLANLEDGER_TOKEN stays an admin token."""
    home = tmp_path / "home"
    env = {**os.environ, "PLANLEDGER_HOME": str(home)}
    tokens = {}
    for name, scope in (("auditor", "read"), ("agent-a", "write"), ("agent-b", "write")):
        made = subprocess.run(
            [
                planledger_command(),
                "--database",
                database_url,
                "tokens",
                "add",
                name,
                "--scope",
                scope,
                "--json",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert made.returncode == 0, made.stderr
        tokens[name] = json.loads(made.stdout)["token"]
    with running_server(database_url, home, token=TOKEN) as server:
        with server.client(anonymous=True) as anonymous:
            assert anonymous.get("/sessions").status_code == 401
            handoff = anonymous.get(f"/ui?token={tokens['auditor']}")  # a browser's first visit
            assert handoff.status_code == 303
            assert anonymous.get("/sessions").status_code == 200  # by the cookie it was given
        with server.client(tokens["agent-a"]) as a, server.client(tokens["agent-b"]) as b:
            open_session(a, "s1")
            propose(a, "s1", PLAN_1, 200)
            propose(b, "s1", PLAN_2, 200)
        with server.client(tokens["auditor"]) as auditor:
            before = {
                path: get_json(auditor, path) for path in ("/sessions/s1", "/sessions/s1/plan")
            }
            for method, path, body in GUARDED_ROUTES:
                response = auditor.request(method, path, json=body) if method != "GET" else None
                if response is not None:
                    assert response.status_code == 403, (method, path, response.text)
                    assert response.json()["error"]["code"] == "forbidden"
            for path in ("/sessions", "/sessions/s1/plan/history", "/ui", "/docs"):
                assert auditor.get(path).status_code == 200, path
            assert {path: get_json(auditor, path) for path in before} == before
            history = get_json(auditor, "/sessions/s1/plan/history")["entries"]
        actors = [e["actor"] for e in history if e["kind"] == "proposed"]
        assert actors == ["agent-a", "agent-b"]
        with server.client() as admin:  # PLANLEDGER_TOKEN
            propose(admin, "s1", PLAN_3, 200)
            history = get_json(admin, "/sessions/s1/plan/history")["entries"]
        assert history[-2]["actor"] == "PLANLEDGER_TOKEN"
        revoked = subprocess.run(
            [planledger_command(), "--database", database_url, "tokens", "revoke", "agent-b"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert revoked.returncode == 0, revoked.stderr
        with server.client(tokens["agent-b"]) as b:
            deadline = time.monotonic() + 5
            while (response := b.get("/sessions/s1")).status_code == 200:
                assert time.monotonic() < deadline, "a revoked token was still let in"
                time.sleep(0.1)
            assert response.status_code == 401


def test_a_token_in_an_api_url_is_refused(sqlite_url: str, tmp_path: Path) -> None:
    """The token comes from the Authorization header or the web page's cookie, never from an
    API URL: `?token=` alone is a 401 on every API route, /docs and /openapi.json. Only a web
    page takes it, once, to set that cookie (which then opens the API)."""
    with running_server(sqlite_url, tmp_path / "home", token=TOKEN) as server:
        with server.client() as api:
            open_session(api, "s1")
        with server.client(anonymous=True) as anonymous:
            for method, path, body in GUARDED_ROUTES:
                if path.startswith("/ui"):
                    continue
                url = f"{path}{'&' if '?' in path else '?'}token={TOKEN}"
                with anonymous.stream(method, url, json=body) as response:  # SSE: no waiting
                    assert response.status_code == 401, (method, url, response.status_code)
                    response.read()
                assert response.json()["error"]["code"] == "unauthorized", (method, url)
            assert anonymous.get("/sessions/s1").status_code == 401
            handoff = anonymous.get(f"/ui?token={TOKEN}")
            assert handoff.status_code == 303 and handoff.headers["location"] == "/ui"
            assert handoff.cookies["planledger_token"] == TOKEN
            opened = anonymous.get("/sessions/s1")  # the client now sends the cookie
            assert opened.status_code == 200, opened.text


# -- 4. bad bodies ----------------------------------------------------------------------------

JSON_HEADERS = {"content-type": "application/json"}


def chunked(payload: bytes, size: int = 16 * 1024) -> Iterator[bytes]:
    for start in range(0, len(payload), size):
        yield payload[start : start + size]


def bad_requests() -> list[tuple[str, str, str, dict[str, Any], int | None]]:
    """(label, method, path, httpx arguments, expected status or None for any 4xx)."""
    raw: dict[str, Any] = {"headers": JSON_HEADERS}
    big_title = {**PLAN_1, "title": "x" * (MAX_BODY_BYTES + 1)}
    big = json.dumps(big_title).encode()
    nested = b'{"title": ' + b"[" * 5000 + b"]" * 5000 + b', "steps": []}'
    lone_surrogate_title = b'{"title": "a\\ud800b", "steps": []}'
    lone_surrogate_key = b'{"\\udfff": 1, "title": "t", "steps": []}'
    plan = "/sessions/s/plan"
    return [
        ("session: not JSON", "POST", "/sessions", {"content": b"{nope", **raw}, 400),
        ("session: empty", "POST", "/sessions", {"content": b"", **raw}, 422),
        ("session: array", "POST", "/sessions", {"json": [{"session_id": "n1"}]}, 422),
        ("session: null", "POST", "/sessions", {"content": b"null", **raw}, 422),
        ("session: wrong type", "POST", "/sessions", {"json": {"session_id": 5}}, 422),
        ("session: missing id", "POST", "/sessions", {"json": {"mode": "work"}}, 422),
        (
            "session: bad mode",
            "POST",
            "/sessions",
            {"json": {"session_id": "n2", "mode": "x"}},
            422,
        ),
        ("session: form", "POST", "/sessions", {"data": {"session_id": "n3"}}, 422),
        (
            "session: surrogate",
            "POST",
            "/sessions",
            {"content": b'{"session_id": "\\ud800"}', **raw},
            422,
        ),
        ("mode: unknown", "PUT", "/sessions/s/mode", {"json": {"mode": "chaos"}}, 422),
        ("mode: upper", "PUT", "/sessions/s/mode", {"json": {"mode": "PLAN"}}, 422),
        ("mode: null", "PUT", "/sessions/s/mode", {"json": {"mode": None}}, 422),
        ("mode: missing", "PUT", "/sessions/s/mode", {"json": {}}, 422),
        ("mode: string body", "PUT", "/sessions/s/mode", {"json": "plan"}, 422),
        ("mode: not JSON", "PUT", "/sessions/s/mode", {"content": b"plan", **raw}, 400),
        ("plan: not JSON", "POST", plan, {"content": b"{not json", **raw}, 400),
        ("plan: truncated", "POST", plan, {"content": b'{"title": "x"', **raw}, 400),
        ("plan: empty", "POST", plan, {"content": b"", **raw}, 422),
        ("plan: array", "POST", plan, {"json": [PLAN_2]}, 422),
        ("plan: string", "POST", plan, {"json": "plan"}, 422),
        ("plan: number", "POST", plan, {"json": 42}, 422),
        ("plan: null", "POST", plan, {"content": b"null", **raw}, 422),
        ("plan: empty object", "POST", plan, {"json": {}}, 422),
        ("plan: both forms", "POST", plan, {"json": {**PLAN_2, "plan": []}}, 422),
        ("plan: wrong types", "POST", plan, {"json": {"title": 5, "steps": "x"}}, 422),
        ("plan: step not object", "POST", plan, {"json": {"title": "t", "steps": [5]}}, 422),
        (
            "plan: step field types",
            "POST",
            plan,
            {"json": {"title": "t", "steps": [{"id": 1, "title": 2, "status": 3}]}},
            422,
        ),
        ("plan: missing steps", "POST", plan, {"json": {"title": "t"}}, 422),
        ("plan: missing status", "POST", plan, {"json": {**PLAN_2, "steps": [{"id": "a"}]}}, 422),
        ("plan: mode field", "POST", plan, {"json": {**PLAN_2, "mode": "plan"}}, 422),
        (
            "plan: collaboration_mode",
            "POST",
            plan,
            {"json": {**PLAN_2, "collaboration_mode": "plan"}},
            422,
        ),
        ("plan: unknown field", "POST", plan, {"json": {**PLAN_2, "notes": "x"}}, 422),
        (
            "plan: revision string",
            "POST",
            plan,
            {"json": {**PLAN_2, "expected_revision": "1"}},
            422,
        ),
        (
            "plan: revision negative",
            "POST",
            plan,
            {"json": {**PLAN_2, "expected_revision": -1}},
            422,
        ),
        ("plan: revision bool", "POST", plan, {"json": {**PLAN_2, "expected_revision": True}}, 422),
        ("plan: revision float", "POST", plan, {"json": {**PLAN_2, "expected_revision": 1.5}}, 422),
        (
            "plan: revision NaN",
            "POST",
            plan,
            {"content": b'{"title": "t", "steps": [], "expected_revision": NaN}', **raw},
            400,
        ),
        (
            "plan: revision huge",
            "POST",
            plan,
            {"json": {**PLAN_2, "expected_revision": 2**70}},
            409,
        ),
        (
            "plan: 5000 digits",
            "POST",
            plan,
            {"content": b'{"expected_revision": 1' + b"0" * 5000 + b"}", **raw},
            None,
        ),
        (
            "plan: 600 deep (1.2 KB)",
            "POST",
            plan,
            {"content": b'{"plan": [], "notes": ' + b"[" * 600 + b"]" * 600 + b"}", **raw},
            422,
        ),
        ("plan: proposal_id type", "POST", plan, {"json": {**PLAN_2, "proposal_id": 5}}, 422),
        ("plan: proposal_id path", "POST", plan, {"json": {**PLAN_2, "proposal_id": "../x"}}, 422),
        ("plan: goal_id type", "POST", plan, {"json": {**PLAN_2, "goal_id": ["g"]}}, 422),
        ("plan: codex not list", "POST", plan, {"json": {"plan": "do it"}}, 422),
        ("plan: codex items", "POST", plan, {"json": {"plan": [1, None]}}, 422),
        ("plan: invalid UTF-8", "POST", plan, {"content": b'{"title": "\xff"}', **raw}, None),
        ("plan: nested 5000 deep", "POST", plan, {"content": nested, **raw}, None),
        ("plan: lone surrogate", "POST", plan, {"content": lone_surrogate_title, **raw}, 422),
        ("plan: surrogate key", "POST", plan, {"content": lone_surrogate_key, **raw}, 422),
        ("plan: oversized", "POST", plan, {"content": big, **raw}, 413),
        ("plan: oversized chunked", "POST", plan, {"content": chunked(big), **raw}, 413),
        (
            "plan: oversized session",
            "POST",
            "/sessions",
            {"json": {"session_id": "n4", "pad": "x" * MAX_BODY_BYTES}},
            413,
        ),
        ("goal: empty objective", "POST", "/sessions/s/goals", {"json": _goal("n1", "")}, 422),
        ("goal: blank objective", "POST", "/sessions/s/goals", {"json": _goal("n2", "  ")}, 422),
        (
            "goal: separator objective",
            "POST",
            "/sessions/s/goals",
            {"json": _goal("n3", "\x1c")},
            422,
        ),
        (
            "goal: long objective",
            "POST",
            "/sessions/s/goals",
            {"json": _goal("n4", "x" * 2001)},
            422,
        ),
        (
            "goal: surrogate objective",
            "POST",
            "/sessions/s/goals",
            {"content": b'{"goal_id": "n5", "objective": "\\ud800"}', **raw},
            422,
        ),
        ("goal: bad id", "POST", "/sessions/s/goals", {"json": _goal(".n6", "x")}, 422),
        (
            "goal: id type",
            "POST",
            "/sessions/s/goals",
            {"json": {"goal_id": 7, "objective": "x"}},
            422,
        ),
        ("goal: missing objective", "POST", "/sessions/s/goals", {"json": {"goal_id": "n7"}}, 422),
        ("goal: array", "POST", "/sessions/s/goals", {"json": [_goal("n8", "x")]}, 422),
        ("goal: unknown action", "POST", "/sessions/s/goals/g/explode", {}, 422),
        ("plan: revision query", "GET", "/sessions/s/plan?revision=x", {}, 422),
        ("plan: revision too big", "GET", f"/sessions/s/plan?revision={2**63}", {}, 422),
        ("compaction: negative", "GET", "/sessions/s/plan/compaction?max_chars=-5", {}, 422),
        ("compaction: text", "GET", "/sessions/s/plan/compaction?max_chars=x", {}, 422),
        ("events: bad Last-Event-ID", "GET", "/sessions/s/events", _last_event_id("x"), 422),
        ("events: negative id", "GET", "/sessions/s/events", _last_event_id("-1"), 422),
        ("events: bad after", "GET", "/sessions/s/events?after=x", {}, 422),
        ("path: bad session id", "GET", "/sessions/.s", {}, 422),
        ("path: long session id", "GET", f"/sessions/{'x' * 129}/plan", {}, 422),
    ]


def _goal(goal_id: str, objective: str) -> dict[str, str]:
    return {"goal_id": goal_id, "objective": objective}


def _last_event_id(value: str) -> dict[str, Any]:
    return {"headers": {"Last-Event-ID": value}}


def test_bad_bodies_are_4xx_json_and_change_nothing(api: httpx.Client) -> None:
    open_session(api, "s")
    propose(api, "s", PLAN_2, 200)
    api.post("/sessions/s/goals", json={"goal_id": "g", "objective": "Ship"})
    before_session = get_json(api, "/sessions/s")
    before_plan = get_json(api, "/sessions/s/plan")

    problems = []
    for label, method, path, arguments, expected in bad_requests():
        try:
            response = api.request(method, path, **arguments)
        except httpx.HTTPError as error:  # e.g. the server dropped the connection
            problems.append(f"{label}: {type(error).__name__}: {error}")
            continue
        status = response.status_code
        wrong = status != expected if expected is not None else not 400 <= status < 500
        if wrong or not response.headers.get("content-type", "").startswith("application/json"):
            problems.append(f"{label}: {status} {response.text[:200]!r}")
            continue
        try:
            body = response.json()
        except ValueError:
            problems.append(f"{label}: not JSON: {response.text[:200]!r}")
            continue
        if not isinstance(body, dict) or not ({"error", "detail", "status"} & set(body)):
            problems.append(f"{label}: unexpected body {body!r}")
    assert not problems, "\n".join(problems)

    assert get_json(api, "/sessions/s") == before_session
    after_plan = get_json(api, "/sessions/s/plan")
    assert after_plan["revision"] == before_plan["revision"] == 1
    assert after_plan["steps"] == before_plan["steps"] and after_plan["title"] == PLAN_2["title"]
    kinds = [e["kind"] for e in get_json(api, "/sessions/s/plan/history")["entries"]]
    assert kinds.count("committed") == 1
    for created in ("n1", "n2", "n3", "n4"):
        assert api.get(f"/sessions/{created}").status_code == 404

    # The read side is still live: a good commit shows at once, and health has caught up.
    committed = propose(api, "s", PLAN_3, 200)
    view = get_json(api, "/sessions/s/plan")
    assert view["revision"] == 2 and view["steps"] == PLAN_3["steps"]
    assert get_json(api, "/healthz")["store_position"] >= committed["store_position"]


def test_text_the_database_cannot_store_never_stalls_the_views(
    server: Server, api: httpx.Client
) -> None:
    """A NUL character (which PostgreSQL JSON cannot hold) must not freeze the read side."""
    open_session(api, "nul")
    propose(api, "nul", PLAN_1, 200)
    payloads = [
        {**PLAN_1, "title": "with \x00 inside"},
        {**PLAN_1, "colour\x00": "x"},
        {**PLAN_1, "steps": [{**PLAN_1["steps"][0], "title": "a\x00b"}, PLAN_1["steps"][1]]},
        {"plan": [{"step": "nul \x00", "status": "pending"}]},
    ]
    for payload in payloads:
        response = api.post("/sessions/nul/plan", json=payload)
        assert response.status_code < 500, response.text
        assert response.headers["content-type"].startswith("application/json")
    revision = get_json(api, "/sessions/nul/plan")["revision"]
    with event_stream(server, "nul") as stream:
        history = get_json(api, "/sessions/nul/plan/history")
        stream.take(len(history["entries"]))
        committed = propose(api, "nul", PLAN_2, 200)
        assert committed["revision"] == revision + 1
        assert [e.event for e in stream.take(2)] == ["plan.proposed", "plan.committed"]
    view = get_json(api, "/sessions/nul/plan")
    assert view["revision"] == revision + 1 and view["steps"] == PLAN_2["steps"]
    health = get_json(api, "/healthz")
    assert health["store_position"] >= committed["store_position"]


# -- PostgreSQL: concurrency and two servers on one database ----------------------------------


def test_concurrent_writers_on_postgres(postgres_url: str, tmp_path: Path) -> None:
    with running_server(postgres_url, tmp_path / "home") as server, server.client() as api:
        open_session(api, "race")
        propose(api, "race", PLAN_1, 200)
        barrier = threading.Barrier(8)
        results: list[httpx.Response] = []
        lock = threading.Lock()

        def write(payload: dict[str, Any]) -> None:
            with server.client() as own:
                barrier.wait(timeout=10)
                response = own.post("/sessions/race/plan", json=payload)
            with lock:
                results.append(response)

        def run(payloads: list[dict[str, Any]]) -> list[httpx.Response]:
            results.clear()
            threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=30)
            assert len(results) == len(payloads)
            return list(results)

        # Eight writers on revision 1: exactly one commits, the others conflict.
        same_base = [{**PLAN_2, "title": f"Writer {i}", "expected_revision": 1} for i in range(8)]
        statuses = sorted(r.status_code for r in run(same_base))
        assert statuses == [200] + [409] * 7, statuses
        view = get_json(api, "/sessions/race/plan")
        assert view["revision"] == 2

        # Without expected_revision each is re-decided: all commit, on distinct revisions.
        free = [{**PLAN_2, "title": f"Free {i}"} for i in range(8)]
        responses = run(free)
        assert [r.status_code for r in responses] == [200] * 8, [r.text for r in responses]
        revisions = sorted(r.json()["revision"] for r in responses)
        assert revisions == list(range(3, 11))
        for response in responses:  # each POST saw its own commit
            assert response.json()["plan"]["revision"] == response.json()["revision"]
        assert get_json(api, "/sessions/race/plan")["revision"] == 10
        kinds = [e["kind"] for e in get_json(api, "/sessions/race/plan/history")["entries"]]
        assert kinds.count("committed") == 10


def test_a_server_whose_role_may_only_read_serves_reads_and_refuses_writes(
    postgres_url: str, reader_role: str, tmp_path: Path
) -> None:
    """A server on a read-only role (an auditor's, a standby's) answers every read as writers
    stored it; a write is a 503 `read_only_store` error, never a 500, and records nothing."""
    with running_server(postgres_url, tmp_path / "writer") as server, server.client() as api:
        open_session(api, "audited")
        propose(api, "audited", PLAN_1, 200)
    reader_url = as_reader(postgres_url, reader_role)
    with running_server(reader_url, tmp_path / "reader") as server, server.client() as api:
        assert get_json(api, "/sessions/audited/plan")["revision"] == 1
        assert get_json(api, "/healthz")["status"] in ("ok", "degraded")
        for path, body in (("/sessions/audited/plan", PLAN_2), ("/sessions", {"session_id": "x"})):
            response = api.post(path, json=body)
            assert response.status_code == 503, response.text
            assert response.json()["error"]["code"] == "read_only_store"
        assert get_json(api, "/sessions/audited/plan")["revision"] == 1
        get_json(api, "/sessions/x", status=404)


def test_two_servers_share_one_postgres_database(postgres_url: str, tmp_path: Path) -> None:
    with (
        running_server(postgres_url, tmp_path / "a") as server_a,
        running_server(postgres_url, tmp_path / "b") as server_b,
        server_a.client() as a,
        server_b.client() as b,
    ):
        open_session(a, "shared")
        assert get_json(b, "/sessions/shared")["session_id"] == "shared"
        assert b.post("/sessions", json={"session_id": "shared"}).status_code == 409

        with event_stream(server_b, "shared") as on_b:
            committed = propose(a, "shared", PLAN_1, 200)
            live = on_b.take(2)
            assert [e.event for e in live] == ["plan.proposed", "plan.committed"]
            assert live[1].id == committed["store_position"]
            assert live[1].data["plan"]["steps"] == PLAN_1["steps"]
            view = get_json(b, "/sessions/shared/plan")
            assert view["revision"] == 1 and view["steps"] == PLAN_1["steps"]

            # B commits on top; A's cached plan is stale and must not win or lose the write.
            assert propose(b, "shared", {**PLAN_2, "expected_revision": 1}, 200)["revision"] == 2
            stale = propose(a, "shared", {**PLAN_3, "expected_revision": 1}, 409)
            assert stale["current_revision"] == 2
            third = propose(a, "shared", {**PLAN_3, "expected_revision": 2}, 200)
            assert third["revision"] == 3
            more = on_b.take(6)
            assert [e.event for e in more] == [
                "plan.proposed",
                "plan.committed",
                "plan.proposed",
                "plan.rejected",
                "plan.proposed",
                "plan.committed",
            ]
            assert more[-1].id == third["store_position"]
            assert on_b.quiet(0.3) == []
        assert get_json(b, "/sessions/shared/plan")["revision"] == 3
        assert get_json(a, "/sessions/shared/plan/history") == get_json(
            b, "/sessions/shared/plan/history"
        )
        with event_stream(server_a, "shared") as on_a:
            ids_a = [e.id for e in on_a.take(8)]
        assert ids_a == [e.id for e in live + more]

        a.post("/sessions/shared/goals", json={"goal_id": "g", "objective": "Ship"})
        assert get_json(b, "/sessions/shared/goals")[0]["state"] == "active"
        a.put("/sessions/shared/mode", json={"mode": "plan"})
        assert get_json(b, "/sessions/shared")["mode"] == "plan"


# -- 6. schemathesis against our own OpenAPI document -----------------------------------------


def test_schemathesis_finds_no_server_error_or_schema_break(
    sqlite_server: Server, tmp_path: Path
) -> None:
    st = Path(sys.executable).parent / "st"
    command = str(st) if st.exists() else shutil.which("st")
    if not command:
        pytest.fail("schemathesis (`st`) is not installed (pip install -e '.[test]')")
    with sqlite_server.client() as api:  # a session, so some requests reach real data
        open_session(api, "0")
        propose(api, "0", PLAN_1, 200)
    result = subprocess.run(
        [
            command,
            "--no-color",
            "run",
            f"{sqlite_server.url}/openapi.json",
            "--checks",
            "not_a_server_error,response_schema_conformance,content_type_conformance",
            "--max-examples",
            "20",
            "--seed",
            "20240601",
            "--exclude-path",
            "/sessions/{session_id}/events",
            "--request-timeout",
            "10",
            "--generation-database",
            "none",
            "--workers",
            "1",  # hypothesis describes filters with ast.parse, which is not thread-safe on 3.11
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    generated = re.search(r"(\d+) generated, (\d+) passed", output)
    assert generated, output[-3000:]
    assert int(generated.group(1)) >= 300 and generated.group(1) == generated.group(2), output


def test_a_corrupt_session_is_reported_and_the_others_keep_working(
    sqlite_url: str, tmp_path: Path
) -> None:
    import sqlite3

    with running_server(sqlite_url, tmp_path / "home") as server, server.client() as api:
        open_session(api, "s")
        open_session(api, "ok")
        with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
            db.execute(
                "INSERT INTO stored_events (originator_id, originator_version, topic, state) "
                "VALUES ('plan:s', 99, 'domain.plan:Plan.PlanCommitted', x'7b6e6f74')"
            )
        deadline = time.monotonic() + 10
        while (response := api.get("/sessions/s/plan")).status_code == 200:
            assert time.monotonic() < deadline, "the corrupt session was never reported"
            time.sleep(0.05)
        assert response.status_code == 409
        error = response.json()["error"]
        # a row inserted by hand carries no chain
        assert error["code"] == "corrupt_history" and "chain_broken" in error["message"]
        assert api.get("/sessions/s/plan/history").status_code == 409
        compaction = get_json(api, "/sessions/s/plan/compaction")
        assert compaction["state"] == "unreadable"
        assert propose(api, "ok", PLAN_1, 200)["revision"] == 1  # the others keep working
        assert get_json(api, "/healthz")["status"] == "ok"


def test_the_latest_checkpoint_is_served_and_verifies_offline(
    sqlite_url: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "PLANLEDGER_HOME": str(home)}
    command = [planledger_command(), "--database", sqlite_url]
    with running_server(sqlite_url, home) as server, server.client() as api:
        missing = get_json(api, "/checkpoint", 404)
        assert missing["error"]["code"] == "checkpoint_not_found"
        open_session(api, "s1")
        propose(api, "s1", PLAN_1, 200)
        made = subprocess.run(
            [*command, "checkpoint"], capture_output=True, text=True, env=env, timeout=60
        )
        assert made.returncode == 0, made.stderr
        served = get_json(api, "/checkpoint")
    assert served == json.loads(made.stdout)
    assert served["sessions"] == 1 and served["position"] >= 3
    statement = tmp_path / "served.json"
    statement.write_text(json.dumps(served))
    checked = subprocess.run(
        [
            *command,
            "verify",
            "--checkpoint",
            str(statement),
            "--public-key",
            str(home / "keys" / "checkpoint.pub"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_server_signs_a_checkpoint_periodically(sqlite_url: str, tmp_path: Path) -> None:
    extra = ("--checkpoint-every", "1")
    with (
        running_server(sqlite_url, tmp_path / "home", extra=extra) as server,
        server.client() as api,
    ):
        open_session(api, "s1")
        position = propose(api, "s1", PLAN_1, 200)["store_position"]
        deadline = time.monotonic() + 10
        while (response := api.get("/checkpoint")).status_code != 200 or (
            response.json()["position"] < position
        ):
            assert time.monotonic() < deadline, "no checkpoint of the new events was made"
            time.sleep(0.2)
    assert (tmp_path / "home" / "keys" / "checkpoint.pem").exists()


def test_docs_work_offline_and_declare_the_bearer_scheme(tmp_path: Path, sqlite_url: str) -> None:
    with (
        running_server(sqlite_url, tmp_path / "home", token=TOKEN) as server,
        server.client() as api,
    ):
        docs = api.get("/docs")
        assert docs.status_code == 200 and "swagger" in docs.text.lower()
        assets = re.findall(r'(?:src|href)="([^"]+)"', docs.text)
        assert assets and all(a.startswith("/") for a in assets), assets  # nothing from a CDN
        for asset in assets:
            assert api.get(asset).status_code == 200, asset
        schema = get_json(api, "/openapi.json")
        assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
        assert schema["security"] == [{"bearer": []}]
        error = api.get("/nowhere")
        assert error.status_code == 404 and set(error.json()["error"]) >= {"code", "message"}


def test_serving_beyond_loopback_without_a_token_says_so(tmp_path: Path, sqlite_url: str) -> None:
    env = {**os.environ, "PLANLEDGER_HOME": str(tmp_path / "home")}
    env.pop("PLANLEDGER_TOKEN", None)
    process = subprocess.Popen(
        [
            planledger_command(),
            "--database",
            sqlite_url,
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stderr is not None
        lines = [process.stderr.readline() for _ in range(2)]
    finally:
        stop(process)
    assert "without a token" in lines[1] and "PLANLEDGER_TOKEN" in lines[1], lines
