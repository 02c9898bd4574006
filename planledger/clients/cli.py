"""`planledger`: the command line. Errors are one line on stderr, never a traceback."""

from __future__ import annotations

import json
import os
import sys
import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from pydantic import BaseModel
from rich.console import Console

from domain.errors import ErrorKind, LedgerError
from domain.session import Mode
from planledger.clients import render
from planledger.service import PlanLedger, open_planledger
from planledger.service.ledger import InvalidInput
from planledger.storage.settings import database_settings

EXIT_FAILED, EXIT_INVALID, EXIT_REJECTED, EXIT_CONFLICT, EXIT_UNAVAILABLE = 1, 2, 3, 4, 5
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
EXIT_OF_KIND = {
    ErrorKind.CORRUPT: EXIT_FAILED,
    ErrorKind.NOT_FOUND: EXIT_INVALID,
    ErrorKind.EXISTS: EXIT_INVALID,
    ErrorKind.INVALID: EXIT_INVALID,
    ErrorKind.REJECTED: EXIT_REJECTED,
    ErrorKind.CONFLICT: EXIT_CONFLICT,
    ErrorKind.UNAVAILABLE: EXIT_UNAVAILABLE,
}

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

app = typer.Typer(
    name="planledger",
    help="A durable, event-sourced ledger for the execution plans of AI coding agents.\n\n"
    "Every proposal, commit and rejection is an event; the plan rules are enforced when a "
    "proposal is decided and re-checked on every replay.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
session_app = typer.Typer(
    help="Open sessions and switch the user-controlled mode.", no_args_is_help=True
)
goal_app = typer.Typer(
    help="Durable goals: the only thing that may ask for another turn.", no_args_is_help=True
)
plan_app = typer.Typer(help="Propose, show and audit a session's plan.", no_args_is_help=True)
app.add_typer(session_app, name="session")
app.add_typer(goal_app, name="goal")
app.add_typer(plan_app, name="plan")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
SessionArg = Annotated[str, typer.Argument(metavar="ID", help="The session id.")]


class ModeChoice(StrEnum):
    work = "work"
    plan = "plan"


class _State:
    database: str | None = None
    service: PlanLedger | None = None


state = _State()


def service() -> PlanLedger:
    """The service, opened on first use (so `--help` never touches a database)."""
    if state.service is None:
        state.service = open_planledger(state.database)
    return state.service


@app.callback()
def _global(
    database: Annotated[
        str | None,
        typer.Option(
            "--database",
            metavar="URL",
            help="sqlite:///relative/path, sqlite:////absolute/path or "
            "postgresql://user[:password]@host:port/db. Default: $PLANLEDGER_DATABASE_URL, "
            "else SQLite at $PLANLEDGER_HOME/ledger.sqlite3.",
        ),
    ] = None,
) -> None:
    state.database = database


def emit(as_json: bool, model: BaseModel | dict[str, Any], human: object) -> None:
    if as_json:
        data = (
            model.model_dump(mode="json", by_alias=True) if isinstance(model, BaseModel) else model
        )
        out.print_json(json.dumps(data))
    else:
        out.print(human)


# -- sessions ---------------------------------------------------------------------------------


@session_app.command("open")
def session_open(
    session_id: SessionArg,
    mode: Annotated[ModeChoice, typer.Option(help="Collaboration mode.")] = ModeChoice.work,
    as_json: JsonFlag = False,
) -> None:
    """Open a session (exit 2 if it exists or the id is invalid)."""
    view = service().open_session(session_id, Mode(mode.value))
    emit(as_json, view, render.session_text(view))


@session_app.command("mode")
def session_mode(session_id: SessionArg, mode: ModeChoice, as_json: JsonFlag = False) -> None:
    """Switch the collaboration mode: the user's explicit command, recorded as an event."""
    view = service().set_mode(session_id, Mode(mode.value))
    emit(as_json, view, render.session_text(view))


@session_app.command("show")
def session_show(session_id: SessionArg, as_json: JsonFlag = False) -> None:
    """Mode, goals and should_continue of a session."""
    view = service().session(session_id)
    emit(as_json, view, render.session_text(view))


@session_app.command("list")
def session_list(as_json: JsonFlag = False) -> None:
    """Every session with its mode and plan revision, the most recently active first."""
    sessions = service().sessions()
    emit(as_json, sessions, render.session_list_table(sessions))


# -- goals ------------------------------------------------------------------------------------

GoalArg = Annotated[str, typer.Argument(metavar="GOAL_ID")]


@goal_app.command("start")
def goal_start(
    session_id: SessionArg,
    goal_id: GoalArg,
    objective: Annotated[str, typer.Argument(metavar="OBJECTIVE")],
    as_json: JsonFlag = False,
) -> None:
    """Start a durable goal in a session."""
    view = service().start_goal(session_id, goal_id, objective)
    emit(as_json, view, render.session_text(view))


def _goal_edge(edge: str, doc: str) -> None:
    def command(session_id: SessionArg, goal_id: GoalArg, as_json: JsonFlag = False) -> None:
        view = service().move_goal(session_id, goal_id, edge)
        emit(as_json, view, render.session_text(view))

    command.__doc__ = doc
    goal_app.command(edge)(command)


_goal_edge("complete", "Complete an active goal (exit 3 if it is not active).")
_goal_edge("block", "Block an active goal (exit 3 if it is not active).")
_goal_edge("resume", "Resume a blocked goal (exit 3 if it is not blocked).")
_goal_edge("cancel", "Cancel an active goal (exit 3 if it is not active).")


# -- plans ------------------------------------------------------------------------------------


def read_payload(source: str) -> Any:
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidInput(f"cannot read {source!r}: {error}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        where = "standard input" if source == "-" else source
        raise InvalidInput(f"{where} is not JSON: {error}") from None


@plan_app.command("update")
def plan_update(
    session_id: SessionArg,
    source: Annotated[
        str, typer.Argument(metavar="[FILE|-]", help="JSON proposal in either form; - is stdin.")
    ] = "-",
    expected_revision: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Commit only if the plan is still at this revision "
            "(overrides the payload's expected_revision).",
        ),
    ] = None,
    proposal_id: Annotated[
        str | None,
        typer.Option(
            help="Client-chosen id: resending the same content returns the recorded "
            "outcome and writes nothing."
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Propose a plan (plan_update or update_plan form, detected) and decide it at once.

    Exit 0 committed, 3 rejected (every violation printed), 4 revision conflict,
    2 unknown session or unreadable input.
    """
    payload = read_payload(source)
    if isinstance(payload, dict) and expected_revision is not None:
        payload = {**payload, "expected_revision": expected_revision}
    decision = service().submit(session_id, payload, client="cli", proposal_id=proposal_id)
    emit(as_json, decision, render.decision_text(decision))
    if decision.status == "conflict":
        raise typer.Exit(EXIT_CONFLICT)
    if decision.status == "rejected":
        raise typer.Exit(EXIT_REJECTED)


@plan_app.command("show")
def plan_show(
    session_id: SessionArg,
    revision: Annotated[
        int | None, typer.Option(min=0, help="Show the plan as it stood at this revision.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """The plan now (from the plan view), or as it stood at an earlier revision."""
    view = service().plan(session_id, revision)
    emit(as_json, view, render.plan_panel(view))


@plan_app.command("history")
def plan_history(session_id: SessionArg, as_json: JsonFlag = False) -> None:
    """Every proposal, commit and rejection, with each commit's step transitions."""
    history = service().history(session_id)
    emit(as_json, history.as_json(), render.history_table(history))


@plan_app.command("compaction")
def plan_compaction(
    session_id: SessionArg,
    max_chars: Annotated[
        int, typer.Option(min=0, help="Upper bound on the length of the summary text.")
    ] = 2000,
    as_json: JsonFlag = False,
) -> None:
    """The bounded plan summary a context-compaction handoff attaches.

    state is present, absent (no plan: never "done") or unreadable (with the error).
    """
    snapshot = service().compaction(session_id, max_chars)
    emit(as_json, snapshot.as_json(), snapshot.text)


projections_app = typer.Typer(
    help="The read side: views and plan.json files.", no_args_is_help=True
)
app.add_typer(projections_app, name="projections")


@projections_app.command("rebuild")
def projections_rebuild() -> None:
    """Drop every view and rebuild it from the events, with a progress bar."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    runner = service().runner
    total = service().views.max_notification_id()
    counted = 0
    started = time.perf_counter()
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as progress:
        task = progress.add_task("rebuilding views", total=total or None)

        def advance(events: int, position: int) -> None:
            nonlocal counted
            counted += events
            progress.update(task, completed=position)

        position = runner.rebuild(advance)
        progress.update(task, completed=position, total=position or 1)
    elapsed = time.perf_counter() - started
    rate = counted / elapsed if elapsed > 0 else 0.0
    out.print(f"rebuilt the views from {counted} events in {elapsed:.2f} s ({rate:,.0f} events/s)")


@app.command("serve")
def serve(
    host: Annotated[str, typer.Option(help="Address to bind; loopback unless you say so.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port.")] = 8765,
) -> None:
    """The HTTP server (set PLANLEDGER_TOKEN to require `Authorization: Bearer <token>`)."""
    import uvicorn

    from planledger.clients.http import create_app

    token = os.environ.get("PLANLEDGER_TOKEN") or None
    settings = database_settings(state.database)  # a bad URL fails here, before binding
    application = create_app(lambda: open_planledger(state.database), token=token)
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
    uvicorn.run(application, host=host, port=port, log_level="warning", timeout_keep_alive=5)


@app.command("tui")
def tui(
    session_id: SessionArg,
    server: Annotated[
        str | None,
        typer.Option(
            "--server",
            metavar="URL",
            help="Read a `planledger serve` at URL (token from $PLANLEDGER_TOKEN) instead of "
            "the database.",
        ),
    ] = None,
) -> None:
    """The terminal UI: the plan at any revision, its changes and its history, live.

    Keys: left/right one revision, Home first, End latest (live), h history, q quit.
    """
    from planledger.clients.tui.command import run_tui

    run_tui(session_id, server=server, database=state.database)


# -- verification and demo --------------------------------------------------------------------


@app.command("verify")
def verify(
    session_ids: Annotated[
        list[str] | None, typer.Argument(metavar="[ID ...]", help="Sessions (default: all).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Replay every event from the first, ignoring snapshots, re-checking every rule.

    Exit 0 clean, 1 corrupt (naming session, event position and rule).
    """
    report = service().verify(session_ids or None)
    emit(as_json, report, render.verify_text(report))
    if not report.ok:
        raise typer.Exit(EXIT_FAILED)


@app.command("demo")
def demo() -> None:
    """A scripted walk through one session on the embedded default database."""
    from planledger.clients.demo import run_demo

    run_demo(service(), out)


# -- entry point ------------------------------------------------------------------------------


def fail(message: str, code: int) -> NoReturn:
    err.print(f"planledger: error: {message}", markup=False)
    raise SystemExit(code)


def main(argv: list[str] | None = None) -> None:
    """Console script entry point."""
    try:
        # Standalone mode: usage errors print and exit 2, typer.Exit sets the code.
        app(args=argv, prog_name="planledger")
    except LedgerError as error:
        fail(str(error), EXIT_OF_KIND[error.kind])
    except Exception as error:
        if os.environ.get("PLANLEDGER_DEBUG"):
            raise
        fail(describe_unexpected(error), EXIT_FAILED)
    finally:
        if state.service is not None:
            state.service.close()


def describe_unexpected(error: Exception) -> str:
    """One line for an error we did not expect, e.g. an unreachable database."""
    from eventsourcing.persistence import OperationalError, PersistenceError

    first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
    if isinstance(error, OperationalError | PersistenceError) or "connection" in first_line:
        where = database_settings(state.database).display_url
        return f"cannot use the database at {where}: {first_line}"
    return f"{type(error).__name__}: {first_line} (set PLANLEDGER_DEBUG=1 for a traceback)"
