"""`planledger import codex|claude`, driven through the installed command."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from planledger.service import open_planledger
from tests.claude_transcripts import Transcript, todo_transcript
from tests.e2e.hook_events import run_hook
from tests.e2e.test_cli import Cli
from tests.rollouts import Rollout, plan_args
from tests.samples import samples

COUNTS = ("calls", "committed", "rejected", "skipped")


@pytest.fixture(params=["sqlite", "postgres"])
def db_cli(request: pytest.FixtureRequest, tmp_path: Path) -> Cli:
    if request.param == "sqlite":
        return Cli(tmp_path / "home")
    return Cli(tmp_path / "home", request.getfixturevalue("postgres_url"))


def url_of(cli: Cli) -> str:
    return cli.database or f"sqlite:///{cli.home / 'ledger.sqlite3'}"


def store_position(cli: Cli) -> int:
    """The position of the last event in the store: unchanged means nothing was written."""
    with open_planledger(url_of(cli), home=None) as service:
        return service.health().store_position


def history(cli: Cli, session: str) -> list[dict[str, Any]]:
    with open_planledger(url_of(cli), home=None) as service:
        entries: list[dict[str, Any]] = service.history(session).as_json()["entries"]
        return entries


def committed_ids(cli: Cli, session: str) -> list[str]:
    return [e["proposal_id"] for e in history(cli, session) if e["kind"] == "committed"]


def run_import(cli: Cli, agent: str, *paths: Path, code: int = 0) -> dict[str, Any]:
    report: dict[str, Any] = cli.json("import", agent, *map(str, paths), code=code)
    return report


def counts(report: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    return {s["session_id"]: tuple(s[key] for key in COUNTS) for s in report["sessions"]}


def todo_writes(path: Path) -> dict[str, list[tuple[str, list[dict[str, Any]], bool]]]:
    """Per Claude session: each TodoWrite call (id, todos, accepted by Claude Code), read with
    a full parse of every line, independently of the importer."""
    calls: dict[str, list[tuple[str, list[dict[str, Any]], bool]]] = {}
    failed: set[str] = set()
    for line in path.read_text().splitlines():
        record = json.loads(line)
        message = record.get("message")
        for block in message.get("content", []) if isinstance(message, dict) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result" and block.get("is_error"):
                failed.add(block["tool_use_id"])
            if block.get("type") == "tool_use" and block.get("name") == "TodoWrite":
                session = f"claude-{record['sessionId']}"
                calls.setdefault(session, []).append((block["id"], block["input"]["todos"], True))
    return {
        session: [(cid, todos, cid not in failed) for cid, todos, _ in found]
        for session, found in calls.items()
    }


def steps(view: dict[str, Any]) -> list[tuple[str, str]]:
    return [(step["title"], step["status"]) for step in view["steps"]]


def todo_steps(todos: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(todo["content"].strip(), todo["status"]) for todo in todos]


def test_real_claude_transcripts(db_cli: Cli) -> None:
    folder = samples("claude")
    expected: dict[str, list[tuple[str, list[dict[str, Any]], bool]]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        expected.update(todo_writes(path))
    assert len(expected) == 3 and all(len(calls) == 4 for calls in expected.values())

    report = run_import(db_cli, "claude", folder)

    assert report["errors"] == []
    assert counts(report) == {session: (4, 4, 0, 0) for session in expected}
    with open_planledger(url_of(db_cli), home=None) as service:
        for session, calls in expected.items():
            accepted = [todos for _, todos, ok in calls if ok]
            assert steps(service.plan(session).model_dump()) == todo_steps(accepted[-1])
            entries = service.history(session).as_json()["entries"]
            assert [e["proposal_id"] for e in entries if e["kind"] == "committed"] == [
                cid for cid, _, _ in calls
            ]
            assert {e["client"] for e in entries if e["kind"] == "proposed"} == {"import:claude"}
        assert service.verify().ok
    session, calls = sorted(expected.items())[0]
    for revision, (_, todos, _) in enumerate(calls, 1):
        view = db_cli.json("plan", "show", session, "--revision", str(revision))
        assert (view["revision"], steps(view)) == (revision, todo_steps(todos))


def test_reimport_writes_nothing(db_cli: Cli, tmp_path: Path) -> None:
    rollout = Rollout("0199a1b2-c3d4")
    for n in range(1, 6):
        rollout.update_plan(n, f"call_{n}", plan_args((f"Step {n}", "in_progress")))
    path = rollout.write(tmp_path / "sessions" / "rollout-1.jsonl")
    first = run_import(db_cli, "codex", path)
    assert counts(first) == {"codex-0199a1b2-c3d4": (5, 5, 0, 0)}
    written = store_position(db_cli)

    again = run_import(db_cli, "codex", tmp_path / "sessions", path)

    assert counts(again) == {"codex-0199a1b2-c3d4": (5, 0, 0, 5)}
    assert store_position(db_cli) == written


def test_codex_rollouts_in_timestamp_order_across_overlapping_files(
    db_cli: Cli, tmp_path: Path
) -> None:
    rollout = Rollout("0199-overlap").user(1, "Fix the flaky test, use update_plan")
    texts = ["Reproduce", "Find the race", "Fix it", "Run the suite"]
    for n in range(len(texts) + 1):
        statuses = ["completed"] * n + ["in_progress"] + ["pending"] * (len(texts) - n - 1)
        plan = list(zip(texts, statuses[: len(texts)], strict=True))
        rollout.update_plan(10 * (n + 1), f"call_{n}", plan_args(*plan), as_text=n % 2 == 0)
        rollout.other_tools(10 * (n + 1) + 5, f"call_shell_{n}")
    # the second file repeats the first one's last lines (a resumed session), and comes first
    early = rollout.write(tmp_path / "b-early.jsonl", slice(0, 20))
    late = rollout.write(tmp_path / "a-late.jsonl", slice(12, None))
    late.write_text(rollout.lines[0] + "\n" + late.read_text())  # its own session_meta

    report = run_import(db_cli, "codex", late, early)

    assert counts(report) == {"codex-0199-overlap": (5, 5, 0, 0)}
    assert committed_ids(db_cli, "codex-0199-overlap") == [f"call_{n}" for n in range(5)]
    final = db_cli.json("plan", "show", "codex-0199-overlap")
    assert steps(final) == [(text, "completed") for text in texts]
    second = db_cli.json("plan", "show", "codex-0199-overlap", "--revision", "2")
    assert steps(second)[:2] == [("Reproduce", "completed"), ("Find the race", "in_progress")]


def test_claude_session_split_over_overlapping_files(db_cli: Cli, tmp_path: Path) -> None:
    transcript, call_ids = todo_transcript("d88bceb6-split")
    transcript.write(tmp_path / "part2.jsonl", slice(8, None))
    transcript.write(tmp_path / "sub" / "part1.jsonl", slice(0, 12))

    split = run_import(db_cli, "claude", tmp_path)

    assert counts(split) == {"claude-d88bceb6-split": (4, 4, 0, 0)}
    assert len(split["sessions"][0]["files"]) == 2
    assert committed_ids(db_cli, "claude-d88bceb6-split") == call_ids


def test_damaged_files_are_reported_and_the_rest_imported(db_cli: Cli, tmp_path: Path) -> None:
    rollout = Rollout("0199-damaged")
    rollout.update_plan(1, "call_1", plan_args(("Read the code", "in_progress")))
    rollout.lines.append("this is not JSON")  # line 5
    rollout.record(
        2,
        "response_item",
        {"type": "function_call", "name": "update_plan", "arguments": '{"plan": [', "call_id": "c"},
    )  # line 6
    rollout.update_plan(3, "call_3", plan_args(("Read the code", "completed")))
    rollout.update_plan(4, "call_4", plan_args(("Ship", "in_progress")))
    path = rollout.write(tmp_path / "damaged.jsonl")
    path.write_text(path.read_text()[:-60])  # the last line (call_4's output) is cut
    claude = tmp_path / "claude"
    transcript = todo_transcript("d88bceb6-cut")[0].write(claude / "cut.jsonl")
    text = transcript.read_text()
    transcript.write_text(text[: text.rindex('"TodoWrite"') + 200])  # cut in the last call
    cut_line = text[: text.rindex('"TodoWrite"')].count("\n") + 1

    codex = run_import(db_cli, "codex", path, tmp_path / "missing.jsonl", code=2)
    cut = run_import(db_cli, "claude", claude, code=2)

    assert [(e["path"], e["line"]) for e in codex["errors"]] == [
        (str(tmp_path / "missing.jsonl"), 0),
        (str(path), 5),
        (str(path), 6),
        (str(path), 10),
    ]
    assert "arguments are not JSON" in codex["errors"][2]["message"]
    assert counts(codex) == {"codex-0199-damaged": (3, 3, 0, 0)}
    assert [(e["path"], e["line"]) for e in cut["errors"]] == [(str(transcript), cut_line)]
    assert counts(cut) == {"claude-d88bceb6-cut": (3, 3, 0, 0)}
    human = db_cli("import", "codex", str(path))
    assert human.returncode == 2
    assert f"{path}:6: update_plan call c: arguments are not JSON" in human.stderr
    assert "codex-0199-damaged" in human.stdout


def test_rule_breaking_calls_are_recorded_as_rejected(db_cli: Cli, tmp_path: Path) -> None:
    rollout = Rollout("0199-rules")
    rollout.update_plan(1, "call_ok", plan_args(("Plan", "in_progress"), ("Build", "pending")))
    two_active = plan_args(("Plan", "in_progress"), ("Build", "in_progress"))
    rollout.update_plan(2, "call_two", two_active)
    rollout.update_plan(3, "call_field", {**plan_args(("Plan", "completed")), "mode": "plan"})
    rollout.update_plan(4, "call_done", plan_args(("Plan", "completed"), ("Build", "completed")))
    rollout.update_plan(5, "call:colon", plan_args(("Plan", "pending")))  # line 11
    bad_id = Rollout("has a space").update_plan(1, "call_x", plan_args(("Plan", "pending")))
    path = rollout.write(tmp_path / "rules.jsonl")
    bad_path = bad_id.write(tmp_path / "bad-id.jsonl")

    report = run_import(db_cli, "codex", path, bad_path, code=2)

    assert counts(report) == {"codex-0199-rules": (4, 2, 2, 0)}
    assert [(e["path"], e["line"]) for e in report["errors"]] == [
        (str(path), 11),
        (str(bad_path), 3),
    ]
    assert "invalid call id 'call:colon'" in report["errors"][0]["message"]
    assert "invalid session id" in report["errors"][1]["message"]
    rejected = {
        e["proposal_id"]: [v["code"] for v in e["violations"]]
        for e in history(db_cli, "codex-0199-rules")
        if e["kind"] == "rejected"
    }
    assert rejected == {
        "call_two": ["multiple_in_progress"],
        "call_field": ["mode_change_forbidden"],
    }
    assert db_cli.json("plan", "show", "codex-0199-rules")["revision"] == 2


# -- Claude Code's task tools ------------------------------------------------------------------


def test_real_claude_task_sessions_give_exactly_the_expected_lists(
    db_cli: Cli, tmp_path: Path
) -> None:
    """../shared/samples/claude-tasks: three real sessions over eleven overlapping files, with
    subagent calls, two error answers and blockers; EXPECTED.json says what each must give."""
    folder = samples("claude-tasks")
    expected = json.loads((folder / "EXPECTED.json").read_text())
    unpacked = tmp_path / "transcripts"
    unpacked.mkdir()
    for packed in sorted(folder.glob("*.jsonl.gz")):
        (unpacked / packed.name.removesuffix(".gz")).write_bytes(
            gzip.decompress(packed.read_bytes())
        )

    report = run_import(db_cli, "claude", unpacked)

    assert report["errors"] == []
    assert counts(report) == {
        f"claude-{sid}": (
            want["calls"],
            want["calls"] - want["skipped"] - want["rejected"],
            want["rejected"],
            want["skipped"],
        )
        for sid, want in expected.items()
    }
    for sid, want in expected.items():
        view = db_cli.json("plan", "show", f"claude-{sid}")
        assert view["policy"] == "tasks"
        assert [{k: s[k] for k in ("id", "title", "status")} for s in view["steps"]] == want[
            "final"
        ]
    blocked = db_cli.json("plan", "show", "claude-2aeee101-92bd-4b51-a063-4f47cd58f907")
    assert {s["id"]: s.get("blocked_by", []) for s in blocked["steps"]}["6"] == ["2", "3", "4", "5"]
    written = store_position(db_cli)
    again = run_import(db_cli, "claude", unpacked)
    assert store_position(db_cli) == written  # importing again writes nothing
    assert {s["committed"] + s["rejected"] for s in again["sessions"]} == {0}
    assert db_cli.json("verify")["ok"] is True


def test_task_calls_recorded_by_hooks_are_not_recorded_again_by_an_import(
    db_cli: Cli, tmp_path: Path
) -> None:
    transcript = Transcript("sess-hooked")
    _, one = transcript.task_create("Write the test")
    transcript.task_create("Fix the bug")
    update = transcript.task_update("1", status="in_progress")
    path = transcript.write(tmp_path / "sess-hooked.jsonl")
    session = "claude-sess-hooked"
    with open_planledger(url_of(db_cli), home=None) as service:
        service.open_session(session)
        # a TaskCreated hook recorded task 1 under an id of its own, PreToolUse the update
        service.submit(
            session,
            {"op": "create", "id": one, "title": "Write the test"},
            proposal_id="task-1-created",
        )
        service.submit(
            session, {"op": "update", "id": "1", "status": "in_progress"}, proposal_id=update
        )

    report = run_import(db_cli, "claude", path)

    assert counts(report) == {session: (3, 1, 0, 2)}
    view = db_cli.json("plan", "show", session)
    assert [(s["id"], s["status"]) for s in view["steps"]] == [
        ("1", "in_progress"),
        ("2", "pending"),
    ]


# -- Codex forks and subagents -----------------------------------------------------------------


def fork_rollouts(tmp_path: Path) -> tuple[Path, Path]:
    """A parent's rollout, and a fork's: its own session_meta, the parent's lines replayed,
    then a call of its own. The parent goes on after the fork."""
    parent = Rollout("0199-parent").user(1, "go")
    parent.update_plan(2, "call_p1", plan_args(("Reproduce", "in_progress"), ("Fix", "pending")))
    parent.update_plan(3, "call_p2", plan_args(("Reproduce", "completed"), ("Fix", "in_progress")))
    fork = Rollout("0199-fork", forked_from="0199-parent", started=10).replay(parent.lines)
    fork.update_plan(12, "call_f1", plan_args(("Try another fix", "in_progress")))
    parent.update_plan(13, "call_p3", plan_args(("Reproduce", "completed"), ("Fix", "completed")))
    return parent.write(tmp_path / "parent.jsonl"), fork.write(tmp_path / "fork.jsonl")


@pytest.mark.parametrize("order", ["parent-first", "fork-alone", "together"])
def test_a_codex_fork_is_filed_under_the_fork_and_leaves_the_parents_plan(
    db_cli: Cli, tmp_path: Path, order: str
) -> None:
    parent, fork = fork_rollouts(tmp_path)
    if order == "parent-first":
        run_import(db_cli, "codex", parent)
        report = run_import(db_cli, "codex", fork)
    elif order == "fork-alone":
        report = run_import(db_cli, "codex", fork)
    else:
        report = run_import(db_cli, "codex", fork, parent)

    assert counts(report)["codex-0199-fork"] == (1, 1, 0, 0)
    assert committed_ids(db_cli, "codex-0199-fork") == ["call_f1"]
    fork_view = db_cli.json("plan", "show", "codex-0199-fork")
    assert steps(fork_view) == [("Try another fix", "in_progress")]
    session = db_cli.json("session", "show", "codex-0199-fork")
    assert (session["parent_session_id"], session["source"], session["cwd"]) == (
        "codex-0199-parent",
        "import:codex",
        "/repo",
    )
    if order != "fork-alone":
        assert committed_ids(db_cli, "codex-0199-parent") == ["call_p1", "call_p2", "call_p3"]
        parent_view = db_cli.json("plan", "show", "codex-0199-parent")
        assert steps(parent_view) == [("Reproduce", "completed"), ("Fix", "completed")]
    listed = {s["session_id"]: s for s in db_cli.json("session", "list")["sessions"]}
    assert listed["codex-0199-fork"]["parent_session_id"] == "codex-0199-parent"


def test_a_fork_replay_dated_after_the_fork_is_left_to_the_parent_that_holds_it(
    db_cli: Cli, tmp_path: Path
) -> None:
    """A replay written with the fork's own times: recognised by the calls the parent holds."""
    parent = Rollout("0199-p2").user(1, "go")
    parent.update_plan(2, "call_q1", plan_args(("Reproduce", "in_progress")))
    restamped = [
        line.replace('"2025-09-01T10:00:0', '"2025-09-01T10:00:2') for line in parent.lines
    ]
    fork = Rollout("0199-f2", forked_from="0199-p2", started=10).replay(restamped)
    fork.update_plan(40, "call_g1", plan_args(("Own step", "in_progress")))
    run_import(db_cli, "codex", parent.write(tmp_path / "p.jsonl"))

    report = run_import(db_cli, "codex", fork.write(tmp_path / "f.jsonl"))

    assert counts(report)["codex-0199-f2"] == (2, 1, 0, 1)
    assert committed_ids(db_cli, "codex-0199-f2") == ["call_g1"]


