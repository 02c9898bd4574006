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

    def encode(self, obj: BaseModel) -> dict[str, Any]:
        return obj.model_dump(mode="json")

    def decode(self, data: Any) -> BaseModel:
        return self.type.model_validate(data)
