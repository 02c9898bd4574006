"""A database role that may only read (an auditor's, or a standby's connection) opens a
PostgreSQL store that others write: writers store each session's views with its events, so
plans, histories and verify read what they wrote; only the views' position, which the runner
moves, stays where it is, and the commands say so. A write is refused as `read_only_store`."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from domain.errors import ReadOnlyStore
from planledger.service import PlanLedger
from tests.conftest import as_reader
from tests.integration.test_readers_race import revision_plan


def test_a_read_only_role_reads_what_writers_stored(
    postgres_url: str, reader_role: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    writer = new_ledger(postgres_url)
    writer.open_session("audited")
    writer.submit("audited", revision_plan(0))
    writer.submit("audited", revision_plan(1))
    # its catch-up may not write the views' position
    reader = new_ledger(as_reader(postgres_url, reader_role))
    assert reader.plan("audited") == writer.plan("audited")
    assert [e.kind for e in reader.history("audited").entries][-2:] == ["proposed", "committed"]
    assert reader.verify().ok
    assert reader.health().error is None
    (note,) = reader.warnings
    assert "may not write" in note
    with pytest.raises(ReadOnlyStore):
        reader.submit("audited", revision_plan(2))
    assert writer.plan("audited").revision == 2  # nothing recorded
    writer.catch_up()  # a process that may write moves the position: the feed follows
    assert [e.kind for e in reader.events_after(0, "audited")][-1] == "committed"