# -- bad lines of any depth or size, in any number -----------------------------------------------

DEEP = "[" * 5000 + "]" * 5000  # past any parser's stack


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def deep_rollout(session: str) -> Rollout:
    """Two good calls around lines nested too deep: a bare one (line 5), a call too deep to
    parse (6), a call whose arguments text is (7), a call past the ledger's depth (8)."""
    rollout = Rollout(session)
    rollout.update_plan(1, "call_1", plan_args(("Read the code", "in_progress")))
    rollout.raw(DEEP)
    call = {"type": "function_call", "name": "update_plan", "call_id": "call_obj"}
    head = json.dumps({"timestamp": "2025-09-01T10:00:02.000Z", "type": "response_item"})
    rollout.raw(f'{head[:-1]}, "payload": {json.dumps(call)[:-1]}, "arguments": {DEEP}}}}}')
    rollout.record(3, "response_item", {**call, "call_id": "call_text", "arguments": DEEP})
    too_deep = {"plan": [{"step": "Read", "status": "pending", "notes": nested(20)}]}
    rollout.record(4, "response_item", {**call, "call_id": "call_20", "arguments": too_deep})
    rollout.update_plan(5, "call_2", plan_args(("Read the code", "completed")))
    return rollout


def test_lines_nested_too_deep_are_reported_and_the_rest_imported(
    db_cli: Cli, tmp_path: Path
) -> None:
    codex = deep_rollout("0199-deep").write(tmp_path / "codex" / "deep.jsonl")
    transcript, call_ids = todo_transcript("d88bceb6-deep")
    claude = transcript.write(tmp_path / "claude" / "deep.jsonl")
    use = {"type": "tool_use", "name": "TodoWrite", "id": "toolu_deep"}
    head = json.dumps({"sessionId": "d88bceb6-deep", "message": {"content": [use]}})
    lines = claude.read_text().splitlines()
    lines[3:3] = [DEEP, f'{head[:-4]}, "input": {DEEP}}}]}}}}']  # lines 4 and 5
    claude.write_text("\n".join(lines) + "\n")

    codex_report = run_import(db_cli, "codex", codex, code=2)
    claude_report = run_import(db_cli, "claude", claude, code=2)

    assert counts(codex_report) == {"codex-0199-deep": (2, 2, 0, 0)}
    assert committed_ids(db_cli, "codex-0199-deep") == ["call_1", "call_2"]
    assert [(e["path"], e["line"]) for e in codex_report["errors"]] == [
        (str(codex), line) for line in (5, 6, 7, 8)
    ]
    assert all("too deep" in e["message"] for e in codex_report["errors"][:3])
    assert "more than 16 deep" in codex_report["errors"][3]["message"]
    assert counts(claude_report) == {"claude-d88bceb6-deep": (4, 4, 0, 0)}
    assert committed_ids(db_cli, "claude-d88bceb6-deep") == call_ids
    assert [(e["path"], e["line"]) for e in claude_report["errors"]] == [
        (str(claude), 4),
        (str(claude), 5),
    ]
    human = db_cli("import", "codex", str(codex))
    assert (human.returncode, human.stderr.count(f"{codex}:")) == (2, 4)


