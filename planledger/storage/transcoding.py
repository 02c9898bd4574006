"""Store pydantic payload models as plain JSON, validated again on every load."""

from __future__ import annotations

import re
from typing import Any

from eventsourcing.persistence import Transcoding
from pydantic import BaseModel


class PydanticTranscoding(Transcoding):
    """`{"_type_": "plan_snapshot", "_data_": {...}}` in the stored event JSON."""

    def __init__(self, model: type[BaseModel]) -> None:
        self.type: type[BaseModel] = model
        self.name = re.sub(r"(?<!^)(?=[A-Z])", "_", model.__name__).lower()
        # The last model encoded and its data: a commit's snapshot is the very object its
        # proposal's candidate was, encoded in the same save (models are frozen).
        self._last: tuple[BaseModel | None, dict[str, Any]] = (None, {})

    def encode(self, obj: BaseModel) -> dict[str, Any]:
        last, data = self._last
        if last is not obj:
            data = obj.model_dump(mode="json")
            self._last = (obj, data)
        return data

    def decode(self, data: Any) -> BaseModel:
        return self.type.model_validate(data)
