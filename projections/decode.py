"""Stored events decoded for bulk passes, to exactly what the library's mapper gives, cheaper.

The library's JSON transcoder parses with a Python hook called on every JSON object (about
eight per plan event). `BulkTranscoder` parses with pydantic-core's JSON parser and applies the
same transcodings (`{"_type_": name, "_data_": ...}` objects, each decoded by the transcoding
registered under `name`, so payload models are validated as on every load) at the only places
the ledger's events put them: a top-level value, or an item of a top-level list. It proves
that nothing else needed decoding by counting: every `"_type_"` in the stored text must be one
it decoded (a document with a `\\u` escape, which could spell a key, is not counted). Anything
else (a miscount, a parse error, a transcoding's error) is decoded again by the library's own
transcoder, which then gives its own result or raises its own error, word for word.

Values of the `shared` types are decoded from data equal to one of the last two decoded as that
same value again, not validated twice (a commit's snapshot is the candidate of the proposal
stored just before it). A shared type must be a frozen model whose fields hold only strings,
None, tuples of strings and such models: data equal to data it validated is then the very
same JSON, so this changes no result (and equal values then compare at once).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from typing import Any

from eventsourcing.persistence import JSONTranscoder, Mapper, Transcoder, Transcoding
from pydantic_core import from_json

TYPE_KEY = b'"_type_"'
ESCAPE = b"\\u"
RECENT = 2  # values of a shared type remembered


class BulkTranscoder(Transcoder):
    """Encodes with, and decodes exactly as, the library's `JSONTranscoder`."""

    def __init__(self, transcoder: JSONTranscoder, shared: Collection[type] = ()) -> None:
        self.transcoder = transcoder
        self.names: dict[str, Transcoding] = transcoder.names
        # Values of these types are immutable, and decoded from equal data they are equal:
        # one decoded again from data equal to one of the last few is that value again.
        self.shared = {t.name for t in transcoder.names.values() if t.type in shared}
        self.recent: dict[str, deque[tuple[Any, Any]]] = {
            name: deque(maxlen=RECENT) for name in self.shared
        }

    def encode(self, obj: Any) -> bytes:
        return self.transcoder.encode(obj)

    def decode(self, data: bytes) -> Any:
        expected = data.count(TYPE_KEY)
        if ESCAPE not in data:
            try:
                state = from_json(data)
                if type(state) is dict and self._transcode(state, expected) == expected:
                    return state
            except Exception:  # the library's decode below says what is wrong
                pass
        return self.transcoder.decode(data)

    def _transcode(self, state: dict[str, Any], expected: int) -> int:
        """Decode the transcoded values among `state`'s values and their list items, in
        place; returns how many there were. Stops once `expected` were: each had a `"_type_"`
        of its own in the text, so no other value can hold one."""
        found = 0
        for key, value in state.items():
            if found == expected:
                break
            kind = type(value)
            if kind is dict:
                if len(value) == 2 and "_type_" in value and "_data_" in value:
                    state[key] = self._decoded(value["_type_"], value["_data_"])
                    found += 1
            elif kind is list:
                for index, item in enumerate(value):
                    if (
                        type(item) is dict
                        and len(item) == 2
                        and "_type_" in item
                        and "_data_" in item
                    ):
                        value[index] = self._decoded(item["_type_"], item["_data_"])
                        found += 1
        return found

    def _decoded(self, name: str, data: Any) -> Any:
        if name not in self.shared:
            return self.names[name].decode(data)
        recent = self.recent[name]
        for seen, value in recent:  # a commit's snapshot is its proposal's, read just before
            if seen == data:
                return value
        value = self.names[name].decode(data)
        recent.appendleft((data, value))
        return value


def bulk_mapper(mapper: Mapper[Any], shared: Collection[type] = ()) -> Mapper[Any]:
    """A mapper that decodes as `mapper` does, with a `BulkTranscoder` (`mapper` itself when it
    has a cipher, a compressor or a transcoder that decodes its own way)."""
    transcoder = mapper.transcoder
    if mapper.cipher or mapper.compressor or not isinstance(transcoder, JSONTranscoder):
        return mapper
    if any(  # a subclass may encode its own way, no more
        getattr(type(transcoder), name) is not getattr(JSONTranscoder, name)
        for name in ("decode", "_decode_obj")
    ):
        return mapper
    return Mapper(transcoder=BulkTranscoder(transcoder, shared))
