"""The chains a writer computes itself (domain.chain): for each stream it wrote, the stored chain
of the last event it wrote there, so that its next event's chain needs no read of the one
before (on PostgreSQL, the trigger's read and hash on the server; on SQLite, a read and an
update of the new row).

An event's chain is computed here only from a chain known to be stored at the version just
before it: GENESIS before a stream's first event, the event before it in the same write, or
the remembered chain of the stream's last event when that is the version before. Anything else
(a stream this process never wrote, or another writer wrote since) is left to the database,
which computes it from the stored event before. A remembered chain only ever comes from a
committed write's stored rows, so a chain written here is the one the database would write.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from eventsourcing.persistence import StoredEvent

from domain.chain import GENESIS, link

REMEMBERED = 20_000  # streams remembered at most (the least recently written are forgotten)


class KnownChains:
    """The last stored (version, chain) of the streams this writer wrote, a bounded number."""

    def __init__(self, limit: int = REMEMBERED) -> None:
        self.limit = limit
        self._last: dict[str, tuple[int, str]] = {}
        self._lock = threading.Lock()

    def chains_of(self, events: Sequence[StoredEvent]) -> list[str | None]:
        """Each event's chain where the chain before it is known, else None (in order: an
        event after an unknown one in its stream is unknown too)."""
        chains: list[str | None] = []
        before: dict[str, str | None] = {}  # the chain before the next event of each stream
        for event in events:
            originator_id, version = str(event.originator_id), event.originator_version
            if originator_id in before:
                previous = before[originator_id]
            elif version == 1:
                previous = GENESIS
            else:
                with self._lock:
                    known = self._last.get(originator_id)
                previous = known[1] if known is not None and known[0] == version - 1 else None
            chain = (
                None
                if previous is None
                else link(previous, event.topic, originator_id, version, event.state)
            )
            before[originator_id] = chain
            chains.append(chain)
        return chains

    def stored(self, events: Sequence[StoredEvent], chains: Sequence[str | None]) -> None:
        """Remember the chains a committed write stored (None: not read back)."""
        last: dict[str, tuple[int, str]] = {}
        for event, chain in zip(events, chains, strict=True):
            if chain is not None:
                last[str(event.originator_id)] = (event.originator_version, chain)
        with self._lock:
            for originator_id, known in last.items():
                self._last.pop(originator_id, None)  # to the end: the most recently written
                self._last[originator_id] = known
            while len(self._last) > self.limit:
                del self._last[next(iter(self._last))]
