"""An edited row: one committed event rewritten so its plan has two steps in progress.
`verify` names it; from then on the read side refuses that session (never shows the plan),
a rebuild names it too, and every other session keeps working."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from planledger.service import open_planledger
from tests.faults.support import STRICT_1, STRICT_2, Run, one_line_error, run
from tests.integration.storage import edit_event, read_state

pytestmark = pytest.mark.faults

EDITED_POSITION = 5  # plan:s1: 1 created, 2-3 revision 1, 4 proposed, 5 committed revision 2


def two_in_progress(state: dict[str, Any]) -> None:
    """Both steps of a PlanProposed candidate or a PlanCommitted snapshot in progress."""
    plan = state["candidate" if "candidate" in state else "snapshot"]["_data_"]
    for step in plan["steps"]:
        step["status"] = "in_progress"


def assert_names_the_corruption(done: Run, rule: str) -> None:
    text = done.stdout + done.stderr
    assert "s1" in text and str(EDITED_POSITION) in text and rule in text, str(done)


@pytest.mark.parametrize(
    ("store", "edited", "rule"),
    [
        # an edited commit no longer matches its proposal
        ("sqlite", (EDITED_POSITION,), "snapshot_mismatch"),
        # proposal and commit edited alike: only the plan rules can tell
        ("postgres", (EDITED_POSITION - 1, EDITED_POSITION), "multiple_in_progress"),
    ],
    ids=["sqlite-commit-edited", "postgres-proposal-and-commit-edited"],
)
def test_an_edited_row_is_named_and_never_shown(
    store: str, edited: tuple[int, ...], rule: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    database = str(request.getfixturevalue(f"{store}_url"))
    home = tmp_path / "home"

    def cli(*args: str, stdin: Any = None) -> Run:
        return run(home, database, *args, stdin=None if stdin is None else json.dumps(stdin))

    with open_planledger(database, home=None) as ledger:  # the set-up is not under test
        for session in ("s1", "s2"):
            ledger.open_session(session)
            assert ledger.submit(session, STRICT_1).status == "committed"
        assert ledger.submit("s1", STRICT_2).status == "committed"
    committed = read_state(database, "plan:s1", EDITED_POSITION)
    assert committed["revision"] == 2, committed  # the row we mean to edit
    for position in edited:
        edit_event(database, "plan:s1", position, two_in_progress)

    verified = cli("verify", "--json")
    assert verified.returncode == 1, str(verified)
    problems = json.loads(verified.stdout)["problems"]
    assert [(p["session_id"], p["position"]) for p in problems] == [("s1", EDITED_POSITION)]
    assert problems[0]["rule"] == rule and problems[0]["message"], problems
    shown = cli("plan", "show", "s1")
    assert shown.returncode == 1, f"the corrupt plan was shown:\n{shown}"
    one_line_error(shown)
    assert_names_the_corruption(shown, rule)
    assert cli("plan", "history", "s1").returncode == 1

    rebuilt = cli("projections", "rebuild")
    assert rebuilt.returncode == 1, str(rebuilt)
    assert_names_the_corruption(rebuilt, rule)
    after = cli("plan", "show", "s1", "--json")
    assert after.returncode == 1, f"shown after a rebuild:\n{after}"
    assert after.stdout.count("in_progress") < 2, str(after)

    # Every other session keeps working, reads and writes.
    other = cli("plan", "show", "s2", "--json")
    assert other.returncode == 0, str(other)
    assert other.json()["revision"] == 1 and other.json()["steps"] == STRICT_1["steps"]
    assert cli("plan", "update", "s2", stdin=STRICT_2).returncode == 0
