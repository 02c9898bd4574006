"""Racing first starts: many processes and servers meeting a fresh database at once.

The spec: "concurrent first starts never fail (schema creation is idempotent and serialised)";
two writers deciding on one revision cannot both commit, the loser exits 4 (never 1).
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from planledger.service import open_planledger
from tests.faults.support import STRICT_1, STRICT_2, Run, run_together, schema_tables, servers

pytestmark = pytest.mark.faults

PROCESSES = 8
SERVERS = 4
SCHEMA_ERRORS = ("tuple concurrently updated", "UniqueViolation", "already exists", "Traceback")


def assert_no_schema_race(runs: list[Run]) -> None:
    for finished in runs:
        for text in SCHEMA_ERRORS:
            assert text not in finished.stderr, str(finished)


def race_first_starts(home: Path, database: str) -> None:
    """8 `session open` on an empty database, then 8 `plan update` racing revision 1 -> 2."""
    opened = run_together(
        home, database, [(["session", "open", f"s{n}"], None) for n in range(PROCESSES)]
    )
    assert_no_schema_race(opened)
    assert [r.returncode for r in opened] == [0] * PROCESSES, "\n".join(map(str, opened))

    with open_planledger(database, home=None) as ledger:
        assert ledger.submit("s0", STRICT_1).status == "committed"
    racing = run_together(
        home,
        database,
        [
            (
                ["plan", "update", "s0", "-", "--expected-revision", "1", "--json"],
                json.dumps({**STRICT_2, "title": f"Ship the export ({n})"}),
            )
            for n in range(PROCESSES)
        ],
    )
    assert_no_schema_race(racing)
    codes = sorted(r.returncode for r in racing)
    assert codes == [0] + [4] * (PROCESSES - 1), "\n".join(map(str, racing))
    losers = [r.json() for r in racing if r.returncode == 4]
    assert all(body["status"] == "conflict" for body in losers), losers
    winner = next(r.json() for r in racing if r.returncode == 0)

    with open_planledger(database, home=None) as ledger:
        commits = [e for e in ledger.history("s0").entries if e.kind == "committed"]
        assert [c.revision for c in commits] == [1, 2], commits
        assert commits[-1].proposal_id == winner["proposal_id"]
        listed = {s.session_id for s in ledger.sessions().sessions}
        assert listed == {f"s{n}" for n in range(PROCESSES)}
        assert ledger.verify().ok


@pytest.mark.postgres
def test_racing_first_starts_on_a_fresh_postgres_schema(postgres_url: str, tmp_path: Path) -> None:
    assert schema_tables(postgres_url) == set()  # really the first start
    race_first_starts(tmp_path / "home", postgres_url)


def test_racing_first_starts_on_a_fresh_sqlite_file(tmp_path: Path) -> None:
    database = tmp_path / "fresh" / "ledger.sqlite3"
    assert not database.exists()
    race_first_starts(tmp_path / "home", f"sqlite:///{database}")


@pytest.mark.postgres
def test_servers_started_together_on_a_fresh_schema(postgres_url: str, tmp_path: Path) -> None:
    """4 `planledger serve` on an empty schema: all healthy, and all serve one store."""
    assert schema_tables(postgres_url) == set()
    with servers(postgres_url, tmp_path, SERVERS) as started:
        first = httpx.post(f"{started[0].url}/sessions", json={"session_id": "s1"}, timeout=15)
        assert first.status_code == 201, first.text
        for server in started:
            shown = httpx.get(f"{server.url}/sessions/s1", timeout=15)
            assert shown.status_code == 200, (server.url, shown.text)
            assert httpx.get(f"{server.url}/healthz", timeout=15).status_code == 200
        for server in started:
            output = server.output()
            assert "Traceback" not in output and "Exception in" not in output, output
