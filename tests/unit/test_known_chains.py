"""planledger.storage.known_chains: a writer's chains, computed only from a chain it knows."""

from __future__ import annotations

from eventsourcing.persistence import StoredEvent

from domain.chain import GENESIS, link
from planledger.storage.known_chains import KnownChains

TOPIC = "domain.plan:Plan.PlanCommitted"


def event(stream: str, version: int) -> StoredEvent:
    return StoredEvent(stream, version, TOPIC, f'{{"v":{version}}}'.encode())


def chain_after(previous: str, stored: StoredEvent) -> str:
    return link(
        previous, stored.topic, stored.originator_id, stored.originator_version, stored.state
    )


def test_a_new_stream_is_chained_from_genesis_and_event_after_event() -> None:
    first, second = event("plan:a", 1), event("plan:a", 2)
    chains = KnownChains().chains_of([first, second])
    assert chains == [chain_after(GENESIS, first), chain_after(chain_after(GENESIS, first), second)]


def test_an_unknown_stream_is_left_to_the_database_to_its_last_event() -> None:
    assert KnownChains().chains_of([event("plan:a", 4), event("plan:a", 5)]) == [None, None]


def test_the_last_stored_chain_is_used_only_for_the_version_after_it() -> None:
    known = KnownChains()
    stored = event("plan:a", 4)
    known.stored([stored], ["c4"])
    assert known.chains_of([event("plan:a", 5)]) == [chain_after("c4", event("plan:a", 5))]
    assert known.chains_of([event("plan:a", 6)]) == [None]  # another writer wrote 5 since
    assert known.chains_of([event("plan:b", 5)]) == [None]


def test_a_write_whose_chains_were_not_read_back_is_not_remembered() -> None:
    known = KnownChains()
    known.stored([event("plan:a", 4)], ["c4"])
    known.stored([event("plan:a", 5)], [None])
    assert known.chains_of([event("plan:a", 6)]) == [None]
    assert known.chains_of([event("plan:a", 5)]) == [chain_after("c4", event("plan:a", 5))]


def test_the_least_recently_written_streams_are_forgotten() -> None:
    known = KnownChains(limit=2)
    known.stored([event("plan:a", 1)], ["a1"])
    known.stored([event("plan:b", 1)], ["b1"])
    known.stored([event("plan:a", 2)], ["a2"])  # a is the most recent again
    known.stored([event("plan:c", 1)], ["c1"])  # b goes
    assert known.chains_of([event("plan:b", 2)]) == [None]
    assert known.chains_of([event("plan:a", 3)]) != [None]
    assert known.chains_of([event("plan:c", 2)]) != [None]
