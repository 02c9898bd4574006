"""Codex rollouts: `update_plan` function calls, in the ledger session `codex-<id>` that the
file's first `session_meta` names.

Only Codex's own plan calls that Codex applied: a call with a `namespace` is an MCP server's
tool (`mcp__planledger`'s `update_plan`, recorded by that server), and a call whose
`function_call_output` says a hook blocked it or its arguments did not parse changed nothing in
Codex (counted as skipped)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from planledger.importers.calls import EARLIEST, PlanCall, parse_timestamp
from planledger.importers.lines import describe, records
from planledger.importers.report import Errors, LineError

# The outputs of calls Codex did not apply (0.171: "Tool call blocked by PreToolUse hook: ...",
# "failed to parse function arguments: ...").
NOT_APPLIED = (b"Tool call blocked by", b"failed to parse function arguments")
MARKERS = (b'"session_meta"', b'"update_plan"', *NOT_APPLIED)


def session_id(codex_id: str) -> str:
    return f"codex-{codex_id}"


def call_arguments(arguments: Any) -> dict[str, Any]:
    """The Codex-form payload of a call: `arguments` as JSON text or as an object.

    ValueError names what is wrong when the arguments do not parse to a JSON object."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError) as error:
            raise ValueError(f"arguments are {describe(error)}") from None
    if not isinstance(arguments, dict):
        raise ValueError(f"arguments are not a JSON object but {type(arguments).__name__}")
    return arguments


def read_codex(path: Path, errors: Errors, advance: Callable[[int], None]) -> list[PlanCall]:
    """Every `update_plan` call of one rollout file, in the session its first `session_meta`
    line names.

    A fork's or a spawned subagent's rollout starts with its own `session_meta` (naming its
    parent: `forked_from_id`, `parent_thread_id` or `source.subagent.thread_spawn`) and then
    replays its parent's history, the parent's `session_meta` included. A call after such a
    foreign `session_meta` that is dated before the session began is the parent's and is left
    out; a later one is marked `replay_of` those sessions, and is recorded only if none of them
    holds it already."""
    calls: list[PlanCall] = []
    refused: set[str] = set()  # call ids whose output says Codex did not apply them
    own: SessionMeta | None = None
    foreign: list[str] = []  # ledger sessions whose replayed history follows
    at = EARLIEST
    for number, record in records(path, MARKERS, errors, advance):
        payload = record.get("payload") if isinstance(record, dict) else None
        if not isinstance(payload, dict):
            continue
        kind = record.get("type")
        if kind == "session_meta":
            at = parse_timestamp(record.get("timestamp"), at)
            meta_id = payload.get("id")
            if not isinstance(meta_id, str) or not meta_id:
                errors.append(
                    LineError(path=str(path), line=number, message="session_meta has no id")
                )
            elif own is None:
                own = SessionMeta.of(meta_id, payload, at)
            elif meta_id != own.codex_id and session_id(meta_id) not in foreign:
                foreign.append(session_id(meta_id))
            continue
        if kind == "response_item" and payload.get("type") == "function_call_output":
            if _not_applied(payload.get("output")) and isinstance(payload.get("call_id"), str):
                refused.add(payload["call_id"])
            continue
        if not (
            kind == "response_item"
            and payload.get("type") == "function_call"
            and payload.get("name") == "update_plan"
            and not payload.get("namespace")
        ):
            continue
        at = parse_timestamp(record.get("timestamp"), at)
        problem = _check_call(payload, own.codex_id if own else None)
        if problem is None:
            try:
                arguments = call_arguments(payload.get("arguments"))
            except ValueError as error:
                problem = f"update_plan call {payload['call_id']}: {error}"
        if problem is not None:
            errors.append(LineError(path=str(path), line=number, message=problem))
            continue
        assert own is not None
        if foreign and at < own.started:
            continue  # the parent's call, replayed: dated before this session began
        calls.append(
            PlanCall(
                session_id=session_id(own.codex_id),
                call_id=payload["call_id"],
                payload=arguments,
                at=at,
                path=str(path),
                line=number,
                parent_session_id=own.parent,
                cwd=own.cwd,
                replay_of=tuple(foreign),
            )
        )
    return [replace(call, payload=None) if call.call_id in refused else call for call in calls]


def _not_applied(output: Any) -> bool:
    text = output if isinstance(output, str) else json.dumps(output)
    return any(marker.decode() in text[:200] for marker in NOT_APPLIED)


@dataclass(frozen=True)
class SessionMeta:
    """What a rollout's first `session_meta` says of its session."""

    codex_id: str
    started: datetime
    parent: str | None
    cwd: str | None

    @classmethod
    def of(cls, codex_id: str, payload: dict[str, Any], at: datetime) -> SessionMeta:
        source = payload.get("source")
        subagent = source.get("subagent") if isinstance(source, dict) else None
        spawn = subagent.get("thread_spawn") if isinstance(subagent, dict) else None
        parent = next(
            (
                value
                for value in (
                    payload.get("forked_from_id"),
                    payload.get("parent_thread_id"),
                    spawn.get("parent_thread_id") if isinstance(spawn, dict) else None,
                )
                if isinstance(value, str) and value
            ),
            None,
        )
        cwd = payload.get("cwd")
        return cls(
            codex_id=codex_id,
            started=parse_timestamp(payload.get("timestamp"), at),
            parent=session_id(parent) if parent else None,
            cwd=cwd if isinstance(cwd, str) and cwd else None,
        )


def rollout_parent(path: Path) -> str | None:
    """The ledger session of the parent the rollout's first line (`session_meta`) names."""
    try:
        with path.open("rb") as file:
            first = json.loads(file.readline())
    except (OSError, ValueError):
        return None
    if not isinstance(first, dict) or first.get("type") != "session_meta":
        return None
    payload = first.get("payload")
    if not isinstance(payload, dict):
        return None
    codex_id = payload.get("id")
    if not isinstance(codex_id, str):
        return None
    return SessionMeta.of(codex_id, payload, EARLIEST).parent


def _check_call(payload: dict[str, Any], codex_id: str | None) -> str | None:
    call_id = payload.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        return "update_plan call has no call_id"
    if codex_id is None:
        return f"update_plan call {call_id} comes before any session_meta line naming its session"
    return None
