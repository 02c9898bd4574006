"""The importer's fast paths agree with the plain ones: lines read a block at a time as one at a
time, and an import spread over processes (`shares`) as one run in a single process."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.errors import CorruptHistory
from domain.ids import plan_aggregate_id
from planledger.importers import lines, run
from planledger.importers.lines import describe, records
from planledger.importers.parallel import ShareFailed, in_shares
from planledger.importers.report import MAX_LISTED, ErrorLog, LineError
from planledger.importers.run import import_paths
from planledger.service import Call, open_planledger
from tests.claude_transcripts import Transcript
from tests.rollouts import Rollout, plan_args

MARKER = b'"update_plan"'
PIECES = [
    b'{"a": 1}',
    b'{"type": "update_plan"}',
    b"",
    b'  {"x": 2}  ',
    b"GARBAGE",
    b"[1, 2]",
    b'{"cut": "upd',
    b'{"name": "update_plan", "x": "' + b"y" * 70 + b'"}',
    b'{"z": "' + b"q" * 90 + b'"}',
    b"\r",
    b'{"update_plan" ',
    b'\t{"a": "update_plan"}\t',
]


def line_by_line(data: bytes, limit: int) -> tuple[list[tuple[int, Any]], list[tuple[int, str]]]:
    """What `records` finds, read the plain way: each line on its own."""
    found: list[tuple[int, Any]] = []
    errors: list[tuple[int, str]] = []
    for number, line in enumerate(re.findall(rb"[^\n]*\n|[^\n]+$", data), 1):
        stripped = line.strip()
        object_like = stripped[:1] == b"{" and stripped[-1:] == b"}"
        if len(line.removesuffix(b"\n")) >= limit:
            if MARKER in line or not object_like:
                errors.append((number, f"line of {len(line):,} bytes, too long to read"))
            continue
        text = line if MARKER in line else stripped if stripped and not object_like else None
        if text is None:
            continue
        try:
            value = json.loads(text)
        except ValueError as error:
            errors.append((number, describe(error)))
        else:
            if MARKER in line:
                found.append((number, value))
    return found, errors


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(PIECES), max_size=25),
    ends_with_newline=st.booleans(),
    sizes=st.sampled_from([(1 << 24, 1 << 18), (64, 16), (64, 50), (40, 1000), (100, 3)]),
)
def test_blocks_are_read_as_lines_one_at_a_time(
    tmp_path_factory: pytest.TempPathFactory,
    pieces: list[bytes],
    ends_with_newline: bool,
    sizes: tuple[int, int],
) -> None:
    data = b"\n".join(pieces) + (b"\n" if ends_with_newline and pieces else b"")
    path = tmp_path_factory.mktemp("blocks") / "t.jsonl"
    path.write_bytes(data)
    limit, block = sizes
    errors: list[LineError] = []
    counted: list[int] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lines, "MAX_LINE_BYTES", limit)
        patch.setattr(lines, "BLOCK_BYTES", block)
        patch.setattr(lines, "CHUNK_BYTES", 7)
        found = list(records(path, (MARKER,), errors, counted.append))

    assert (found, [(e.line, e.message) for e in errors]) == line_by_line(data, limit)
    assert sum(counted) == len(data)


def codex_corpus(folder: Path) -> list[Path]:
    """Rollouts of several sessions: a fork replaying its parent, damaged lines, bad calls."""
    parent = Rollout("0199-parent")
    for n in range(6):
        parent.update_plan(n + 1, f"call_p{n}", plan_args((f"Step {n}", "in_progress")))
    fork = Rollout("0199-fork", forked_from="0199-parent", started=100).replay(parent.lines)
    fork.update_plan(101, "call_f1", plan_args(("Forked", "in_progress")))
    damaged = Rollout("0199-damaged").update_plan(1, "call_d1", plan_args(("Read", "pending")))
    damaged.raw("GARBAGE").raw('{"cut": ')
    damaged.record(2, "response_item", {"type": "function_call", "name": "update_plan"})
    damaged.update_plan(3, "call_d2", plan_args(("Read", "in_progress"), ("Read", "pending")))
    damaged.update_plan(4, "call d3", plan_args(("Read", "completed")))  # no proposal id
    paths = [
        parent.write(folder / "a" / "parent.jsonl"),
        fork.write(folder / "b" / "fork.jsonl"),
        damaged.write(folder / "c" / "damaged.jsonl"),
    ]
    for n in range(5):
        rollout = Rollout(f"0199-s{n}")
        for call in range(8):
            rollout.update_plan(call, f"call_{n}_{call}", plan_args(("Go", "in_progress")))
        paths.append(rollout.write(folder / "d" / f"s{n}.jsonl"))
    return paths


def claude_corpus(folder: Path) -> list[Path]:
    """Transcripts with todo lists and task tools, a subagent's own file among them."""
    todos = [{"content": "Write the parser", "status": "in_progress", "activeForm": "Writing"}]
    paths = []
    for n in range(4):
        transcript = Transcript(f"5e55-{n}")
        transcript.todo_write(todos)
        _, first = transcript.task_create("Write the parser")
        transcript.task_create("Test it")
        transcript.task_update(first, status="in_progress")
        transcript.task_create("Look around", agent="a1", in_file=True)
        transcript.todo_write(todos, agent="a2")
        paths.append(transcript.write(folder / f"p{n}.jsonl"))
    return paths


