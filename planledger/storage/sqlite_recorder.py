"""The SQLite write path: the recorder contract's insert, on the library's datastore and
cursor, with each event's chain and the views in the same transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteCursor

from domain.chain import GENESIS, link
from planledger.storage.known_chains import KnownChains
from planledger.storage.recorder import InlineViews
from planledger.storage.scan import ChainedEvent, chained_stream_sql
from planledger.storage.schema import VIEWS
from planledger.storage.view_rows import rows_of, write_rows


class ViewsSQLiteRecorder(SQLiteApplicationRecorder):
    """The library's SQLite application recorder whose insert (our SQL, in the datastore's
    transaction) stores each event's chain (domain.chain), plus the views in the same
    transaction when current."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The columns named: the table has one more than the library's (the chain).
        self.insert_events_statement = (
            f"INSERT INTO {self.events_table_name} "
            "(originator_id, originator_version, topic, state, chain) VALUES (?,?,?,?,?)"
        )
        self.known_chains = KnownChains()

    def construct_create_table_statements(self) -> list[str]:
        """The library's events table, with the chain column (a store made before it gets the
        column from planledger.storage.chain_schema)."""
        return [
            f"CREATE TABLE IF NOT EXISTS {self.events_table_name} (originator_id TEXT, "
            "originator_version INTEGER, topic TEXT, state BLOB, chain TEXT, "
            "PRIMARY KEY (originator_id, originator_version))"
        ]

    def insert_events(
        self,
        stored_events: Sequence[StoredEvent],
        *,
        views: InlineViews | None = None,
        **kwargs: Any,
    ) -> Sequence[int] | None:
        """The recorder contract's insert (the events in one transaction, their notification
        ids returned), each event stored with its chain: the ones whose chain before is known
        (planledger.storage.known_chains) in the insert, the others right after it; and, with
        `views`, the views in the same transaction when they are current. (Any `tracking` is
        ignored, as by the library's application recorder: the ledger is no process recorder.)"""
        chains = self.known_chains.chains_of(stored_events)
        with self.datastore.transaction(commit=True) as c:
            ids = self.write_events(c, stored_events, chains, views=views)
        self.known_chains.stored(stored_events, chains)  # committed: every chain filled in
        return ids

    def write_events(
        self,
        c: SQLiteCursor,
        stored_events: Sequence[StoredEvent],
        chains: list[str | None],
        *,
        views: InlineViews | None = None,
    ) -> list[int]:
        """Insert the events, their chains and the views in `c`'s transaction; their ids."""
        ids: list[int] = []
        for event, chain in zip(stored_events, chains, strict=True):
            originator_id = event.originator_id
            c.execute(
                self.insert_events_statement,
                (
                    originator_id.hex if isinstance(originator_id, UUID) else originator_id,
                    event.originator_version,
                    event.topic,
                    event.state,
                    chain,
                ),
            )
            ids.append(c.lastrowid)
        if not ids:
            return ids
        self.fill_chains(c, stored_events, ids, chains)
        if views is None:
            return ids
        # The insert took the write lock: nobody else moves the views until we commit.
        c.execute(
            "SELECT (SELECT position FROM planledger_tracking WHERE projection = ?), "
            f"(SELECT COALESCE(MAX(rowid), 0) FROM {self.events_table_name} WHERE rowid < ?)",
            (VIEWS, ids[0]),
        )
        tracked, before = c.fetchone()
        if tracked != before:
            return ids  # the views are behind: the runner will bring them up
        stored = {
            (str(event.originator_id), event.originator_version): (notification_id, event.state)
            for event, notification_id in zip(stored_events, ids, strict=True)
        }
        rows = rows_of(views.changes, lambda *key: stored.get(key, (None, None)))
        write_rows(c.executemany, rows, "?")
        c.execute(
            "UPDATE planledger_tracking SET position = ? WHERE projection = ?", (max(ids), VIEWS)
        )
        views.applied = True
        return ids

    def select_chained(self, originator_id: str) -> list[ChainedEvent]:
        """The stream's events in order, each with its chain."""
        with self.datastore.transaction(commit=False) as c:
            c.execute(chained_stream_sql(self.events_table_name, "rowid", "?"), (originator_id,))
            return [ChainedEvent(o, v, t, bytes(s), h, at) for o, v, t, s, h, at in c.fetchall()]

    def fill_chains(
        self,
        c: SQLiteCursor,
        stored_events: Sequence[StoredEvent],
        ids: Sequence[int],
        chains: list[str | None],
    ) -> None:
        """The chain of each new event inserted without one (filled into `chains`), from the
        previous event of its stream (the insert holds the write lock: that event is the
        stream's last committed one, or one of these)."""
        last: dict[str, str] = {}
        updates: list[tuple[str, int]] = []
        for index, (event, notification_id) in enumerate(zip(stored_events, ids, strict=True)):
            originator_id, version = str(event.originator_id), event.originator_version
            known = chains[index]
            if known is not None:
                last[originator_id] = known
                continue
            previous = last.get(originator_id)
            if previous is None:
                previous = GENESIS
                if version > 1:
                    c.execute(
                        f"SELECT chain FROM {self.events_table_name} "
                        "WHERE originator_id = ? AND originator_version = ?",
                        (originator_id, version - 1),
                    )
                    row = c.fetchone()
                    previous = row[0] if row is not None and row[0] else GENESIS
            chain = last[originator_id] = chains[index] = link(
                previous, event.topic, originator_id, version, event.state
            )
            updates.append((chain, notification_id))
        if updates:
            c.executemany(f"UPDATE {self.events_table_name} SET chain = ? WHERE rowid = ?", updates)
