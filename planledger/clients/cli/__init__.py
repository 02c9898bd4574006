"""`planledger`: the command line. Each module registers its commands on the parser of `app`."""

from planledger.clients.cli import admin, agents, audit, plans, sessions
from planledger.clients.cli.app import run

__all__ = ["admin", "agents", "audit", "plans", "run", "sessions"]
