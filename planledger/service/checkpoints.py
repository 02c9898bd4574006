"""Signed checkpoints of a store (domain.checkpoint): made from the views' store, kept there,
and checked against the store as it is now."""

from __future__ import annotations

from datetime import UTC, datetime

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from domain.checkpoint import (
    CHECKPOINT_MISMATCH,
    Checkpoint,
    Head,
    mismatches,
    sign,
    signature_problem,
)
from planledger.service.results import Problem
from planledger.storage.file_paths import resolved_url, store_key
from planledger.storage.settings import DatabaseSettings
from planledger.storage.views import ViewStore


def make_checkpoint(
    views: ViewStore, database: DatabaseSettings, key: Ed25519PrivateKey
) -> Checkpoint:
    """The signed statement of every stream's last event at the store's position now, kept
    in the store (GET /checkpoint serves the latest)."""
    position, heads = heads_at(views)
    at = datetime.now(UTC).isoformat(timespec="seconds")
    made = sign(key, store_key(resolved_url(database)), position, heads, at)
    views.save_checkpoint(position, at, made.model_dump_json())
    return made


def latest_checkpoint(views: ViewStore) -> Checkpoint | None:
    statement = views.latest_checkpoint()
    return Checkpoint.model_validate_json(statement) if statement is not None else None


def checkpoint_problems(
    views: ViewStore, checkpoint: Checkpoint, trusted: Ed25519PublicKey | None
) -> list[Problem]:
    """Where the store differs from what the checkpoint signed (none: every event up to its
    position is there, unchanged). A statement whose signature does not hold is one problem
    of the store as a whole (session ``)."""
    why = signature_problem(checkpoint, trusted)
    if why is not None:
        return [problem("", checkpoint.position, why)]
    _, now = heads_at(views, checkpoint.position)
    return [problem(*found) for found in mismatches(checkpoint, now)]


def heads_at(views: ViewStore, position: int | None = None) -> tuple[int, list[Head]]:
    """The store position (`position`, else the last) and every stream's head there."""
    at, rows = views.chain_heads(position)
    return at, [
        Head(str(aggregate_id), int(version), str(chain)) for aggregate_id, version, chain in rows
    ]


def problem(session_id: str, position: int, message: str) -> Problem:
    return Problem(
        session_id=session_id, position=position, rule=CHECKPOINT_MISMATCH, message=message
    )