def imported(url: str, agent: run.Agent, folder: Path, shares: int) -> dict[str, Any]:
    """The report and every session's history and plan after importing `folder`."""
    with open_planledger(url, home=None) as service:
        report = import_paths(service, agent, [folder], shares=shares)
        again = import_paths(service, agent, [folder], shares=shares)
        ids = [s.session_id for s in report.sessions]
        stored = {
            sid: (
                [e.model_dump(exclude={"at"}) for e in service.history(sid).entries],
                service.plan(sid).model_dump(exclude={"updated_at"}),
            )
            for sid in ids
        }
    relative = json.loads(json.dumps(report.model_dump()).replace(str(folder), "F"))
    return {"report": relative, "again": again.model_dump()["errors"], "stored": stored}


@pytest.mark.parametrize("agent", ["codex", "claude"])
def test_an_import_in_shares_records_what_one_process_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent: run.Agent
) -> None:
    folder = tmp_path / "in"
    (codex_corpus if agent == "codex" else claude_corpus)(folder)
    monkeypatch.setattr(run, "SHARED_READ_BYTES", 0)
    monkeypatch.setattr(run, "SHARED_RECORD_CALLS", 0)
    counts: list[int] = []
    spread = in_shares

    def counted(work: Any, count: int) -> Any:
        counts.append(count)
        return spread(work, count)

    monkeypatch.setattr(run, "in_shares", counted)  # run's own name for it

    alone = imported(f"sqlite:///{tmp_path / 'one.sqlite3'}", agent, folder, shares=1)
    shared = imported(f"sqlite:///{tmp_path / 'three.sqlite3'}", agent, folder, shares=3)

    assert counts == [1, 1, 1, 1, 3, 3, 3, 3]  # reading, recording; each imported twice
    assert shared["report"] == json.loads(
        json.dumps(alone["report"]).replace(str(tmp_path / "in"), "F")
    )
    assert shared["stored"] == alone["stored"]
    assert shared["again"] == alone["again"]
    assert alone["report"]["sessions"] and all(
        s["committed"] or s["rejected"] or s["skipped"] for s in alone["report"]["sessions"]
    )
    if agent == "codex":
        assert [e["line"] for e in alone["report"]["errors"]] == [5, 6, 7, 10]


