"""`planledger plan ...`: propose, show and audit a plan."""

from __future__ import annotations

from typing import Annotated

import typer

from planledger.clients import plan_commands
from planledger.clients.cli.app import (
    JsonFlag,
    SessionArg,
    emit,
    out,
    plan_app,
    service,
    state,
)

# -- plans ------------------------------------------------------------------------------------


@plan_app.command("update")
def plan_update(
    session_id: SessionArg,
    source: Annotated[
        str, typer.Argument(metavar="[FILE|-]", help="JSON proposal in either form; - is stdin.")
    ] = "-",
    expected_revision: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Commit only if the plan is still at this revision "
            "(overrides the payload's expected_revision).",
        ),
    ] = None,
    proposal_id: Annotated[
        str | None,
        typer.Option(
            help="Client-chosen id: resending the same content returns the recorded "
            "outcome and writes nothing."
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Propose a plan (plan_update or update_plan form, detected) and decide it at once.

    Exit 0 committed, 3 rejected (every violation printed), 4 revision conflict,
    2 unknown session or unreadable input.
    """
    code = plan_commands.update(
        state.database,
        session_id,
        source,
        expected_revision=expected_revision,
        proposal_id=proposal_id,
        as_json=as_json,
    )
    raise typer.Exit(code)


@plan_app.command("show")
def plan_show(
    session_id: SessionArg,
    revision: Annotated[
        int | None, typer.Option(min=0, help="Show the plan as it stood at this revision.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """The plan now (from the plan view), or as it stood at an earlier revision."""
    raise typer.Exit(plan_commands.show(state.database, session_id, revision, as_json=as_json))


@plan_app.command("history")
def plan_history(session_id: SessionArg, as_json: JsonFlag = False) -> None:
    """Every proposal, commit and rejection, with each commit's step transitions."""
    history = service().history(session_id)
    from planledger.clients import render

    emit(as_json, history.as_json(), render.history_table(history))


@plan_app.command("diff")
def plan_diff(
    session_id: SessionArg,
    first: Annotated[int, typer.Argument(metavar="A", min=0, help="A revision (0: no plan).")],
    second: Annotated[int, typer.Argument(metavar="B", min=0, help="A later (or any) revision.")],
    as_json: JsonFlag = False,
) -> None:
    """What changed from revision A to revision B: steps added, removed, retitled and their
    status changes (the revisions need not be adjacent)."""
    diff = service().plan_diff(session_id, first, second)
    from planledger.clients import render

    emit(as_json, diff.as_json(), render.diff_text(diff))


@plan_app.command("file")
def plan_file(session_id: SessionArg) -> None:
    """The path of the session's plan.json (per database: see `planledger plan file --help`).

    The default store writes <PLANLEDGER_HOME>/sessions/ID/plan.json; any other database
    writes under <PLANLEDGER_HOME>/stores/<key>/, so two databases never share files.
    """
    ledger = service()
    ledger.plan(session_id)  # unknown (exit 2) or corrupt (exit 1) sessions have no file
    files = ledger.files
    assert files is not None
    out.print(str(files.path(session_id)), markup=False)


@plan_app.command("compaction")
def plan_compaction(
    session_id: SessionArg,
    max_chars: Annotated[
        int, typer.Option(min=0, help="Upper bound on the length of the summary text.")
    ] = 2000,
    as_json: JsonFlag = False,
) -> None:
    """The bounded plan summary a context-compaction handoff attaches.

    state is present, absent (no plan: never "done") or unreadable (with the error).
    """
    snapshot = service().compaction(session_id, max_chars)
    emit(as_json, snapshot.as_json(), snapshot.text)
