"""Aggregate and event base classes for aggregates identified by readable strings.

The library's own `Aggregate` uses UUIDs; ours use ids such as `plan:<session_id>` so
that an auditor reading the events table with SQL sees whose events they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from eventsourcing.domain import (
    BaseAggregate,
    CanInitAggregate,
    CanMutateAggregate,
    CanSnapshotAggregate,
    MetaDomainEvent,
)


@dataclass(frozen=True)
class Event(CanMutateAggregate[str], metaclass=MetaDomainEvent):
    originator_id: str
    originator_version: int
    timestamp: datetime


@dataclass(frozen=True)
class Created(Event, CanInitAggregate[str]):
    originator_topic: str


@dataclass(frozen=True)
class Snapshot(CanSnapshotAggregate[str], metaclass=MetaDomainEvent):
    originator_id: str
    originator_version: int
    timestamp: datetime
    topic: str
    state: dict[str, Any]


class Aggregate(BaseAggregate[str]):
    """Base for Plan and Session: explicit event classes, string ids."""

    Event = Event
    Created = Created
    Snapshot = Snapshot
