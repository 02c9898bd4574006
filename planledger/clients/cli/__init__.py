"""`planledger`: the command line. Each module registers its commands on the parser of `app`;
a command's own module is the one imported (all of them for the top-level help), so an agent's
`plan update` or `hook` loads none of the others."""

from __future__ import annotations

import importlib

from planledger.clients.cli import app

# The commands an agent runs on every tool call: short, bounded by one session's size.
PER_CALL = frozenset({"plan", "session", "goal", "hook"})
MODULES = ("admin", "agents", "audit", "plans", "sessions")  # (the top-level help's order)
WHERE = {
    "session": "sessions",
    "goal": "sessions",
    "plan": "plans",
    "projections": "admin",
    "serve": "admin",
    "verify": "admin",
    "demo": "admin",
    "acp": "agents",
    "mcp": "agents",
    "import": "agents",
    "hook": "agents",
    "hooks": "agents",
    "tui": "agents",
    "checkpoint": "audit",
    "export": "audit",
    "tokens": "audit",
}


def run(argv: list[str]) -> int:
    """The full command line on `argv` (global options first); returns the exit code."""
    command = first_word(argv)
    for name in (WHERE[command],) if command in WHERE else MODULES:
        importlib.import_module(f"{__name__}.{name}")
    return app.run(argv)


def first_word(argv: list[str]) -> str | None:
    """The command `argv` names, past the global options (None: none, or a help)."""
    words = iter(argv)
    for arg in words:
        if arg == "--database":
            next(words, None)  # its value
        elif arg in ("-h", "--help", "--"):
            return None
        elif not arg.startswith("-"):
            return arg
    return None
