"""`planledger plan ...`: propose, show and audit a plan."""

from __future__ import annotations

from planledger.clients import plan_commands
from planledger.clients.cli.app import (
    Args,
    add_json,
    add_session,
    at_least,
    emit,
    out,
    plan_group,
    service,
    state,
)


def plan_update(args: Args) -> int:
    """Propose a plan (plan_update or update_plan form, detected) and decide it at once.

    Exit 0 committed, 3 rejected (every violation printed), 4 revision conflict,
    2 unknown session or unreadable input.
    """
    return plan_commands.update(
        state.database,
        args.session_id,
        args.source,
        expected_revision=args.expected_revision,
        proposal_id=args.proposal_id,
        as_json=args.as_json,
    )


def plan_show(args: Args) -> int:
    """The plan now (from the plan view), or as it stood at an earlier revision."""
    return plan_commands.show(state.database, args.session_id, args.revision, as_json=args.as_json)


def plan_history(args: Args) -> None:
    """Every proposal, commit and rejection, with each commit's step transitions."""
    history = service().history(args.session_id)
    from planledger.clients import render

    emit(args.as_json, history.as_json(), render.history_table(history))


def plan_diff(args: Args) -> None:
    """What changed from revision A to revision B: steps added, removed, retitled and their
    status changes (the revisions need not be adjacent)."""
    diff = service().plan_diff(args.session_id, args.first, args.second)
    from planledger.clients import render

    emit(args.as_json, diff.as_json(), render.diff_text(diff))


def plan_file(args: Args) -> None:
    """The path of the session's plan.json (per database: see `planledger plan file --help`).

    The default store writes <PLANLEDGER_HOME>/sessions/ID/plan.json; any other database
    writes under <PLANLEDGER_HOME>/stores/<key>/, so two databases never share files.
    """
    ledger = service()
    ledger.plan(args.session_id)  # unknown (exit 2) or corrupt (exit 1) sessions have no file
    files = ledger.files
    assert files is not None
    out.print(str(files.path(args.session_id)), markup=False)


def plan_compaction(args: Args) -> None:
    """The bounded plan summary a context-compaction handoff attaches.

    state is present, absent (no plan: never "done") or unreadable (with the error).
    """
    snapshot = service().compaction(args.session_id, args.max_chars)
    emit(args.as_json, snapshot.as_json(), snapshot.text)


command = plan_group.command("update", plan_update)
add_session(command)
command.add_argument(
    "source",
    metavar="[FILE|-]",
    nargs="?",
    default="-",
    help="JSON proposal in either form; - is stdin (the default).",
)
command.add_argument(
    "--expected-revision",
    type=at_least(0),
    help="Commit only if the plan is still at this revision (overrides the payload's "
    "expected_revision).",
)
command.add_argument(
    "--proposal-id",
    help="Client-chosen id: resending the same content returns the recorded outcome and "
    "writes nothing.",
)
add_json(command)

command = plan_group.command("show", plan_show)
add_session(command)
command.add_argument(
    "--revision", type=at_least(0), help="Show the plan as it stood at this revision."
)
add_json(command)

command = plan_group.command("history", plan_history)
add_session(command)
add_json(command)

command = plan_group.command("diff", plan_diff)
add_session(command)
command.add_argument("first", metavar="A", type=at_least(0), help="A revision (0: no plan).")
command.add_argument("second", metavar="B", type=at_least(0), help="A later (or any) revision.")
add_json(command)

command = plan_group.command("file", plan_file)
add_session(command)

command = plan_group.command("compaction", plan_compaction)
add_session(command)
command.add_argument(
    "--max-chars",
    type=at_least(0),
    default=2000,
    help="Upper bound on the length of the summary text (default: 2000).",
)
add_json(command)
