"""Signed checkpoints: a statement of what the store held at one position, so that anyone with
the public key can later prove that no event up to there was changed or went missing.

The statement names every stream's last event at the position, `<aggregate id> <version>
<chain>` (its `heads`), and `root`, the SHA-256 over those lines sorted; it is signed with
Ed25519 over the canonical JSON of every field but the signature and the heads (which the root
covers). Since each chain covers
every event before it in its stream (domain.chain), an event changed, inserted or removed
anywhere up to the position changes a head, and a stream cut short keeps an older head.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import Field

from domain.chain import canonical_json
from domain.models import Frozen

CHECKPOINT_MISMATCH = "checkpoint_mismatch"


class Head(NamedTuple):
    """A stream's last event at a position."""

    aggregate_id: str
    version: int
    chain: str


class Checkpoint(Frozen):
    """What `planledger checkpoint` writes (and `GET /checkpoint` serves)."""

    store_key: str
    position: int = Field(ge=0)
    sessions: int = Field(ge=0)
    root: str
    at: str
    public_key: str = Field(description="The Ed25519 public key, raw, base64.")
    signature: str = Field(description="Ed25519 over the other fields' canonical JSON, base64.")
    heads: list[Head] = Field(default_factory=list)


def root_of(heads: Iterable[Head]) -> str:
    """SHA-256 over the sorted lines `<aggregate id> <version> <chain>` (hex)."""
    lines = sorted(f"{head.aggregate_id} {head.version} {head.chain}\n" for head in heads)
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def session_count(heads: Iterable[Head]) -> int:
    return len({head.aggregate_id.partition(":")[2] for head in heads})


def signed_bytes(checkpoint: Checkpoint) -> bytes:
    """What the signature covers: every field but the signature and the heads (which the
    root covers), as canonical JSON."""
    return canonical_json(checkpoint.model_dump(exclude={"signature", "heads"}))


def public_key_text(key: Ed25519PublicKey) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return base64.b64encode(key.public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()


def sign(
    key: Ed25519PrivateKey, store_key: str, position: int, heads: Sequence[Head], at: str
) -> Checkpoint:
    """The signed statement of `heads` at `position`."""
    unsigned = Checkpoint(
        store_key=store_key,
        position=position,
        sessions=session_count(heads),
        root=root_of(heads),
        at=at,
        public_key=public_key_text(key.public_key()),
        signature="",
        heads=sorted(heads),
    )
    signature = base64.b64encode(key.sign(signed_bytes(unsigned))).decode()
    return unsigned.model_copy(update={"signature": signature})


class Mismatch(NamedTuple):
    """Where a store differs from a checkpoint: the session, the stream position from which
    it differs, and how."""

    session_id: str
    position: int
    message: str


def gone(first: int, last: int) -> str:
    if first == last:
        return f"its event {first} is gone"
    return f"its events {first} to {last} are gone"


def signature_problem(checkpoint: Checkpoint, trusted: Ed25519PublicKey | None) -> str | None:
    """Why the statement cannot be trusted as it stands (None: signed by `trusted`, or by its
    own key when none is given, and its heads are the ones its root covers)."""
    own = checkpoint.public_key
    if trusted is not None and public_key_text(trusted) != own:
        return "the checkpoint was signed by another key than the public key given"
    try:
        key = Ed25519PublicKey.from_public_bytes(base64.b64decode(own, validate=True))
        key.verify(base64.b64decode(checkpoint.signature, validate=True), signed_bytes(checkpoint))
    except (ValueError, InvalidSignature):
        return "the checkpoint's signature does not hold: the statement was changed"
    if checkpoint.heads and root_of(checkpoint.heads) != checkpoint.root:
        return "the checkpoint's heads are not the ones its signed root covers"
    return None


def mismatches(checkpoint: Checkpoint, now: Sequence[Head]) -> list[Mismatch]:
    """How the store's heads at the checkpoint's position (`now`) differ from the signed ones:
    per stream where the checkpoint lists them, else the root alone."""
    if root_of(now) == checkpoint.root:
        return []
    if not checkpoint.heads:
        return [
            Mismatch(
                "",
                checkpoint.position,
                f"the store's events up to position {checkpoint.position} are not those the "
                "checkpoint signed (it lists no streams to say which)",
            )
        ]
    found: list[Mismatch] = []
    current = {head.aggregate_id: head for head in now}
    for signed in checkpoint.heads:
        session_id = signed.aggregate_id.partition(":")[2]
        head = current.pop(signed.aggregate_id, None)
        if head is None:
            found.append(Mismatch(session_id, 1, f"{signed.aggregate_id}: every event is gone"))
        elif head.version < signed.version:
            found.append(
                Mismatch(
                    session_id,
                    head.version + 1,
                    f"{signed.aggregate_id}: {gone(head.version + 1, signed.version)}",
                )
            )
        elif head != signed:
            found.append(
                Mismatch(
                    session_id,
                    signed.version,
                    f"{signed.aggregate_id}: its events up to position {signed.version} are not "
                    "those the checkpoint signed",
                )
            )
    for head in current.values():
        found.append(
            Mismatch(
                head.aggregate_id.partition(":")[2],
                1,
                f"{head.aggregate_id}: a stream the checkpoint does not know (inserted)",
            )
        )
    return found
