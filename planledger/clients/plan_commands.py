"""`plan update` and `plan show`, the commands agents run on every tool call: each opens the
service itself and imports rich and the renderings only for human output."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from planledger.clients.exits import (
    EXIT_CONFLICT,
    EXIT_OK,
    EXIT_REJECTED,
    EXIT_UNAVAILABLE,
    fail,
    warn,
)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def print_rich(renderable: Any) -> None:
    from rich.console import Console

    Console(highlight=False, soft_wrap=True).print(renderable)


def update(
    database: str | None,
    session_id: str,
    source: str,
    *,
    expected_revision: int | None,
    proposal_id: str | None,
    as_json: bool,
) -> int:
    """Propose and decide one plan; the exit code says what became of it."""
    from planledger.clients.payload import read_payload
    from planledger.service import open_planledger
    from planledger.storage.errors import unavailable_cause
    from planledger.storage.settings import database_settings

    payload = read_payload(source)
    if isinstance(payload, dict) and expected_revision is not None:
        payload = {**payload, "expected_revision": expected_revision}
    if isinstance(payload, dict) and isinstance(payload.get("proposal_id"), str):
        proposal_id = payload["proposal_id"]
    proposal_id = proposal_id or os.urandom(16).hex()
    service = open_planledger(database)
    try:
        decision = service.submit(session_id, payload, client="cli", proposal_id=proposal_id)
    except Exception as error:
        cause = unavailable_cause(error)
        if cause is None:
            raise
        where = database_settings(database).display_url
        fail(
            f"storage unavailable ({where}): {cause}; the proposal may or may not have been "
            f"recorded: retry with --proposal-id {proposal_id} (a retry never records it twice)",
            EXIT_UNAVAILABLE,
        )
    finally:
        service.close()
        for warning in service.warnings:
            warn(warning)
    if as_json:
        print_json(decision.model_dump(mode="json"))
    else:
        from planledger.clients import render

        explanation = payload.get("explanation") if isinstance(payload, dict) else None
        print_rich(render.decision_text(decision, explanation))
    if decision.status == "conflict":
        return EXIT_CONFLICT
    return EXIT_REJECTED if decision.status == "rejected" else EXIT_OK


def show(database: str | None, session_id: str, revision: int | None, *, as_json: bool) -> int:
    """The plan now (from the plan view), or as it stood at an earlier revision."""
    from planledger.service import open_planledger

    service = open_planledger(database)
    try:
        view = service.plan(session_id, revision)
    finally:
        service.close()
        for warning in service.warnings:
            warn(warning)
    if as_json:
        print_json(view.model_dump(mode="json", by_alias=True))
    else:
        from planledger.clients import render

        print_rich(render.plan_panel(view))
    return EXIT_OK
