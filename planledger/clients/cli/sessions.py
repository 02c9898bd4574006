"""`planledger session ...` and `planledger goal ...`."""

from __future__ import annotations

from typing import Annotated

import typer

from domain.session import Mode
from planledger.clients.cli.app import (
    JsonFlag,
    ModeChoice,
    SessionArg,
    emit,
    goal_app,
    service,
    session_app,
)

# -- sessions ---------------------------------------------------------------------------------


@session_app.command("open")
def session_open(
    session_id: SessionArg,
    mode: Annotated[ModeChoice, typer.Option(help="Collaboration mode.")] = ModeChoice.work,
    as_json: JsonFlag = False,
) -> None:
    """Open a session (exit 2 if it exists or the id is invalid)."""
    view = service().open_session(session_id, Mode(mode.value), source="cli")
    from planledger.clients import render

    emit(as_json, view, render.session_text(view))


@session_app.command("mode")
def session_mode(session_id: SessionArg, mode: ModeChoice, as_json: JsonFlag = False) -> None:
    """Switch the collaboration mode: the user's explicit command, recorded as an event."""
    view = service().set_mode(session_id, Mode(mode.value))
    from planledger.clients import render

    emit(as_json, view, render.session_text(view))


@session_app.command("show")
def session_show(session_id: SessionArg, as_json: JsonFlag = False) -> None:
    """Mode, goals and should_continue of a session."""
    view = service().session(session_id)
    from planledger.clients import render

    emit(as_json, view, render.session_text(view))


@session_app.command("list")
def session_list(as_json: JsonFlag = False) -> None:
    """Every session with its mode and plan revision, the most recently active first."""
    sessions = service().sessions()
    from planledger.clients import render

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
    from planledger.clients import render

    emit(as_json, view, render.session_text(view))


def _goal_edge(edge: str, doc: str) -> None:
    def command(session_id: SessionArg, goal_id: GoalArg, as_json: JsonFlag = False) -> None:
        view = service().move_goal(session_id, goal_id, edge)
        from planledger.clients import render

        emit(as_json, view, render.session_text(view))

    command.__doc__ = doc
    goal_app.command(edge)(command)


_goal_edge("complete", "Complete an active goal (exit 3 if it is not active).")
_goal_edge("block", "Block an active goal (exit 3 if it is not active).")
_goal_edge("resume", "Resume a blocked goal (exit 3 if it is not blocked).")
_goal_edge("cancel", "Cancel an active or blocked goal (exit 3 if it is neither).")
