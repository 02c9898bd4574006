"""`import_paths`, the API the hooks call: progress, idempotency past the ledger's window, and
large writes whose views are those a rebuild makes."""

from __future__ import annotations

from pathlib import Path

from planledger.importers.run import import_paths
from planledger.service import open_planledger
from tests.rollouts import Rollout, plan_args


def test_long_session_reimports_nothing_and_reports_progress(
    database_url: str, tmp_path: Path
) -> None:
    rollout = Rollout("0199-long")
    for n in range(300):  # more than the 256 proposal ids the ledger keeps for retries
        rollout.update_plan(n, f"call_{n}", plan_args((f"Step {n}", "in_progress")))
    path = rollout.write(tmp_path / "long.jsonl")
    progress: list[tuple[int, int]] = []

    with open_planledger(database_url, home=None) as service:
        first = import_paths(service, "codex", [path], on_progress=lambda *p: progress.append(p))
        # (not the store position: on PostgreSQL another database's open transaction may
        # hold the settled horizon back while this test runs)
        entries = len(service.history("codex-0199-long").entries)
        again = import_paths(service, "codex", [tmp_path])

        assert first.model_dump() == {
            "sessions": [
                {
                    "session_id": "codex-0199-long",
                    "source": str(path),
                    "calls": 300,
                    "committed": 300,
                    "rejected": 0,
                    "skipped": 0,
                    "files": [str(path)],
                }
            ],
            "errors": [],
        }
        assert (again.sessions[0].skipped, again.sessions[0].committed) == (300, 0)
        assert len(service.history("codex-0199-long").entries) == entries
        assert service.plan("codex-0199-long").revision == 300
        # One write of 600 events (on PostgreSQL, sent as column arrays) stored the views
        # read above itself (reads never run the projection runner), and they are the ones
        # a rebuild makes.
        written = (service.plan("codex-0199-long"), service.history("codex-0199-long"))
        service.runner.rebuild()
        assert (service.plan("codex-0199-long"), service.history("codex-0199-long")) == written
    size = path.stat().st_size
    assert progress[-1] == (size, size)
    assert [done for done, _ in progress] == sorted(done for done, _ in progress)


def test_calls_recorded_earlier_by_another_client_are_skipped(
    sqlite_url: str, tmp_path: Path
) -> None:
    rollout = Rollout("0199-hooked")
    rollout.update_plan(1, "call_1", plan_args(("Plan", "in_progress")))
    rollout.update_plan(2, "call_2", plan_args(("Plan", "completed")))
    path = rollout.write(tmp_path / "hooked.jsonl")

    with open_planledger(sqlite_url, home=None) as service:
        service.open_session("codex-0199-hooked")
        service.submit(
            "codex-0199-hooked",
            plan_args(("Plan", "in_progress")),
            client="hook:codex",
            proposal_id="call_1",
        )
        report = import_paths(service, "codex", [path])
        entries = service.history("codex-0199-hooked").entries

    session = report.sessions[0]
    assert (session.calls, session.committed, session.skipped) == (2, 1, 1)
    assert [(e.kind, e.proposal_id, e.client) for e in entries if e.kind == "proposed"] == [
        ("proposed", "call_1", "hook:codex"),
        ("proposed", "call_2", "import:codex"),
    ]
