"""`planledger`: the command line. Errors are one line on stderr, never a traceback."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel
from rich.console import Console

from domain.session import Mode
from planledger.clients import render
from planledger.clients.exits import (
    EXIT_CONFLICT,
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_REJECTED,
    fail,
    guarded,
    warn,
)
from planledger.clients.payload import read_payload
from planledger.service import PlanLedger, open_planledger
from planledger.storage.settings import database_settings

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

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
_goal_edge("cancel", "Cancel an active or blocked goal (exit 3 if it is neither).")


# -- plans ------------------------------------------------------------------------------------


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
    explanation = payload.get("explanation") if isinstance(payload, dict) else None
    emit(as_json, decision, render.decision_text(decision, explanation))
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


@plan_app.command("file")
def plan_file(session_id: SessionArg) -> None:
    """The path of the session's plan.json (per database: see `planledger plan file --help`).

    The default store writes <PLANLEDGER_HOME>/sessions/ID/plan.json; any other database
    writes under <PLANLEDGER_HOME>/stores/<key>/, so two databases never share files.
    """
    ledger = service()
    ledger.plan(session_id)  # unknown (exit 2) or corrupt (exit 1) sessions have no file
    files = ledger.files
    assert files is not None
    out.print(str(files.path(session_id)), markup=False)


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
    """Drop every view and rebuild it from the events, with a progress bar.

    Every rule is re-checked on the way: exit 1 naming each session whose history breaks one
    (its plan is then never shown; the other sessions are rebuilt).
    """
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
    if runner.corrupt:
        for error in runner.corrupt.values():
            err.print(f"planledger: corrupt: {error}", markup=False)
        raise typer.Exit(EXIT_FAILED)


@projections_app.command("sync-files")
def projections_sync_files() -> None:
    """Bring every plan.json file under PLANLEDGER_HOME up to the views (the back-fill that
    commands start in the background on a fresh home; safe to run any time)."""
    import fcntl

    files = service().files
    if files is None:
        return
    files.root.mkdir(parents=True, exist_ok=True)
    with (files.root / ".sync.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # another back-fill is running
        written = service().sync_files()
    out.print(f"{written} plan.json file(s) written under {files.root}")


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


@app.command("acp")
def acp(
    agent_command: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[-- AGENT_CMD ...]",
            help="Proxy this ACP agent, recording its plans; without it, serve ledger sessions.",
        ),
    ] = None,
) -> None:
    """The ACP agent over stdio, for editors such as Zed (viewer, or proxy with `-- AGENT_CMD`)."""
    from planledger.clients.acp import run_acp

    raise typer.Exit(run_acp(service, agent_command or []))


@app.command("mcp")
def mcp(
    session: Annotated[
        str | None,
        typer.Option(
            "--session",
            metavar="ID",
            help="Session the tools use when a call names none (opened if missing). "
            "Default: a new session mcp-<UTC time>-<hex>.",
        ),
    ] = None,
) -> None:
    """The MCP server on stdio: the plan tools and plan://ID resources, for MCP-speaking agents."""
    from planledger.clients.mcp import serve_stdio

    serve_stdio(state.database, session)


@app.command("import")
def import_sessions(
    agent: Annotated[
        AgentChoice, typer.Argument(metavar="codex|claude", help="Whose transcripts.")
    ],
    paths: Annotated[
        list[Path],
        typer.Argument(metavar="PATH", help="Files, or folders searched for *.jsonl."),
    ],
    as_json: JsonFlag = False,
) -> None:
    """Record the plan calls of sessions Codex or Claude Code already ran.

    Exit 0; 2 when some file or line could not be read (the rest is imported).
    """
    from planledger.clients.import_command import run_import

    code = run_import(service(), agent.value, paths, as_json=as_json, out=out, err=err)
    if code:
        raise typer.Exit(code)


# -- agent hooks ------------------------------------------------------------------------------


class HookAgent(StrEnum):
    claude_code = "claude-code"
    gemini = "gemini"
    codex = "codex"


HookAgentArg = Annotated[HookAgent, typer.Argument(help="claude-code, gemini or codex.")]
hooks_app = typer.Typer(help="Install the agent hooks into an agent's settings.")
app.add_typer(hooks_app, name="hooks", no_args_is_help=True)


@app.command("hook")
def hook(
    agent: Annotated[str, typer.Argument(metavar="AGENT", help="claude-code, gemini or codex.")],
) -> None:
    """Handle one hook event of the agent (JSON on stdin, its answer on stdout).

    Always exits 0: an internal error, an unknown AGENT included, is one line on stderr and no
    answer (fails open; an exit 2 would block the agent's tool call).
    """
    from planledger.clients.hooks.runner import run_hook

    run_hook(agent, state.database)


@hooks_app.command("install")
def hooks_install(
    agent: HookAgentArg,
    project: Annotated[
        Path | None,
        typer.Option("--project", metavar="DIR", help="The project folder (default: here)."),
    ] = None,
    user: Annotated[bool, typer.Option("--user", help="The user's settings in ~.")] = False,
    print_only: Annotated[
        bool, typer.Option("--print", help="Print the resulting file; write nothing.")
    ] = False,
) -> None:
    """Merge the agent's hook entries into its settings, keeping everything else.

    Files: .claude/settings.json, .gemini/settings.json, .codex/hooks.json (in the project, or in
    the home folder with --user). Running it twice changes nothing. Exit 2 on unreadable settings.
    """
    from planledger.clients.hooks.install import install

    if project is not None and user:
        fail("give --project DIR or --user, not both", EXIT_INVALID)
    result = install(
        agent.value, project=project, user=user, database=state.database, print_only=print_only
    )
    if print_only:
        typer.echo(result.text, nl=False)
    elif result.written:
        typer.echo(f"planledger hooks for {agent.value} written to {result.path}")
    else:
        typer.echo(f"planledger hooks for {agent.value} already in {result.path}; nothing changed")


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
