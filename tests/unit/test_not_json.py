"""`NaN`, `Infinity`, `-Infinity` and numbers past a double (`1e400`) are not JSON: a proposal
holding one is invalid input (nothing recorded), never a rejected proposal. Python's parser
accepts them (and turns `1e400` into infinity), so every door refuses them itself."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from domain.errors import InvalidInput, InvalidPayload
from domain.forms import parse_proposal
from domain.limits import check_payload
from planledger.clients.entry import main
from planledger.clients.exits import EXIT_INVALID
from planledger.clients.payload import read_payload

NOT_JSON = {
    "NaN": "NaN",
    "Infinity": "Infinity",
    "-Infinity": "-Infinity",
    "1e400": "1e400",
    "-1e400": "-1e400",
}
STEP = '{"step": "Fix it", "status": "in_progress"}'


def bodies(constant: str) -> list[str]:
    """`constant` where a proposal's number goes, and deeper where no number belongs."""
    return [
        '{"plan": [' + STEP + '], "expected_revision": ' + constant + "}",
        '{"plan": [{"step": ' + constant + ', "status": "pending"}]}',
        '{"plan": [' + STEP + '], "explanation": [[' + constant + "]]}",
    ]


@pytest.mark.parametrize("constant", NOT_JSON.values(), ids=NOT_JSON.keys())
def test_read_payload_refuses_what_json_does_not_have(tmp_path: Path, constant: str) -> None:
    for body in bodies(constant):
        path = tmp_path / "proposal.json"
        path.write_text(body)
        with pytest.raises(InvalidInput) as caught:
            read_payload(str(path))
        message = str(caught.value)
        assert "not JSON" in message and "\n" not in message, message


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_parse_proposal_refuses_non_finite_numbers(value: float) -> None:
    """What MCP, HTTP and the hooks hand over after a lenient parser: refused, not judged."""
    payloads: list[dict[str, Any]] = [
        {"plan": [{"step": "a", "status": "pending"}], "expected_revision": value},
        {"plan": [{"step": value, "status": "pending"}]},
        {"title": "T", "steps": [], "extra": {"deep": [value]}},
    ]
    for payload in payloads:
        with pytest.raises(InvalidPayload) as caught:
            check_payload(payload)
        assert caught.value.code == "invalid_json"
        with pytest.raises(InvalidPayload):
            parse_proposal(payload)


def test_finite_numbers_are_still_judged_by_the_rules() -> None:
    for value in (1.5, -0.0, 1e308, 5e-324):
        parsed = parse_proposal({"plan": [], "expected_revision": value})
        assert [v.code for v in parsed.violations] == ["invalid_field"]


def test_read_payload_keeps_ordinary_numbers(tmp_path: Path) -> None:
    path = tmp_path / "proposal.json"
    path.write_text('{"plan": [], "expected_revision": 2, "x": [1.5, -2e10, 1e-400]}')
    assert read_payload(str(path)) == {
        "plan": [],
        "expected_revision": 2,
        "x": [1.5, -2e10, 0.0],
    }


@pytest.mark.parametrize("constant", ["NaN", "1e400"])
def test_plan_update_exits_2_on_a_number_json_does_not_have(
    tmp_path: Path,
    constant: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PLANLEDGER_HOME", str(tmp_path / "home"))  # if a store were opened
    monkeypatch.delenv("PLANLEDGER_DATABASE_URL", raising=False)
    path = tmp_path / "proposal.json"
    path.write_text(bodies(constant)[0])
    with pytest.raises(SystemExit) as caught:
        main(["plan", "update", "s1", str(path)])
    assert caught.value.code == EXIT_INVALID
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("planledger: error: ") and "not JSON" in line
