"""`planledger`: the command line. Each module registers its commands on the typer application
of `app`."""

from planledger.clients.cli import admin, agents, audit, plans, sessions
from planledger.clients.cli.app import app, main, run
from planledger.clients.payload import read_payload

__all__ = [
    "admin",
    "agents",
    "app",
    "audit",
    "main",
    "plans",
    "read_payload",
    "run",
    "sessions",
]
