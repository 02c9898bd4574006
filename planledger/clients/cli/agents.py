"""Commands that connect agents and editors: import, hook(s), mcp, acp, tui."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from planledger.clients.cli.app import (
    AgentChoice,
    JsonFlag,
    SessionArg,
    app,
    err,
    out,
    service,
    state,
)
from planledger.clients.exits import (
    EXIT_INVALID,
    fail,
)


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
        AgentChoice,
        typer.Argument(metavar="codex|claude|gemini|opencode", help="Whose transcripts."),
    ],
    paths: Annotated[
        list[Path],
        typer.Argument(
            metavar="PATH",
            help="Files, or folders searched for *.jsonl (OpenCode: opencode.db and *.json).",
        ),
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
    opencode = "opencode"


HookAgentArg = Annotated[HookAgent, typer.Argument(help="claude-code, gemini, codex or opencode.")]
hooks_app = typer.Typer(help="Install the agent hooks into an agent's settings.")
app.add_typer(hooks_app, name="hooks", no_args_is_help=True)


@app.command("hook")
def hook(
    agent: Annotated[
        str, typer.Argument(metavar="AGENT", help="claude-code, gemini, codex or opencode.")
    ],
) -> None:
    """Handle one hook event of the agent (JSON on stdin, its answer on stdout).

    Exits 0: an internal error, an unknown AGENT included, is one line on stderr and no answer
    (fails open: a broken ledger never blocks the agent). The one exit 2 is Claude Code's
    TaskCompleted refused by the rules (the task stays open; the violations on stderr).
    """
    from planledger.clients.hooks.runner import run_hook

    code = run_hook(agent, state.database)
    if code:
        raise typer.Exit(code)


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
    the home folder with --user); OpenCode: a plugin, .opencode/plugins/planledger.js (--user:
    ~/.config/opencode/plugins/). Running it twice changes nothing. Exit 2 on unreadable settings.
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
    for note in result.notes:
        typer.echo(f"note: {note}", err=True)


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
