"""`planledger session ...` and `planledger goal ...`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from domain.session_fields import Mode
from planledger.clients.cli.app import (
    MODES,
    Args,
    add_json,
    add_session,
    emit,
    goal_group,
    service,
    session_group,
)

if TYPE_CHECKING:
    from planledger.service.results import SessionView


def shown(args: Args, view: SessionView) -> None:
    from planledger.clients import render

    emit(args.as_json, view, render.session_text(view))


def session_open(args: Args) -> None:
    """Open a session (exit 2 if it exists or the id is invalid)."""
    shown(args, service().open_session(args.session_id, Mode(args.mode), source="cli"))


def session_mode(args: Args) -> None:
    """Switch the collaboration mode: the user's explicit command, recorded as an event."""
    shown(args, service().set_mode(args.session_id, Mode(args.mode)))


def session_show(args: Args) -> None:
    """Mode, goals and should_continue of a session."""
    shown(args, service().session(args.session_id))


def session_list(args: Args) -> None:
    """Every session with its mode and plan revision, the most recently active first."""
    sessions = service().sessions()
    from planledger.clients import render

    emit(args.as_json, sessions, render.session_list_table(sessions))


def goal_start(args: Args) -> None:
    """Start a durable goal in a session."""
    shown(args, service().start_goal(args.session_id, args.goal_id, args.objective))


def goal_move(args: Args) -> None:
    shown(args, service().move_goal(args.session_id, args.goal_id, args.edge))


command = session_group.command("open", session_open)
add_session(command)
command.add_argument("--mode", choices=MODES, default="work", help="Collaboration mode.")
add_json(command)

command = session_group.command("mode", session_mode)
add_session(command)
command.add_argument("mode", choices=MODES, metavar="{work|plan}", help="The mode.")
add_json(command)

command = session_group.command("show", session_show)
add_session(command)
add_json(command)

add_json(session_group.command("list", session_list))

command = goal_group.command("start", goal_start)
add_session(command)
command.add_argument("goal_id", metavar="GOAL_ID")
command.add_argument("objective", metavar="OBJECTIVE")
add_json(command)

for edge, doc in (
    ("complete", "Complete an active goal (exit 3 if it is not active)."),
    ("block", "Block an active goal (exit 3 if it is not active)."),
    ("resume", "Resume a blocked goal (exit 3 if it is not blocked)."),
    ("cancel", "Cancel an active or blocked goal (exit 3 if it is neither)."),
):
    command = goal_group.command(edge, goal_move, doc)
    command.set_defaults(edge=edge)
    add_session(command)
    command.add_argument("goal_id", metavar="GOAL_ID")
    add_json(command)
