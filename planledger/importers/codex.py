"""Codex rollouts: `update_plan` function calls, in ledger session `codex-<session_meta id>`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planledger.importers.calls import EARLIEST, PlanCall, parse_timestamp
from planledger.importers.lines import describe, records
from planledger.importers.report import LineError

MARKERS = (b'"session_meta"', b'"update_plan"')


def session_id(codex_id: str) -> str:
    return f"codex-{codex_id}"


def call_arguments(arguments: Any) -> dict[str, Any]:
    """The Codex-form payload of a call: `arguments` as JSON text or as an object.

    ValueError names what is wrong when the arguments do not parse to a JSON object."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError as error:
            raise ValueError(f"arguments are {describe(error)}") from None
    if not isinstance(arguments, dict):
        raise ValueError(f"arguments are not a JSON object but {type(arguments).__name__}")
    return arguments


def read_codex(
    path: Path, errors: list[LineError], advance: Callable[[int], None]
) -> list[PlanCall]:
    """Every `update_plan` call of one rollout file, in the session its latest
    `session_meta` line names."""
    calls: list[PlanCall] = []
    codex_id: str | None = None
    at = EARLIEST
    for number, record in records(path, MARKERS, errors, advance):
        payload = record.get("payload") if isinstance(record, dict) else None
        if not isinstance(payload, dict):
            continue
        kind = record.get("type")
        if kind == "session_meta":
            at = parse_timestamp(record.get("timestamp"), at)
            meta_id = payload.get("id")
            if isinstance(meta_id, str) and meta_id:
                codex_id = meta_id
            else:
                errors.append(
                    LineError(path=str(path), line=number, message="session_meta has no id")
                )
            continue
        if not (
            kind == "response_item"
            and payload.get("type") == "function_call"
            and payload.get("name") == "update_plan"
        ):
            continue
        at = parse_timestamp(record.get("timestamp"), at)
        problem = _check_call(payload, codex_id)
        if problem is None:
            try:
                arguments = call_arguments(payload.get("arguments"))
            except ValueError as error:
                problem = f"update_plan call {payload['call_id']}: {error}"
        if problem is not None:
            errors.append(LineError(path=str(path), line=number, message=problem))
            continue
        assert codex_id is not None
        calls.append(
            PlanCall(
                session_id=session_id(codex_id),
                call_id=payload["call_id"],
                payload=arguments,
                at=at,
                path=str(path),
                line=number,
            )
        )
    return calls


def _check_call(payload: dict[str, Any], codex_id: str | None) -> str | None:
    call_id = payload.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        return "update_plan call has no call_id"
    if codex_id is None:
        return f"update_plan call {call_id} comes before any session_meta line naming its session"
    return None