def test_a_share_that_fails_raises_its_error_here() -> None:
    def work(index: int) -> int:
        if index == 2:
            raise CorruptHistory("s1", 7, "revision_sequence", "commit says 3, follows 1")
        return index * 10

    assert in_shares(lambda index: index * 10, 3) == [0, 10, 20]
    with pytest.raises(CorruptHistory) as raised:
        in_shares(work, 3)
    error = raised.value
    assert (error.session_id, error.position, error.rule) == ("s1", 7, "revision_sequence")
    assert str(error).endswith("[revision_sequence] commit says 3, follows 1")
    with pytest.raises(ShareFailed, match="died"):
        in_shares(lambda index: os._exit(3) if index else 0, 2)


def test_a_log_merged_from_a_share_lists_what_one_log_would() -> None:
    def bad(path: str, line: int) -> LineError:
        return LineError(path=path, line=line, message=f"bad line {line}")

    one, here, there = ErrorLog(), ErrorLog(), ErrorLog()
    for path, log in (("a.jsonl", here), ("b.jsonl", there), ("c.jsonl", there)):
        for line in range(1, MAX_LISTED + 6):
            one.append(bad(path, line))
            log.append(bad(path, line))

    here.merge(there)

    assert (here.report(), len(here)) == (one.report(), len(one))


def test_a_session_opened_after_it_was_found_missing_is_recorded_all_the_same(
    sqlite_url: str,
) -> None:
    first, second = plan_args(("Read", "in_progress")), plan_args(("Read", "completed"))
    with open_planledger(sqlite_url, home=None) as service:
        service.open_session("s-race")
        service.submit("s-race", first, proposal_id="call_1")
        calls = [Call(payload=first, proposal_id="call_1"), Call(payload=second, proposal_id="c2")]

        decided = service.submit_sessions({"s-race": calls}, open_missing=True, absent={"s-race"})

        assert [(d.status, d.store_position is None) for d in decided["s-race"]] == [
            ("committed", True),
            ("committed", False),
        ]
        assert service.plan("s-race").revision == 2
        assert service.ledger.lost_races == 1  # its save found the session there, and retried


def test_a_bulk_save_takes_the_snapshots_a_save_takes(sqlite_url: str, tmp_path: Path) -> None:
    calls = [
        Call(payload=plan_args((f"Step {n}", "in_progress")), proposal_id=f"call_{n}")
        for n in range(120)
    ]
    taken = []
    for url, bulk in ((sqlite_url, False), (f"sqlite:///{tmp_path / 'bulk.sqlite3'}", True)):
        with open_planledger(url, home=None) as service:
            if bulk:
                service.submit_sessions({"s-long": calls}, open_missing=True, absent={"s-long"})
            else:
                service.submit_sessions({"s-long": calls}, open_missing=True)
            assert service.ledger.snapshots is not None
            stored = service.ledger.snapshots.get(plan_aggregate_id("s-long"))
            taken.append([snapshot.originator_version for snapshot in stored])
    assert taken[0] == taken[1] == [241]  # 241 events: a version of 100 and 200 among them


def test_a_call_past_the_input_limits_is_reported_alone_and_the_rest_recorded(
    sqlite_url: str, tmp_path: Path
) -> None:
    """The import checks each payload against the input limits as it reads it (so the service,
    which records the calls as checked, is never handed one past them)."""
    deep: Any = "x"
    for _ in range(20):  # past domain.limits.MAX_DEPTH, well within what a parser reads
        deep = [deep]
    rollout = Rollout("s-limits")
    rollout.update_plan(1, "call_1", plan_args(("Read", "in_progress")))  # lines 3, 4
    rollout.update_plan(2, "call_deep", {**plan_args(("Read", "completed")), "explanation": deep})
    rollout.update_plan(3, "call_3", plan_args(("Read", "completed")))
    path = rollout.write(tmp_path / "limits.jsonl")
    with open_planledger(sqlite_url, home=None) as service:
        report = import_paths(service, "codex", [path])

        assert [(e.line, e.message.split(":")[0]) for e in report.errors] == [(5, "call call_deep")]
        assert "nests objects or lists more than 16 deep" in report.errors[0].message
        ((session,),) = [report.sessions]
        assert (session.committed, session.rejected) == (2, 0)
        assert service.plan("codex-s-limits").revision == 2
