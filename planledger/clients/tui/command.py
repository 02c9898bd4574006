"""`planledger tui ID [--server URL]`: pick the source, read the session, run the app."""

from __future__ import annotations

import os
import sys

from domain.errors import LedgerError
from planledger.clients.tui.source import PlanSource


class NoTerminal(LedgerError):
    code = "no_terminal"


def open_source(session_id: str, *, server: str | None, database: str | None) -> PlanSource:
    """A server's API when `server` is given (PLANLEDGER_TOKEN as its bearer token), else the
    database through the service layer."""
    if server:
        from planledger.clients.tui.remote import HttpSource

        return HttpSource(server, session_id, token=os.environ.get("PLANLEDGER_TOKEN") or None)
    from planledger.clients.tui.direct import DirectSource
    from planledger.service import open_planledger

    return DirectSource(open_planledger(database), session_id, owned=True)


def run_tui(session_id: str, *, server: str | None = None, database: str | None = None) -> None:
    """Read the session first (an unknown one raises `not_found` before any screen is drawn),
    then run the app until `q`."""
    source = open_source(session_id, server=server, database=database)
    try:
        loaded = source.load()
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            raise NoTerminal("planledger tui needs a terminal (use `plan show` or `plan history`)")
        from planledger.clients.tui.app import PlanLedgerTui

        PlanLedgerTui(source, loaded).run()
    finally:
        source.close()
