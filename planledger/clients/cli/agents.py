"""Commands that connect agents and editors: import, hook(s), mcp, acp, tui."""

from __future__ import annotations

import sys
from pathlib import Path

from planledger.clients.cli.app import (
    AGENTS,
    Args,
    add_json,
    add_session,
    err,
    out,
    root,
    service,
    state,
)
from planledger.clients.exits import EXIT_INVALID, fail

HOOK_AGENTS = ("claude-code", "gemini", "codex", "opencode")


def acp(args: Args) -> int:
    """The ACP agent over stdio, for editors such as Zed (viewer, or proxy with `-- AGENT_CMD`)."""
    from planledger.clients.acp import run_acp

    return run_acp(service, args.agent_command)


def mcp(args: Args) -> None:
    """The MCP server on stdio: the plan tools and plan://ID resources, for MCP-speaking agents."""
    from planledger.clients.mcp import serve_stdio

    serve_stdio(state.database, args.session)


def import_sessions(args: Args) -> int:
    """Record the plan calls of sessions Codex or Claude Code already ran.

    Exit 0; 2 when some file or line could not be read (the rest is imported).
    """
    from planledger.clients.import_command import run_import

    return run_import(service(), args.agent, args.paths, as_json=args.as_json, out=out, err=err)


def hook(args: Args) -> int:
    """Handle one hook event of the agent (JSON on stdin, its answer on stdout).

    Exits 0: an internal error, an unknown AGENT included, is one line on stderr and no answer
    (fails open: a broken ledger never blocks the agent). The one exit 2 is Claude Code's
    TaskCompleted refused by the rules (the task stays open; the violations on stderr).
    """
    from planledger.clients.hooks.runner import run_hook

    return run_hook(args.agent, state.database)


def hooks_install(args: Args) -> None:
    """Merge the agent's hook entries into its settings, keeping everything else.

    Files: .claude/settings.json, .gemini/settings.json, .codex/hooks.json (in the project, or in
    the home folder with --user); OpenCode: a plugin, .opencode/plugins/planledger.js (--user:
    ~/.config/opencode/plugins/). Running it twice changes nothing. Exit 2 on unreadable settings.
    """
    from planledger.clients.hooks.install import install

    if args.project is not None and args.user:
        fail("give --project DIR or --user, not both", EXIT_INVALID)
    result = install(
        args.agent,
        project=args.project,
        user=args.user,
        database=state.database,
        print_only=args.print_only,
    )
    if args.print_only:
        sys.stdout.write(result.text)
    elif result.written:
        print(f"planledger hooks for {args.agent} written to {result.path}")
    else:
        print(f"planledger hooks for {args.agent} already in {result.path}; nothing changed")
    for note in result.notes:
        sys.stderr.write(f"note: {note}\n")


def tui(args: Args) -> None:
    """The terminal UI: the plan at any revision, its changes and its history, live.

    Keys: left/right one revision, Home first, End latest (live), h history, q quit.
    """
    from planledger.clients.tui.command import run_tui

    run_tui(args.session_id, server=args.server, database=state.database)


command = root.command("acp", acp)
command.add_argument(
    "agent_command",
    nargs="*",
    metavar="-- AGENT_CMD",
    help="Proxy this ACP agent, recording its plans; without it, serve ledger sessions.",
)

command = root.command("mcp", mcp)
command.add_argument(
    "--session",
    metavar="ID",
    help="Session the tools use when a call names none (opened if missing). Default: a new "
    "session mcp-<UTC time>-<hex>.",
)

command = root.command("import", import_sessions)
command.add_argument(
    "agent", choices=AGENTS, metavar="codex|claude|gemini|opencode", help="Whose transcripts."
)
command.add_argument(
    "paths",
    nargs="+",
    type=Path,
    metavar="PATH",
    help="Files, or folders searched for *.jsonl (OpenCode: opencode.db and *.json).",
)
add_json(command)

command = root.command("hook", hook)
command.add_argument("agent", metavar="AGENT", help="claude-code, gemini, codex or opencode.")

hooks_group = root.group("hooks", "Install the agent hooks into an agent's settings.")
command = hooks_group.command("install", hooks_install)
command.add_argument(
    "agent", choices=HOOK_AGENTS, metavar="AGENT", help="claude-code, gemini, codex or opencode."
)
command.add_argument(
    "--project", type=Path, metavar="DIR", help="The project folder (default: here)."
)
command.add_argument("--user", action="store_true", help="The user's settings in ~.")
command.add_argument(
    "--print",
    dest="print_only",
    action="store_true",
    help="Print the resulting file; write nothing.",
)

command = root.command("tui", tui)
add_session(command)
command.add_argument(
    "--server",
    metavar="URL",
    help="Read a `planledger serve` at URL (token from $PLANLEDGER_TOKEN) instead of the database.",
)
