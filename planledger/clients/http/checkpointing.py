"""`serve --checkpoint-every SECONDS`: the server signs a checkpoint of the store that often,
when the store has moved since the last one (GET /checkpoint serves the latest)."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from starlette.concurrency import run_in_threadpool

from planledger.service import PlanLedger


@dataclass
class Checkpointing:
    key: Ed25519PrivateKey
    every: float  # seconds

    async def run(self, service: PlanLedger) -> None:
        """Until cancelled: a checkpoint every `every` seconds, if there are new events."""
        signed_at = -1
        while True:
            await asyncio.sleep(self.every)
            try:
                position = await run_in_threadpool(service.views.max_notification_id)
                if position != signed_at:
                    made = await run_in_threadpool(service.checkpoint, self.key)
                    signed_at = made.position
            except Exception as error:  # the database is away: try again next time
                first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
                print(f"planledger serve: checkpoint not made: {first}", file=sys.stderr)
