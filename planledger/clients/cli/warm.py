"""`planledger warm status|stop`: the background process that answers later CLI calls."""

from __future__ import annotations

import time
from typing import Any

import typer
from rich.table import Table

from planledger.clients.cli.app import JsonFlag, app, emit
from planledger.clients.warm import control
from planledger.clients.warm.identity import code_key

warm_app = typer.Typer(
    help="The warm process: a background interpreter, per installed code, that runs later "
    "commands with the domain already imported (PLANLEDGER_NO_WARM=1 turns it off).",
    no_args_is_help=True,
)
app.add_typer(warm_app, name="warm")


@warm_app.command("status")
def warm_status(as_json: JsonFlag = False) -> None:
    """Every warm process of this user: its process id, code key, commands served and age."""
    current = code_key()
    found = [{**status, "current": status.get("key") == current} for status in control.statuses()]
    emit(as_json, {"warm_processes": found}, status_table(found))


def status_table(found: list[dict[str, Any]]) -> Table | str:
    if not found:
        return "no warm process is running"
    table = Table("pid", "code", "python", "served", "up", "leaves after idle")
    for status in found:
        up = time.time() - float(status.get("started", time.time()))
        key = f"{status.get('key')}{' (this installation)' if status['current'] else ''}"
        table.add_row(
            str(status.get("pid")),
            key,
            str(status.get("python")),
            str(status.get("served")),
            f"{up:.0f} s",
            f"{float(status.get('idle_seconds', 0)):.0f} s",
        )
    return table


@warm_app.command("stop")
def warm_stop(as_json: JsonFlag = False) -> None:
    """Stop every warm process of this user (the next command runs cold and starts one)."""
    stopped, removed = control.stop_all()
    summary = f"stopped {len(stopped)} warm process(es)"
    if removed:
        summary += f"; removed {removed} socket(s) left by processes that were gone"
    emit(as_json, {"stopped": stopped, "removed_sockets": removed}, summary)
