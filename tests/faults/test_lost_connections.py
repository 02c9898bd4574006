"""Lost connections: `pg_terminate_backend` on a running server's connections (only its own:
the server carries a unique PGAPPNAME). Writes, reads, the live feed and /healthz must heal
within seconds, and nothing acknowledged may be lost or doubled."""

from __future__ import annotations

import queue
import statistics
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_server import EventStream, Server
from tests.faults.support import (
    app_name,
    codex,
    connections_of,
    servers,
    terminate_connections_of,
    wait_until,
)

pytestmark = [pytest.mark.faults, pytest.mark.postgres]

HEAL_WITHIN = 5.0  # seconds after the kill: writes commit, /healthz is 200 again
TIMEOUT = httpx.Timeout(10.0)


@dataclass
class Writer:
    """Posts plans to one session; remembers every acknowledged commit and every failure."""

    api: httpx.Client
    session_id: str
    acknowledged: list[str] = field(default_factory=list)  # proposal ids answered with 200
    failures: list[tuple[int, str]] = field(default_factory=list)

    def commit(self, n: int, deadline: float) -> float:
        """Commit plan `n`, retrying the same proposal until `deadline`; returns the seconds
        the successful attempt took. Any answer but 200 and a JSON 503 fails the test."""
        proposal_id = f"p{n}-{uuid.uuid4().hex[:8]}"
        payload = {**codex(n), "proposal_id": proposal_id}
        while True:
            started = time.monotonic()
            try:
                response = self.api.post(f"/sessions/{self.session_id}/plan", json=payload)
            except httpx.TransportError as error:
                self.failures.append((0, repr(error)))
            else:
                took = time.monotonic() - started
                if response.status_code == 200:
                    assert response.json()["status"] == "committed", response.text
                    assert response.json()["proposal_id"] == proposal_id, response.text
                    self.acknowledged.append(proposal_id)
                    return took
                self.failures.append((response.status_code, response.text[:300]))
                assert response.status_code == 503, f"{response.status_code}: {response.text}"
                assert set(response.json()) == {"error"}, response.text
                assert {"code", "message"} <= set(response.json()["error"]), response.text
            if time.monotonic() > deadline:
                pytest.fail(f"plan {n} not committed in time; failures: {self.failures}")
            time.sleep(0.1)


def committed_ids(events: list[dict[str, Any]]) -> list[str]:
    return [e["proposal_id"] for e in events if e.get("kind") == "committed"]


def drain(stream: EventStream, want: set[str], timeout: float) -> tuple[list[dict[str, Any]], bool]:
    """Events from `stream` until every proposal id in `want` was committed, the stream ended
    (True), or `timeout` passed."""
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while not want <= set(committed_ids(got)):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return got, False
        try:
            event = stream.events.get(timeout=remaining)
        except queue.Empty:
            return got, False
        if event is None:
            return got, True
        assert event.id is not None and event.data["store_position"] == event.id
        got.append(event.data)
    return got, False


def history_ids(api: httpx.Client, session_id: str) -> list[str]:
    response = api.get(f"/sessions/{session_id}/plan/history")
    assert response.status_code == 200, response.text
    entries = response.json()["entries"]
    commits = [e for e in entries if e["kind"] == "committed"]
    assert [c["revision"] for c in commits] == list(range(1, len(commits) + 1)), commits
    return [c["proposal_id"] for c in commits]


def health_back(server: Server) -> float:
    """Seconds until /healthz is 200 again; every answer meanwhile is a JSON 200 or 503."""
    started = time.monotonic()

    def probe() -> float | None:
        response = httpx.get(f"{server.url}/healthz", timeout=TIMEOUT)
        assert response.status_code in (200, 503), response.text
        body = response.json()
        if response.status_code == 503:
            assert body["status"] == "unavailable" and body["error"], body
            return None
        return time.monotonic() - started

    return wait_until(probe, HEAL_WITHIN, "/healthz back to 200")


def kill_server_connections(name: str) -> float:
    """Terminate the connections of the server named `name`; returns when it happened."""
    assert connections_of(name) > 0, "the server's connections carry no PGAPPNAME"
    assert terminate_connections_of(name) > 0
    return time.monotonic()


def test_server_heals_after_its_connections_are_terminated(
    postgres_url: str, tmp_path: Path
) -> None:
    """After each kill: a retried POST commits within seconds (at most a JSON 503 meanwhile,
    never a 500) and later POSTs are quick again; GETs show every acknowledged commit at once;
    /healthz is 200 again; the open SSE stream (or one resumed with Last-Event-ID) delivers
    every later commit once. In the end the history is exactly the acknowledged commits."""
    name = app_name()
    with (
        servers(postgres_url, tmp_path, 1, env={"PGAPPNAME": name}) as (server,),
        server.client() as api,
    ):
        assert api.post("/sessions", json={"session_id": "s1"}).status_code == 201
        writer = Writer(api, "s1")
        for n in range(3):
            writer.commit(n, time.monotonic() + 10)
        stream = EventStream(server, "/sessions/s1/events")
        try:
            before, ended = drain(stream, set(writer.acknowledged), 10.0)
            assert not ended, stream.error
            last_seen = before_kills = max(e["store_position"] for e in before)
            acknowledged_before = len(writer.acknowledged)
            for round_ in (1, 2):  # the second kill finds the healed connections
                killed_at = kill_server_connections(name)
                later = len(writer.acknowledged)
                writer.commit(10 * round_, killed_at + HEAL_WITHIN)
                took = [writer.commit(10 * round_ + n, time.monotonic()) for n in range(1, 5)]
                assert statistics.median(took) < 1.0, f"each POST takes seconds: {took}"
                # A writer reads its own write, at once.
                assert history_ids(api, "s1") == writer.acknowledged
                view = api.get("/sessions/s1/plan")
                assert view.status_code == 200, view.text
                assert view.json()["revision"] == len(writer.acknowledged), view.text
                health_back(server)
                assert time.monotonic() - killed_at <= 2 * HEAL_WITHIN, "/healthz heals late"

                want = set(writer.acknowledged[later:])
                events, ended = drain(stream, want, 10.0)
                if ended:  # the server may end a stream: a client resumes where it was
                    stream.close()
                    stream = EventStream(
                        server, "/sessions/s1/events", {"Last-Event-ID": str(last_seen)}
                    )
                    more, _ = drain(stream, want, 10.0)
                    events += more
                seen = committed_ids(events)
                assert want <= set(seen), f"SSE missed {want - set(seen)} (got {seen})"
                assert len(seen) == len(set(seen)), f"SSE delivered a commit twice: {seen}"
                last_seen = max(e["store_position"] for e in events)
        finally:
            stream.close()
        # A client that was away through both kills resumes with Last-Event-ID: every commit
        # since, once each.
        after_kills = writer.acknowledged[acknowledged_before:]
        resumed = EventStream(server, "/sessions/s1/events", {"Last-Event-ID": str(before_kills)})
        try:
            events, _ = drain(resumed, set(after_kills), 10.0)
        finally:
            resumed.close()
        assert committed_ids(events) == after_kills
        # Nothing lost, nothing doubled: the history is exactly the acknowledged commits.
        assert history_ids(api, "s1") == writer.acknowledged
        assert all(status == 503 for status, _ in writer.failures), writer.failures
