"""Whole-store commands: projections, verify, serve and demo."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from domain.errors import InvalidInput
from planledger.clients.cli.app import (
    LOOPBACK_HOSTS,
    Args,
    add_json,
    at_least,
    emit,
    err,
    out,
    root,
    service,
    state,
)
from planledger.clients.exits import EXIT_FAILED
from planledger.storage.settings import database_settings

if TYPE_CHECKING:
    from rich.progress import Progress

    from domain.checkpoint import Checkpoint
    from planledger.service.files import PlanFiles


def projections_rebuild(args: Args) -> int | None:
    """Drop every view and rebuild it from the events, with a progress bar; then rewrite every
    plan.json file that is missing or differs from its view.

    Every rule is re-checked on the way: exit 1 naming each session whose history breaks one
    (its plan is then never shown, its file never written; the other sessions are rebuilt).
    """
    runner, files = service().runner, service().files
    total = service().views.event_count()
    counted = 0
    started = time.perf_counter()
    with progress_bars() as progress:
        task = progress.add_task("rebuilding views", total=total or None)

        def advance(events: int, position: int) -> None:
            nonlocal counted
            counted += events
            progress.update(task, completed=counted)

        runner.rebuild(advance)
        progress.update(task, completed=counted, total=counted or 1)
        elapsed = time.perf_counter() - started
        written = repaired_files(files, progress) if files is not None else 0
    rate = counted / elapsed if elapsed > 0 else 0.0
    out.print(f"rebuilt the views from {counted} events in {elapsed:.2f} s ({rate:,.0f} events/s)")
    if files is not None:
        out.print(f"{written} plan.json file(s) written under {files.root}")
    if runner.corrupt:
        for error in runner.corrupt.values():
            err.print(f"planledger: corrupt: {error}", markup=False)
        return EXIT_FAILED
    return None


def projections_sync_files(args: Args) -> None:
    """Compare every plan.json file under PLANLEDGER_HOME with its session's view and rewrite
    each one missing or stale, with a progress bar (safe to run any time). Commands start a
    lighter one in the background, of the views changed since the files' position."""
    files = service().files
    if files is None:
        return
    from planledger.storage.file_paths import files_lock

    files.may_spawn = False  # a back-fill never starts another
    if args.changed:
        with files_lock(files.root, wait=False) as locked:
            if not locked:
                return  # another back-fill is running
            written = service().sync_files()
    else:
        with progress_bars() as progress:
            written = repaired_files(files, progress)
    out.print(f"{written} plan.json file(s) written under {files.root}")


