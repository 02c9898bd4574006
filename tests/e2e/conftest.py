"""Every end-to-end CLI and hook test runs twice: cold (each command in its own process) and
warm (answered by the warm process), which must give the same answers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from planledger.clients.warm import control
from tests.e2e.warm_support import started, started_warm_process, warm_status


@pytest.fixture(params=["cold", "warm"])
def warm_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Cold: PLANLEDGER_NO_WARM=1 (the default of the test suite). Warm: a warm process is
    running before the test starts, and the test's commands must have been answered by it."""
    if request.param == "cold":
        yield "cold"
        return
    monkeypatch.setenv("PLANLEDGER_WARM_IDLE", "120")
    monkeypatch.delenv("PLANLEDGER_NO_WARM")
    before = started_warm_process()
    yield "warm"
    report = getattr(request.node, "call_report", None)
    if report is None or not report.passed:
        return  # skipped or failed: that is the test's own answer
    after = warm_status()
    assert after is not None and after["pid"] == before["pid"], "the warm process went away"
    # The status calls themselves count one: the test's commands count beyond it.
    assert after["served"] > before["served"] + 1, "no command of the test was answered warm"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop the warm processes this session started (no process is left behind)."""
    for path in control.sockets():
        if path.stem in started:
            control.ask(path, "stop")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Keep the outcome of a test's call on the test, for its fixtures' teardown to read."""
    report = yield
    if report.when == "call":
        item.call_report = report  # type: ignore[attr-defined]
    return report
