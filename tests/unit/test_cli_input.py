"""`planledger plan update` on hostile input (issue 8): a clean exit 2, never a crash (exit 1).

The payload is read before any database is opened, so these need none.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from domain.limits import MAX_PAYLOAD_BYTES
from planledger.clients.entry import main
from planledger.clients.exits import EXIT_INVALID
from planledger.clients.payload import read_payload
from planledger.service.ledger import InvalidInput

HOSTILE = {
    "100k-deep": '{"plan": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "5000-digit-integer": '{"plan": [], "expected_revision": ' + "9" * 5000 + "}",
    "too-large": '{"plan": [], "notes": "' + "x" * MAX_PAYLOAD_BYTES + '"}',
    "not-json": '{"plan": [',
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_unreadable_input_is_invalid_input(tmp_path: Path, text: str) -> None:
    path = tmp_path / "proposal.json"
    path.write_text(text)
    with pytest.raises(InvalidInput) as caught:
        read_payload(str(path))
    message = str(caught.value)
    assert "\n" not in message and len(message) < 300
    assert "set_int_max_str_digits" not in message


@pytest.mark.parametrize("name", ["100k-deep", "5000-digit-integer"])
def test_plan_update_exits_2_on_unreadable_input(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "proposal.json"
    path.write_text(HOSTILE[name])
    with pytest.raises(SystemExit) as caught:
        main(["plan", "update", "s1", str(path)])
    assert caught.value.code == EXIT_INVALID
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("planledger: error: ")


def test_a_payload_within_the_limits_is_read(tmp_path: Path) -> None:
    path = tmp_path / "proposal.json"
    path.write_text('{"plan": [{"step": "Fix it", "status": "in_progress"}]}')
    assert read_payload(str(path)) == {"plan": [{"step": "Fix it", "status": "in_progress"}]}
