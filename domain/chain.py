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
from hashlib import sha256
from typing import Any, Protocol

GENESIS = "0" * 64
CHAIN_BROKEN = "chain_broken"


def link(previous: str, topic: str, aggregate_id: str, version: int, state: bytes) -> str:
    """The chain of an event whose stream's previous event has chain `previous`."""
    digest = sha256(f"{previous}\n{topic}\n{aggregate_id}\n{version}\n".encode())
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
    # link() written out: this runs for every event that verify and the views read.
    digest = sha256(f"{previous}\n{topic}\n{aggregate_id}\n{version}\n".encode())
    digest.update(state)
    if digest.hexdigest() == chain:
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


class StreamChain:
    """Follows one stream's events in order from its first and says where the chain breaks."""

    __slots__ = ("previous",)

    def __init__(self) -> None:
        self.previous = GENESIS

    def broken(self, row: ChainedRow) -> str | None:
        """Why the chain breaks at `row` (None: it holds; the next row follows this one)."""
        chain = row.chain
        if links(
            self.previous, row.topic, row.originator_id, row.originator_version, row.state, chain
        ):
            assert chain is not None
            self.previous = chain
            return None
        self.previous = chain or GENESIS
        return why_broken(chain)


def why_broken(chain: str | None) -> str:
    """What a link that does not hold means, for a report."""
    if chain is None:
        return "the event has no chain: it was not written by the ledger"
    return (
        "the event is not the one the ledger wrote here: it was edited, moved or inserted, "
        "or an event before it was removed"
    )
