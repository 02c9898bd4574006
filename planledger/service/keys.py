"""The Ed25519 keys of checkpoints: the signing key, made on first use under
`PLANLEDGER_HOME/keys/` (owner-only) or given as a file, and a public key to check with."""

from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from domain.errors import InvalidInput

KEY_FILE = "checkpoint.pem"
PUBLIC_FILE = "checkpoint.pub"


def default_key_path(home: Path) -> Path:
    return home / "keys" / KEY_FILE


def signing_key(path: Path | None, home: Path) -> tuple[Ed25519PrivateKey, Path]:
    """The key of `path`, else the home's own (made now if it has none), and where it is."""
    if path is None:
        path = default_key_path(home)
        if not path.exists():
            return _made(path), path
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as error:
        raise InvalidInput(f"cannot read the signing key {str(path)!r}: {error}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise InvalidInput(f"{str(path)!r} is not an Ed25519 private key")
    return key, path


def _made(path: Path) -> Ed25519PrivateKey:
    """A new key written to `path` (readable by its owner only) and its public key beside it."""
    key = Ed25519PrivateKey.generate()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    # Written whole under another name, then linked into place: a process racing this one
    # either makes the key or reads the one made, never half of one.
    temporary = path.with_name(f".{KEY_FILE}.{os.getpid()}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(pem)
    try:
        os.link(temporary, path)
    except FileExistsError:
        return signing_key(path, path.parent)[0]
    finally:
        temporary.unlink()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    path.with_name(PUBLIC_FILE).write_bytes(public)
    return key


def public_key(path: Path) -> Ed25519PublicKey:
    """The public key in `path`: a PEM public key (the `.pub` beside a signing key), a PEM
    private key, or a checkpoint's `public_key` text (raw, base64)."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InvalidInput(f"cannot read the public key {str(path)!r}: {error}") from None
    key: object
    try:
        if b"PRIVATE KEY" in data:
            key = serialization.load_pem_private_key(data, password=None).public_key()
        elif b"PUBLIC KEY" in data:
            key = serialization.load_pem_public_key(data)
        else:
            key = Ed25519PublicKey.from_public_bytes(base64.b64decode(data.strip(), validate=True))
    except (ValueError, TypeError, binascii.Error) as error:
        raise InvalidInput(f"{str(path)!r} holds no public key: {error}") from None
    if not isinstance(key, Ed25519PublicKey):
        raise InvalidInput(f"{str(path)!r} is not an Ed25519 key")
    return key
