"""A batch's history entries made into JSON in one call give each entry's own JSON."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from domain.models import TaskOperation, Violation
from planledger.storage.view_rows import entry_texts
from projections.shapes import HistoryEntry, Transition

NOW = datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
TRICKY = ['p,{"position":1}', "},{", "ü\u2028\x00", '"position"', ""]


def alone(entries: list[HistoryEntry]) -> list[str]:
    return [entry.model_dump_json(by_alias=True, exclude_none=True) for entry in entries]


def entries_of_every_kind(text: str) -> list[HistoryEntry]:
    return [
        HistoryEntry(position=1, kind="proposed", proposal_id=text, at=NOW, form="codex"),
        HistoryEntry(
            position=2,
            kind="proposed",
            proposal_id="p2",
            at=NOW,
            client=text,
            actor=text,
            expected_revision=0,
            operation=TaskOperation(op="create", title=text, add_blocked_by=("1",)),
        ),
        HistoryEntry(
            position=3,
            kind="committed",
            proposal_id=text,
            at=NOW,
            revision=1,
            transitions=[
                Transition(step_id=text, from_=None, to="pending"),
                Transition(step_id="b", from_="pending", to=None),
            ],
        ),
        HistoryEntry(position=4, kind="committed", proposal_id="p4", at=NOW, transitions=[]),
        HistoryEntry(
            position=5,
            kind="rejected",
            proposal_id="p5",
            at=NOW,
            violations=[
                Violation(code="x", message=text),
                Violation(code="y", message="m", step_id=text, index=0),
            ],
        ),
    ]


def test_every_kind_of_entry_is_its_own_json() -> None:
    for text in TRICKY:
        entries = entries_of_every_kind(text)
        assert entry_texts(entries) == alone(entries)
    assert entry_texts([]) == []


@given(st.lists(st.tuples(st.integers(min_value=0), st.text()), max_size=20))
def test_any_entries_are_their_own_json(made: list[tuple[int, str]]) -> None:
    entries = [
        HistoryEntry(position=position, kind="proposed", proposal_id=text, at=NOW, client=text)
        for position, text in made
    ]
    assert entry_texts(entries) == alone(entries)


def test_a_nested_position_key_makes_each_entry_alone() -> None:
    # (an edited history's entry may hold what its model does not: it is written as it is)
    odd = HistoryEntry.model_construct(
        position=2,
        kind="rejected",
        proposal_id="p",
        at=NOW,
        violations=[Violation(code="x", message="m"), {"position": 7}],
    )
    entries = [entries_of_every_kind("t")[0], odd]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pydantic warns of the unexpected value, both ways
        assert entry_texts(entries) == alone(entries)
        assert entry_texts(entries)[1].endswith(',{"position":7}]}')
