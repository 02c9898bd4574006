"""The full command line: the typer application, its global options and the state its
commands share (the service, opened on first use). Errors are one line on stderr."""

from __future__ import annotations

import contextlib
import json
import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import BaseModel

from planledger.clients.exits import (
    EXIT_OK,
    guarded,
    warn,
)
from planledger.clients.lazy import lazy_console
from planledger.storage.settings import database_settings

if TYPE_CHECKING:
    from planledger.service import PlanLedger

out = lazy_console(highlight=False, soft_wrap=True)
err = lazy_console(stderr=True, highlight=False, soft_wrap=True)

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})

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


class AgentChoice(StrEnum):
    codex = "codex"
    claude = "claude"
    gemini = "gemini"
    opencode = "opencode"


class _State:
    database: str | None = None
    service: PlanLedger | None = None


state = _State()


def service() -> PlanLedger:
    """The service, opened on first use (so `--help` never touches a database)."""
    if state.service is None:
        from planledger.service import open_planledger

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
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            expose_value=False,
            callback=lambda shown: print_version() if shown else None,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    state.database = database


def print_version() -> None:
    from importlib.metadata import version

    out.print(f"planledger {version('plan-ledger')}")
    raise typer.Exit(0)


def emit(as_json: bool, model: BaseModel | dict[str, Any], human: object) -> None:
    if as_json:
        data = (
            model.model_dump(mode="json", by_alias=True) if isinstance(model, BaseModel) else model
        )
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    elif isinstance(human, str):  # plain text (a plan's titles): never read as markup
        out.print(human, markup=False, highlight=False)
    else:
        out.print(human)


# -- entry point ------------------------------------------------------------------------------


def run(args: list[str]) -> int:
    """The full command line on `args` (global options first); returns the exit code."""

    def body() -> int:
        result = app(args=args, prog_name="planledger", standalone_mode=False)
        return result if isinstance(result, int) else EXIT_OK

    try:
        return guarded(body, lambda: database_settings(state.database).display_url)
    finally:
        if state.service is not None:
            closing, state.service = state.service, None
            with contextlib.suppress(Exception):
                closing.close()
            for warning in closing.warnings:
                warn(warning)


def main(argv: list[str] | None = None) -> None:
    """Console script entry point (see planledger.clients.entry)."""
    from planledger.clients.entry import main as entry_main

    entry_main(argv)


if __name__ == "__main__":
    main()
