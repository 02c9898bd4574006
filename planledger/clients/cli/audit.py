"""Audit commands: signed checkpoints of the store (`verify --checkpoint` checks one)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from planledger.clients.cli.app import app, out, service
from planledger.storage.settings import home_dir


@app.command("checkpoint")
def checkpoint(
    out_file: Annotated[
        Path | None,
        typer.Option("--out", metavar="FILE", help="Write the statement here (default: stdout)."),
    ] = None,
    key: Annotated[
        Path | None,
        typer.Option(
            "--key",
            metavar="FILE",
            help="The Ed25519 private key (PEM) to sign with. Default: "
            "$PLANLEDGER_HOME/keys/checkpoint.pem, made on first use (owner-only), with its "
            "public key beside it in checkpoint.pub.",
        ),
    ] = None,
) -> None:
    """Sign a statement of every stream's last event at the store's position now.

    Hand the statement and the public key to whoever must trust the history: `planledger
    verify --checkpoint FILE --public-key KEY` then proves, with only the store, that no event
    up to that position was changed, inserted or removed since. The latest statement is also
    kept in the store (`GET /checkpoint`).
    """
    from planledger.service.keys import signing_key

    signer, key_path = signing_key(key, home_dir())
    made = service().checkpoint(signer)
    statement = made.model_dump_json(indent=2) + "\n"
    if out_file is None:
        out.file.write(statement)
        return
    out_file.write_text(statement)
    public = key_path.with_name("checkpoint.pub")
    out.print(
        f"checkpoint of {made.sessions} session(s) at store position {made.position} written to "
        f"{out_file}\nroot {made.root}\nsigned with {key_path}"
        + (f" (public key: {public})" if public.exists() else ""),
        markup=False,
    )