def test_the_codex_stop_hook_imports_a_rollout_with_a_line_nested_too_deep(
    sqlite_url: str, tmp_path: Path
) -> None:
    rollout = deep_rollout("0199-hooked")
    path = rollout.write(tmp_path / "rollout.jsonl")
    env = {"PLANLEDGER_HOME": str(tmp_path / "home"), "PLANLEDGER_DATABASE_URL": sqlite_url}

    for _ in range(2):  # every turn's Stop: the good calls once, the bad lines said again
        run = run_hook("codex", rollout.hook_event(path), env)
        assert (run.code, run.stdout) == (0, "")
        assert run.stderr.count("\n") == 1 and f"{path}:5: " in run.stderr, run.stderr
        assert "too deep" in run.stderr

    with open_planledger(sqlite_url, home=None) as service:
        entries = service.history("codex-0199-hooked").entries
    assert [e.proposal_id for e in entries if e.kind == "committed"] == ["call_1", "call_2"]


def test_a_hundred_thousand_unreadable_lines_give_a_bounded_report(tmp_path: Path) -> None:
    cli = Cli(tmp_path / "home")
    rollout = Rollout("0199-noise")
    rollout.update_plan(1, "call_1", plan_args(("Read the code", "in_progress")))
    for _ in range(100_000):
        rollout.raw("GARBAGE")  # lines 5 to 100,004
    rollout.update_plan(2, "call_2", plan_args(("Read the code", "completed")))
    path = rollout.write(tmp_path / "noise.jsonl")

    result = cli("import", "codex", str(path), "--json")

    assert result.returncode == 2, result.stderr
    assert len(result.stdout) < 8_000
    report = json.loads(result.stdout)
    assert counts(report) == {"codex-0199-noise": (2, 2, 0, 0)}
    errors = report["errors"]
    assert [(e["path"], e["line"]) for e in errors[:20]] == [
        (str(path), line) for line in range(5, 25)
    ]
    assert all(e["message"].startswith("not JSON") for e in errors[:20])
    assert len(errors) == 21
    assert (errors[20]["path"], errors[20]["line"]) == (str(path), 25)
    assert "99,980 more unreadable lines" in errors[20]["message"]
    assert "100,004" in errors[20]["message"]

    human = cli("import", "codex", str(path))

    assert human.returncode == 2
    assert len(human.stderr.splitlines()) == 21
    assert f"{path}:25: and 99,980 more unreadable lines" in human.stderr
    assert "100,000 unreadable lines" in human.stdout


def test_a_line_of_many_megabytes_is_reported_briefly_and_the_rest_imported(tmp_path: Path) -> None:
    cli = Cli(tmp_path / "home")
    rollout = Rollout("0199-huge")
    rollout.update_plan(1, "call_1", plan_args(("Read the code", "in_progress")))
    call = {"type": "function_call", "name": "update_plan", "call_id": "call_cut"}
    rollout.record(2, "response_item", {**call, "arguments": "x" * (6 << 20)})  # line 5
    rollout.raw('{"type": "response_item", "payload": "' + "y" * (6 << 20))  # line 6: cut
    rollout.update_plan(3, "call_2", plan_args(("Read the code", "completed")))
    path = rollout.write(tmp_path / "huge.jsonl")

    report = run_import(cli, "codex", path, code=2)

    assert counts(report) == {"codex-0199-huge": (2, 2, 0, 0)}
    assert [(e["line"], len(e["message"]) < 400) for e in report["errors"]] == [
        (5, True),
        (6, True),
    ]
