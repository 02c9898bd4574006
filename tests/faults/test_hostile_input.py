"""Hostile input: bodies built to exhaust the stack, the CPU, memory or the connection. Each is
a 4xx with a JSON error within seconds, nothing is stored from it, and the server keeps
serving (a slow client trickles its body the whole time)."""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from planledger.clients.mcp.results import ToolFailure
from planledger.clients.mcp.tools import build_tools
from planledger.service import PlanLedger
from tests.e2e.test_server import running_server
from tests.faults.support import codex, one_line_error, run

pytestmark = pytest.mark.faults

ANSWER_WITHIN = 5.0  # seconds for any hostile body
TRICKLE_EVERY = 0.2  # seconds between the bytes of the slow client
TRICKLE_ANSWER_WITHIN = 15.0  # the server cuts a body still arriving after its read timeout

DEEP = 600
DIGITS = 5_000
IDENTICAL = 60_000
UNDER_THE_CAP = 8_000  # identical steps that still fit in the 256 KiB body cap
UNDER_THE_CLI_CAP = 32_000  # identical steps that still fit in the CLI's 1 MiB input cap


def deep_body() -> bytes:
    return b'{"plan": ' + b"[" * DEEP + b"]" * DEEP + b"}"


def huge_integer_body() -> bytes:
    plan = json.dumps(codex(1)["plan"]).encode()
    return b'{"plan": ' + plan + b', "expected_revision": ' + b"9" * DIGITS + b"}"


def identical_steps_body(count: int) -> bytes:
    step = b'{"step":"x","status":"pending"}'
    return b'{"plan":[' + b",".join([step] * count) + b"]}"


def huge_title_body(size: int) -> bytes:
    return json.dumps(
        {"title": "T" * size, "steps": [{"id": "a", "title": "A", "status": "in_progress"}]}
    ).encode()


HOSTILE: dict[str, bytes] = {
    "600-deep nesting": deep_body(),
    "5,000-digit integer": huge_integer_body(),
    "60,000 identical steps": identical_steps_body(IDENTICAL),
    "8,000 identical steps (under the size cap)": identical_steps_body(UNDER_THE_CAP),
    "10 MB title": huge_title_body(10 * 1024 * 1024),
    "200 KB title (under the size cap)": huge_title_body(200 * 1024),
}


def assert_json_error(status: int, body: bytes, what: str) -> dict[str, Any]:
    assert 400 <= status < 500, f"{what}: HTTP {status} {body[:300]!r}"
    data: dict[str, Any] = json.loads(body)
    if status == 422 and data.get("status") == "rejected":  # a proposal decided and rejected
        assert data["violations"], (what, data)
        return data
    assert set(data) == {"error"}, (what, data)
    assert {"code", "message"} <= set(data["error"]), (what, data)
    return data


class Trickle(threading.Thread):
    """A client sending its body one byte every TRICKLE_EVERY seconds; keeps what it got."""

    def __init__(self, url: str, path: str) -> None:
        super().__init__(daemon=True)
        host, port = url.removeprefix("http://").split(":")
        self.address = (host, int(port))
        self.path = path
        self.status = 0
        self.body = b""
        self.seconds = 0.0
        self.sent = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        body = json.dumps(codex(1)).encode() * 40  # far more than the server waits for
        started = time.monotonic()
        try:
            with socket.create_connection(self.address, timeout=5) as sock:
                request = (
                    f"POST {self.path} HTTP/1.1\r\nHost: {self.address[0]}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                )
                sock.sendall(request.encode())
                sock.settimeout(TRICKLE_EVERY)
                answer = b""
                while time.monotonic() - started < TRICKLE_ANSWER_WITHIN:
                    try:
                        chunk = sock.recv(65536)
                    except TimeoutError:
                        if self.sent < len(body):
                            try:
                                sock.sendall(body[self.sent : self.sent + 1])
                                self.sent += 1
                            except OSError:
                                pass  # the server hung up: its answer is already here
                        continue
                    if not chunk:
                        break
                    answer += chunk
                    if _complete(answer):
                        break
            self.seconds = time.monotonic() - started
            head, _, self.body = answer.partition(b"\r\n\r\n")
            if head:
                self.status = int(head.split(b" ", 2)[1])
        except Exception as error:
            self.error = error


def _complete(answer: bytes) -> bool:
    head, found, body = answer.partition(b"\r\n\r\n")
    if not found:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip())
    return False


