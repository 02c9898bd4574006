"""Audit commands: signed checkpoints of the store (`verify --checkpoint` checks one) and the
HTTP server's named tokens."""

from __future__ import annotations

from pathlib import Path

from domain.errors import InvalidInput
from planledger.clients.cli.app import (
    Args,
    Parser,
    add_json,
    add_session,
    emit,
    err,
    out,
    root,
    service,
)
from planledger.clients.exits import EXIT_FAILED
from planledger.storage.settings import home_dir


def checkpoint(args: Args) -> None:
    """Sign a statement of every stream's last event at the store's position now.

    Hand the statement and the public key to whoever must trust the history: `planledger
    verify --checkpoint FILE --public-key KEY` then proves, with only the store, that no event
    up to that position was changed, inserted or removed since. The latest statement is also
    kept in the store (`GET /checkpoint`).
    """
    from planledger.service.keys import signing_key

    signer, key_path = signing_key(args.key, home_dir())
    out_file: Path | None = args.out
    made = service().checkpoint(signer)
    statement = made.model_dump_json(indent=2) + "\n"
    if out_file is None:
        out.file.write(statement)
        return
    write_file(out_file, statement)
    public = key_path.with_name("checkpoint.pub")
    out.print(
        f"checkpoint of {made.sessions} session(s) at store position {made.position} written to "
        f"{out_file}\nroot {made.root}\nsigned with {key_path}"
        + (f" (public key: {public})" if public.exists() else ""),
        markup=False,
    )


def write_file(path: Path, text: str) -> None:
    """`text` into `path` (InvalidInput, exit 2, when it cannot be written)."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise InvalidInput(f"cannot write {str(path)!r}: {error.strerror or error}") from None


def export(args: Args) -> int | None:
    """A report of the session to hand on: its goals, the plan at each revision with what
    changed, every rejection with its violations, who sent each proposal and when, the chain
    head and whether verify holds (a corrupt session is reported up to where it breaks: exit
    1). The HTML needs nothing but itself to open, offline."""
    import json

    from planledger.clients import report_render

    session_id, out_file = args.session_id, args.out
    report = service().report(session_id)
    if args.format == "json":
        text = json.dumps(report.as_json(), indent=2, ensure_ascii=False) + "\n"
    elif args.format == "html":
        text = report_render.html(report)
    else:
        text = report_render.markdown(report)
    if out_file is None:
        out.file.write(text)
    else:
        write_file(out_file, text)
        out.print(f"report of session {session_id} written to {out_file}", markup=False)
    return None if report.verified else EXIT_FAILED


def tokens_add(args: Args) -> None:
    """Make a token and print it, once: only its SHA-256 is kept."""
    made = service().add_token(args.name, args.scope)
    if args.as_json:
        emit(True, made, None)
        return
    out.print(made.token, markup=False)
    err.print(
        f"token {made.name!r} ({made.scope.value}): shown this once; send it as "
        "`Authorization: Bearer <token>`",
        markup=False,
    )


def tokens_list(args: Args) -> None:
    """Every token's name, scope and dates (never the tokens themselves)."""
    found = service().tokens()
    if args.as_json:
        emit(True, {"tokens": [t.model_dump(mode="json") for t in found]}, None)
        return
    if not found:
        out.print("No tokens: add one with `planledger tokens add NAME --scope read|write|admin`.")
        return
    for token in found:
        state = f"revoked {token.revoked_at}" if token.revoked_at else "in use"
        out.print(
            f"{token.name}  {token.scope.value}  made {token.created_at}  {state}", markup=False
        )


def tokens_revoke(args: Args) -> None:
    """Refuse the token from now on (a running server within a second)."""
    service().revoke_token(args.name)
    out.print(f"token {args.name!r} revoked", markup=False)


def add_out(parser: Parser) -> None:
    parser.add_argument("--out", type=Path, metavar="FILE", help="Write it here (default: stdout).")


command = root.command("checkpoint", checkpoint)
add_out(command)
command.add_argument(
    "--key",
    type=Path,
    metavar="FILE",
    help="The Ed25519 private key (PEM) to sign with. Default: $PLANLEDGER_HOME/keys/"
    "checkpoint.pem, made on first use (owner-only), with its public key beside it in "
    "checkpoint.pub.",
)

command = root.command("export", export)
add_session(command)
command.add_argument(
    "--format",
    choices=("md", "html", "json"),
    default="md",
    help="md (Markdown, the default), html (one self-contained file) or json.",
)
add_out(command)

tokens_group = root.group(
    "tokens",
    "Named tokens of the HTTP server: each proposal records the name of the token that sent it "
    "as its actor. Adding one makes the server require a token.",
)
command = tokens_group.command("add", tokens_add)
command.add_argument("name", metavar="NAME", help="Who holds it (1-64 of A-Za-z0-9._-).")
command.add_argument(
    "--scope",
    choices=("read", "write", "admin"),
    default="read",
    help="read: every GET (the default); write: also proposals, sessions, goals; admin: all.",
)
add_json(command)
add_json(tokens_group.command("list", tokens_list))
tokens_group.command("revoke", tokens_revoke).add_argument("name", metavar="NAME")
