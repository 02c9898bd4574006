"""The service layer every client calls: `open_planledger(url)` builds it all."""

from planledger.service.core import PlanLedger, open_planledger
from planledger.service.feed import FeedEvent
from planledger.service.ledger import Call

__all__ = ["Call", "FeedEvent", "PlanLedger", "open_planledger"]
