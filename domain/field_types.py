"""The types the ledger writes each field of an event with. An edited row that the library
decodes may hold others, or lack a field: its event is unreadable (unreadable_event), wherever
it is applied (a plan's or a session's, by an aggregate, verify or the views' fold)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from operator import contains
from types import NoneType

from domain.errors import CorruptHistory

TEXT = (str,)
TEXT_OR_NONE = (str, NoneType)


@dataclass(frozen=True)
class FieldTypes:
    """An event's fields, in order, each with the types the ledger writes it with (exactly:
    a bool is no revision)."""

    event: str
    names: tuple[str, ...]
    types: tuple[tuple[type, ...], ...]

    def check(self, session_id: str, position: int, *values: object) -> None:
        """Raise CorruptHistory (unreadable_event) unless each value, in the order of `names`,
        is of exactly one of its types."""
        if all(map(contains, self.types, map(type, values))):  # (in C: once per event)
            return
        for name, types, value in zip(self.names, self.types, values, strict=True):
            if type(value) not in types:
                wanted = " or ".join("null" if t is NoneType else t.__name__ for t in types)
                raise CorruptHistory(
                    session_id,
                    position,
                    "unreadable_event",
                    f"the {self.event}'s {name} is of type {type(value).__name__}, "
                    f"where the ledger writes {wanted}",
                )


def field_types(event: str, **types: tuple[type, ...]) -> FieldTypes:
    return FieldTypes(event, tuple(types), tuple(types.values()))


def check_stamp(session_id: str, position: int, at: object) -> None:
    """An event's timestamp is a datetime (an edited row may hold another type, or none)."""
    if type(at) is not datetime:
        raise CorruptHistory(
            session_id,
            position,
            "unreadable_event",
            f"the event's timestamp is of type {type(at).__name__}, where the ledger writes a "
            "date and time",
        )
