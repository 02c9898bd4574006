"""The service layer every client calls: `open_planledger(url)` builds it all.

The names are loaded on first use: a read (`plan show`) loads planledger.service.core alone,
never the write side (planledger.service.ledger and eventsourcing).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from planledger.service.core import PlanLedger, open_planledger
    from planledger.service.feed import FeedEvent
    from planledger.service.ledger import Call

WHERE = {"Call": "ledger", "FeedEvent": "feed", "PlanLedger": "core", "open_planledger": "core"}
__all__ = ["Call", "FeedEvent", "PlanLedger", "open_planledger"]


def __getattr__(name: str) -> Any:
    if name not in WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{WHERE[name]}"), name)
