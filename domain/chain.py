"""The hash chain of a stream: every stored event carries `chain`, the hex SHA-256 of the
previous event's chain in its stream (GENESIS for the first) followed by the event's canonical
content, so an event edited, deleted, inserted or moved after it was written breaks the chain
at that place.

The content hashed is the text `<previous chain>\\n<topic>\\n<aggregate id>\\n<version>\\n`
followed by the event's stored state, which the ledger writes as canonical JSON (sorted keys,
no spaces, non-ASCII as is: `canonical`). Events stored before the chain existed were chained
once, over the canonical form of their state (`links` accepts either).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from hashlib import sha256
from typing import Any, Protocol

from domain.errors import CorruptHistory
from domain.ids import plan_aggregate_id, session_aggregate_id

GENESIS = "0" * 64
CHAIN_BROKEN = "chain_broken"
# A copy of a fresh hash costs less than making one (OpenSSL sets up a context): 0.065 us of
# the 1.6 a link costs on the bulk bench's store.
_SHA256 = sha256()


def link(previous: str, topic: str, aggregate_id: str, version: int, state: bytes) -> str:
    """The chain of an event whose stream's previous event has chain `previous`."""
    digest = _SHA256.copy()
    digest.update(f"{previous}\n{topic}\n{aggregate_id}\n{version}\n".encode())
    digest.update(state)
    return digest.hexdigest()


def canonical_json(value: Any) -> bytes:
    """The canonical JSON of a value: sorted keys, compact, UTF-8 (non-ASCII as is)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def canonical(state: bytes) -> bytes:
    """A stored state in canonical JSON (ValueError when it is not JSON)."""
    return canonical_json(json.loads(state))


def links(
    previous: str, topic: str, aggregate_id: str, version: int, state: bytes, chain: str | None
) -> bool:
    """Whether `chain` is the chain of this event after `previous` (over its state as stored,
    or over the state's canonical form: events chained by the migration)."""
    if chain is None:
        return False
    if link(previous, topic, aggregate_id, version, state) == chain:
        return True
    try:
        return link(previous, topic, aggregate_id, version, canonical(state)) == chain
    except (ValueError, UnicodeError):
        return False


class ChainedRow(Protocol):
    """A stored event with its chain, as the readers that check chains read it."""

    @property
    def originator_id(self) -> Any: ...
    @property
    def originator_version(self) -> int: ...
    @property
    def topic(self) -> str: ...
    @property
    def state(self) -> bytes: ...
    @property
    def chain(self) -> str | None: ...


def first_break(rows: Sequence[ChainedRow]) -> int | None:
    """The index of the first of a stream's rows (in order from its first) whose chain does not
    hold; None when every chain holds.

    Checking a whole stream in one loop, before any of its events is applied, halves what the
    chain costs a replay on a busy CPU: the hash's code and tables stay in the caches, where
    checking each row between the work on the others fetches them again every time."""
    previous = GENESIS
    for index, row in enumerate(rows):
        chain = row.chain
        # link() over the state as stored, written out (a call a row was 4% of the chain's
        # cost, which issue 23 bounds); links() tells the rest.
        digest = _SHA256.copy()
        digest.update(
            f"{previous}\n{row.topic}\n{row.originator_id}\n{row.originator_version}\n".encode()
        )
        digest.update(row.state)
        if digest.hexdigest() != chain and not links(
            previous, row.topic, row.originator_id, row.originator_version, row.state, chain
        ):
            return index
        previous = chain  # type: ignore[assignment]  # (a chain that links is not None)
    return None


def why_broken(chain: str | None) -> str:
    """What a link that does not hold means, for a report."""
    if chain is None:
        return "the event has no chain: it was not written by the ledger"
    return (
        "the event is not the one the ledger wrote here: it was edited, moved or inserted, "
        "or an event before it was removed"
    )


def chain_broken(session_id: str, stored: ChainedRow) -> CorruptHistory:
    """The break of a stream's chain at `stored`, as corrupt history."""
    message = f"{stored.originator_id}: {why_broken(stored.chain)}"
    return CorruptHistory(session_id, stored.originator_version, CHAIN_BROKEN, message)


def broken_chain(
    rows_of: Callable[[str], Sequence[ChainedRow]],
    session_id: str,
    plan_version: int = 0,
    streams: Sequence[str] | None = None,
) -> CorruptHistory | None:
    """Where the session's chains break (its session stream's, then its plan stream's; or
    only `streams`), each stream read by `rows_of`, or where its plan stream ends before
    `plan_version` (events the views were made from are gone); None when they hold."""
    if streams is None:
        streams = (session_aggregate_id(session_id), plan_aggregate_id(session_id))
    last = 0  # the last stream's last position, once all are read
    for aggregate_id in streams:
        rows = rows_of(aggregate_id)
        at = first_break(rows)
        if at is not None:
            return chain_broken(session_id, rows[at])
        last = rows[-1].originator_version if rows else 0
    if last < plan_version:
        return CorruptHistory(
            session_id,
            last + 1,
            CHAIN_BROKEN,
            f"plan:{session_id}: the events from position {last + 1} on are gone",
        )
    return None