def chunks(data: bytes, size: int = 64 * 1024) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def test_hostile_bodies_get_a_4xx_json_error_in_seconds(sqlite_url: str, tmp_path: Path) -> None:
    with running_server(sqlite_url, tmp_path / "home") as server, server.client() as api:
        assert api.post("/sessions", json={"session_id": "s1"}).status_code == 201
        trickle = Trickle(server.url, "/sessions/s1/plan")
        trickle.start()
        headers = {"content-type": "application/json"}
        slow: list[str] = []
        for what, body in HOSTILE.items():
            for streamed in (False, True):  # with a Content-Length, and chunked without one
                started = time.monotonic()
                content: bytes | Iterator[bytes] = chunks(body) if streamed else body
                response = api.post("/sessions/s1/plan", content=content, headers=headers)
                took = time.monotonic() - started
                label = f"{what}{' (chunked)' if streamed else ''}"
                assert_json_error(response.status_code, response.content, label)
                if took > ANSWER_WITHIN:
                    slow.append(f"{label}: {took:.1f}s")
                # The server keeps serving between hostile bodies.
                assert api.get("/healthz").status_code == 200, label
        assert not slow, f"answers slower than {ANSWER_WITHIN}s: {slow}"

        # Nothing of them was committed; nothing large was stored.
        view = api.get("/sessions/s1/plan").json()
        assert view["revision"] == 0, view
        committed = api.post("/sessions/s1/plan", json=codex(1))
        assert committed.status_code == 200 and committed.json()["revision"] == 1

        trickle.join(TRICKLE_ANSWER_WITHIN + 5)
        assert trickle.error is None, repr(trickle.error)
        assert trickle.status, f"the slow client got no answer in {trickle.seconds:.1f}s"
        assert_json_error(trickle.status, trickle.body, f"a body trickled ({trickle.sent} bytes)")
        assert trickle.seconds <= TRICKLE_ANSWER_WITHIN, trickle.seconds
        assert api.get("/sessions/s1/plan").json()["revision"] == 1
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as conn:
        (largest,) = conn.execute("SELECT max(length(state)) FROM stored_events").fetchone()
    assert largest < 64 * 1024, f"a hostile body was stored: an event of {largest} bytes"


