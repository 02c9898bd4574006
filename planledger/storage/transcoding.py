"""Store pydantic payload models as plain JSON, validated again on every load."""

from __future__ import annotations

import json
import re
from enum import Enum
from typing import Any

from eventsourcing.persistence import JSONTranscoder, Transcoding, TranscodingNotRegisteredError
from pydantic import BaseModel
from pydantic_core import to_json

PLAIN = (str, int, bool, type(None))  # JSON values both encoders write alike (no floats)


class PydanticTranscoding(Transcoding):
    """`{"_data_": {...}, "_type_": "plan_snapshot"}` in the stored event JSON."""

    def __init__(self, model: type[BaseModel]) -> None:
        self.type: type[BaseModel] = model
        self.name = re.sub(r"(?<!^)(?=[A-Z])", "_", model.__name__).lower()
        # The last model encoded and its data: a commit's snapshot is the very object its
        # proposal's candidate was, encoded in the same save (models are frozen).
        self.last_encoded: tuple[BaseModel | None, Any] = (None, {})

    def encode(self, obj: BaseModel) -> Any:
        """The model's JSON data, every object's keys in sorted order (canonical JSON)."""
        last, data = self.last_encoded
        if last is not obj:
            data = sorted_keys(obj.model_dump(mode="json"))
            self.last_encoded = (obj, data)
        return data

    def decode(self, data: Any) -> BaseModel:
        return self.type.model_validate(data)


NESTED = (dict, list)


def sorted_keys(value: Any) -> Any:
    """`value` with the keys of every dict in it inserted in sorted order (only dicts and
    lists are entered: a call per plain value cost a quarter of its instructions)."""
    kind = type(value)
    if kind is dict:
        ordered = {}
        for key in sorted(value):
            item = value[key]
            ordered[key] = sorted_keys(item) if type(item) in NESTED else item
        return ordered
    if kind is list:
        return [sorted_keys(item) if type(item) in NESTED else item for item in value]
    return value


class EventTranscoder(JSONTranscoder):
    """The library's JSON transcoder, writing canonical JSON (sorted keys, compact, non-ASCII as
    is: domain.chain.canonical_json), the bytes an event's chain is computed over.

    An event's state is a flat dict: its values, and the items of its list values, are plain
    JSON values or values of a registered type. Such a state is written by pydantic-core in
    one call (about twice as fast as `json`), its keys and those of each registered value's
    data in sorted order, each registered value wrapped as the library wraps it (`{"_data_":
    data, "_type_": name}`). Any other state (a snapshot's nested dicts, a float, an
    unregistered type) is left to the library's encoder with sorted keys, as is any error.
    """

    def __init__(self) -> None:
        super().__init__()
        self.encoder = json.JSONEncoder(
            default=self.wrapped, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )

    def wrapped(self, obj: Any) -> dict[str, Any]:
        """A value of a registered type as the library's encoder wraps it (`{"_type_": name,
        "_data_": data}`); TranscodingNotRegisteredError, as the library's, for any other."""
        transcoding = self.types.get(type(obj))
        if transcoding is None:
            raise TranscodingNotRegisteredError(
                f"Object of type {type(obj)} is not serializable. Please define and register "
                "a custom transcoding for this type."
            )
        return {"_type_": transcoding.name, "_data_": transcoding.encode(obj)}

    def encode(self, obj: Any) -> bytes:
        if type(obj) is dict:
            prepared = self.prepared(obj)
            if prepared is not None:
                try:
                    return to_json(prepared)
                except Exception:  # the library's encoder says what is wrong
                    pass
        return super().encode(obj)

    def prepared(self, state: dict[str, Any]) -> dict[str, Any] | None:
        """`state` in key order with each registered value wrapped; None if it holds anything
        else."""
        prepared: dict[str, Any] = {}
        for key in sorted(state) if all(type(key) is str for key in state) else ():
            value = state[key]
            kind = type(value)
            if kind in PLAIN:  # most values: as they are, without a call
                prepared[key] = value
                continue
            if kind is list or kind is tuple:
                items = []
                for item in value:
                    wrapped = self.plain_or_wrapped(item)
                    if wrapped is self:
                        return None
                    items.append(wrapped)
                prepared[key] = items
                continue
            wrapped = self.plain_or_wrapped(value)
            if wrapped is self:
                return None
            prepared[key] = wrapped
        return prepared if len(prepared) == len(state) else None

    def plain_or_wrapped(self, value: Any) -> Any:
        """A plain value as is, a registered one wrapped; `self` for anything else."""
        kind = type(value)
        if kind in PLAIN:
            return value
        if isinstance(value, Enum) and type(value.value) is str and isinstance(value, str):
            return value.value  # a string enum: json writes its string
        transcoding = self.types.get(kind)
        if transcoding is None:
            return self
        data = transcoding.encode(value)
        if not isinstance(transcoding, PydanticTranscoding) and type(data) is not str:
            return self
        return {"_data_": data, "_type_": transcoding.name}