def progress_bars() -> Progress:
    """Progress bars on stderr, left in place when done."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    )


def repaired_files(files: PlanFiles, progress: Progress) -> int:
    """Every missing or stale plan.json file rewritten, with a bar, once a back-fill running
    has finished; how many."""
    from planledger.storage.file_paths import files_lock

    files.may_spawn = False  # the files are brought up here: no back-fill on closing
    with files_lock(files.root, wait=True):
        task = progress.add_task("checking plan.json files", total=service().views.view_count())
        return service().repair_files(lambda checked: progress.advance(task, checked))


def serve(args: Args) -> None:
    """The HTTP server. It requires `Authorization: Bearer <token>` when PLANLEDGER_TOKEN is set
    (an admin token) or the store has named tokens (`planledger tokens add`)."""
    from planledger.clients.http import create_app
    from planledger.clients.http.serving import run_server
    from planledger.service import open_planledger

    host, port = args.host, args.port
    token = os.environ.get("PLANLEDGER_TOKEN") or None
    settings = database_settings(state.database)  # a bad URL fails here, before binding
    checkpoints = None
    if args.checkpoint_every is not None:
        from planledger.clients.http.checkpointing import Checkpointing
        from planledger.service.keys import signing_key
        from planledger.storage.settings import home_dir

        key, _ = signing_key(args.checkpoint_key, home_dir())
        checkpoints = Checkpointing(key, args.checkpoint_every)
    application = create_app(
        lambda: open_planledger(state.database), token=token, checkpoints=checkpoints
    )
    err.print(
        f"planledger serve on http://{host}:{port}/ui ({'token required' if token else 'no token'}"
        f", {settings.display_url})",
        markup=False,
    )
    if token is None and host not in LOOPBACK_HOSTS:
        err.print(
            f"planledger: warning: serving on {host} without a token: anyone who can reach this "
            "address can read and write plans; set PLANLEDGER_TOKEN",
            markup=False,
        )
    run_server(application, host, port)  # with a deadline on request heads


# -- verification and demo --------------------------------------------------------------------


def verify(args: Args) -> int | None:
    """Replay every event from the first, ignoring snapshots, re-checking every rule and every
    event's hash chain (and, with --checkpoint, what the checkpoint signed).

    Exit 0 clean, 1 corrupt or tampered with (naming session, event position and rule:
    `chain_broken`, `checkpoint_mismatch` or the plan rule broken), 2 unreadable input.
    """
    if args.public_key is not None and args.checkpoint is None:
        raise InvalidInput("--public-key checks a --checkpoint: give one")
    statement, trusted = None, None
    if args.checkpoint is not None:
        from planledger.service.keys import public_key as read_public_key

        statement = read_checkpoint(args.checkpoint)
        trusted = read_public_key(args.public_key) if args.public_key is not None else None
    report = service().verify(args.session_ids or None, statement, trusted)
    from planledger.clients import render

    emit(args.as_json, report, render.verify_text(report))
    return None if report.ok else EXIT_FAILED


def read_checkpoint(path: Path) -> Checkpoint:
    """The statement in `path` (InvalidInput, exit 2, when it is not one)."""
    from pydantic import ValidationError

    from domain.checkpoint import Checkpoint

    try:
        return Checkpoint.model_validate_json(path.read_bytes())
    except OSError as error:
        raise InvalidInput(f"cannot read the checkpoint {str(path)!r}: {error}") from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InvalidInput(
            f"{str(path)!r} is not a checkpoint: {where or 'the file'}: {first['msg']}"
        ) from None


def demo(args: Args) -> None:
    """A scripted walk through one session on the embedded default database."""
    from planledger.clients.demo import run_demo

    run_demo(service(), out)


projections_group = root.group("projections", "The read side: views and plan.json files.")
projections_group.command("rebuild", projections_rebuild)
command = projections_group.command("sync-files", projections_sync_files)
command.add_argument("--changed", action="store_true", help=argparse.SUPPRESS)  # the back-fill

command = root.command("serve", serve)
command.add_argument(
    "--host", default="127.0.0.1", help="Address to bind; loopback unless you say so."
)
command.add_argument(
    "--port", type=at_least(0, 65535), default=8765, help="TCP port (default: 8765)."
)
command.add_argument(
    "--checkpoint-every",
    type=at_least(1.0, number=float),
    metavar="SECONDS",
    help="Sign a checkpoint of the store this often when it has new events (GET /checkpoint "
    "serves the latest).",
)
command.add_argument(
    "--checkpoint-key",
    type=Path,
    metavar="FILE",
    help="The Ed25519 key to sign them with (default: $PLANLEDGER_HOME/keys/checkpoint.pem, made "
    "on first use).",
)

command = root.command("verify", verify)
command.add_argument("session_ids", nargs="*", metavar="ID", help="Sessions (default: all).")
add_json(command)
command.add_argument(
    "--checkpoint",
    type=Path,
    metavar="FILE",
    help="Also prove that every event up to the position of this statement (made by "
    "`planledger checkpoint`) is still there, unchanged.",
)
command.add_argument(
    "--public-key",
    type=Path,
    metavar="FILE",
    help="The key the checkpoint must be signed with (its checkpoint.pub). Without it, the "
    "signature is checked against the key the statement names.",
)

root.command("demo", demo)