def test_cli_refuses_hostile_input_with_exit_2_in_seconds(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    home = tmp_path / "home"
    assert run(home, database, "session", "open", "s1").returncode == 0
    for what, body in {
        "100,000-deep nesting": b'{"plan": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "32,000 identical steps (under the CLI cap)": identical_steps_body(UNDER_THE_CLI_CAP),
        **{k: v for k, v in HOSTILE.items() if "10 MB" not in k},
    }.items():
        done = run(home, database, "plan", "update", "s1", stdin=body.decode(), timeout=30)
        assert done.returncode in (2, 3), f"{what}:\n{done}"  # unreadable, or rejected
        if done.returncode == 2:
            one_line_error(done)
        assert done.seconds <= ANSWER_WITHIN, f"{what}:\n{done}"
    shown = run(home, database, "plan", "show", "s1", "--json")
    assert shown.returncode == 0 and shown.json()["revision"] == 0, str(shown)


# -- values JSON does not have, and terminal control characters ----------------------------------

STEP = b'{"step": "Fix it", "status": "in_progress"}'
NOT_JSON: dict[str, bytes] = {
    "NaN": b'{"plan": [' + STEP + b'], "expected_revision": NaN}',
    "Infinity": b'{"plan": [' + STEP + b'], "expected_revision": Infinity}',
    "-Infinity": b'{"plan": [{"step": -Infinity, "status": "pending"}]}',
    "1e400": b'{"plan": [' + STEP + b'], "expected_revision": 1e400}',
    "-1e400 deep": b'{"plan": [' + STEP + b'], "explanation": [[-1e400]]}',
}
CLEAR = "\x1b[2J"
RETITLE = "\x1b]0;pwned\x07"
ESCAPED_PLAN: dict[str, Any] = {
    "title": f"Ship {CLEAR}it",
    "steps": [{"id": "a", "title": f"Do {RETITLE} a", "status": "in_progress"}],
}
EXIT_INVALID = 2
EXIT_REJECTED = 3


def stored_events(database: str) -> int:
    with sqlite3.connect(database.removeprefix("sqlite:///")) as conn:
        (count,) = conn.execute("SELECT count(*) FROM stored_events").fetchone()
    return int(count)


def assert_no_escape(text: str, what: str) -> None:
    for raw in (CLEAR, "\x1b]0;", "\x07", "\x9b"):
        assert raw not in text, f"{what} prints {raw!r} raw: {text[-500:]!r}"


def test_cli_refuses_numbers_json_does_not_have_and_records_nothing(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    home = tmp_path / "home"
    assert run(home, database, "session", "open", "s1").returncode == 0
    before = stored_events(database)
    for what, body in NOT_JSON.items():
        done = run(home, database, "plan", "update", "s1", stdin=body.decode())
        assert done.returncode == EXIT_INVALID, f"{what}:\n{done}"
        assert "not JSON" in one_line_error(done), f"{what}:\n{done}"
    assert stored_events(database) == before
    history = run(home, database, "plan", "history", "s1", "--json")
    assert history.returncode == 0 and history.json()["entries"] == [], str(history)


def test_cli_refuses_terminal_escapes_and_prints_none(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    home = tmp_path / "home"
    assert run(home, database, "session", "open", "s1").returncode == 0
    done = run(home, database, "plan", "update", "s1", "--json", stdin=json.dumps(ESCAPED_PLAN))
    assert done.returncode == EXIT_REJECTED, str(done)
    codes = [v["code"] for v in done.json()["violations"]]
    assert codes.count("control_character") == 2, codes
    assert_no_escape(done.stdout + done.stderr, "plan update")
    human = run(home, database, "plan", "update", "s1", stdin=json.dumps(ESCAPED_PLAN))
    assert human.returncode == EXIT_REJECTED and "control_character" in human.stdout, str(human)
    assert_no_escape(human.stdout + human.stderr, "plan update")
    for args in (("plan", "show", "s1"), ("plan", "history", "s1"), ("session", "list")):
        shown = run(home, database, *args)
        assert shown.returncode == 0, str(shown)
        assert_no_escape(shown.stdout, " ".join(args))
    assert run(home, database, "plan", "show", "s1", "--json").json()["revision"] == 0

    goal = run(home, database, "goal", "start", "s1", "g1", f"Ship {RETITLE} it")
    assert goal.returncode == EXIT_INVALID, str(goal)
    one_line_error(goal)
    opened = run(home, database, "session", "open", f"s{CLEAR}2")
    assert opened.returncode == EXIT_INVALID, str(opened)
    assert_no_escape(opened.stderr, "session open")
    shown = run(home, database, "session", "show", "s1", "--json")
    assert shown.returncode == 0 and shown.json()["goals"] == [], str(shown)


def test_http_answers_400_to_what_is_not_json_and_records_nothing(
    sqlite_url: str, tmp_path: Path
) -> None:
    headers = {"content-type": "application/json"}
    with running_server(sqlite_url, tmp_path / "home") as server, server.client() as api:
        assert api.post("/sessions", json={"session_id": "s1"}).status_code == 201
        before = stored_events(sqlite_url)
        bodies = {**NOT_JSON, "truncated": b'{"plan": [', "not a value": b'{"plan": nope}'}
        for what, body in bodies.items():
            response = api.post("/sessions/s1/plan", content=body, headers=headers)
            assert response.status_code == 400, (what, response.status_code, response.text)
            data = assert_json_error(response.status_code, response.content, what)
            assert data["error"]["code"] == "invalid_json", (what, data)
        assert stored_events(sqlite_url) == before
        assert api.get("/sessions/s1/plan/history").json()["entries"] == []

        rejected = api.post("/sessions/s1/plan", json=ESCAPED_PLAN)
        assert rejected.status_code == 422, rejected.text
        codes = [v["code"] for v in rejected.json()["violations"]]
        assert "control_character" in codes, codes
        assert_no_escape(rejected.text, "POST /sessions/s1/plan")
        assert api.get("/sessions/s1/plan").json()["revision"] == 0
        history = api.get("/sessions/s1/plan/history")
        assert [e["kind"] for e in history.json()["entries"]] == ["proposed", "rejected"]


def test_mcp_tools_refuse_what_is_not_json_and_control_characters(
    sqlite_url: str, new_ledger: Any
) -> None:
    service: PlanLedger = new_ledger(sqlite_url)
    service.open_session("s1")
    tools = {tool.name: tool for tool in build_tools(service, "s1")}
    update_plan = tools["update_plan"].fn
    plan_update = tools["plan_update"].fn
    step = {"step": "Fix it", "status": "in_progress"}
    before = stored_events(sqlite_url)

    async def calls() -> None:
        for value in (float("nan"), float("inf"), float("-inf")):
            with pytest.raises(ToolFailure, match="invalid_json"):
                await update_plan({"plan": [step], "expected_revision": value})
            with pytest.raises(ToolFailure, match="invalid_json"):
                await update_plan({"plan": [{"step": value, "status": "pending"}]})
        assert stored_events(sqlite_url) == before
        result = await plan_update(ESCAPED_PLAN)
        assert result.is_error
        text = result.content[0].text  # type: ignore[union-attr]
        assert "control_character" in text
        assert_no_escape(text, "plan_update")

    anyio.run(calls)
    assert service.plan("s1").revision == 0
