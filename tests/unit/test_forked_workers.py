"""Forked workers take their messages in order, even when sent the next before answering the
last; answers come back in the workers' order whoever finishes first; a worker still busy
when they are stopped is ended, an idle one ends by itself."""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest

from projections.forked import ForkedWorkers, WorkerFailed, can_fork

pytestmark = pytest.mark.skipif(not can_fork(), reason="needs fork")
BIG = 1 << 20  # an answer larger than a pipe holds: its sender waits until it is read


def work(state: list[Any], message: tuple[int, float, str]) -> tuple[int, list[Any], str]:
    """(the worker's number, the messages it took so far, a big text), after waiting the
    message's delay."""
    number, delay, label = message
    time.sleep(delay)
    state.append(label)
    return number, list(state), "x" * BIG


def test_two_messages_in_flight_are_answered_in_order() -> None:
    workers = ForkedWorkers(2, list, work)
    try:
        # Worker 0 is slow on its first message: worker 1 answers first, then goes on.
        workers.send([(0, 0.2, "a0"), (1, 0.0, "a1")])
        workers.send([(0, 0.0, "b0"), (1, 0.0, "b1")])
        first = workers.receive()
        second = workers.receive()
    finally:
        workers.close()
    assert [(n, taken) for n, taken, _ in first] == [(0, ["a0"]), (1, ["a1"])]
    assert [(n, taken) for n, taken, _ in second] == [(0, ["a0", "b0"]), (1, ["a1", "b1"])]
    assert all(len(text) == BIG for _, _, text in first + second)
    assert [process.exitcode for process in workers.processes] == [0, 0]  # idle: ended


def test_stop_ends_busy_workers_without_waiting_for_their_answers() -> None:
    workers = ForkedWorkers(2, list, work)
    workers.send([(0, 0.0, "a0"), (1, 0.0, "a1")])
    workers.receive()
    workers.send([(0, 600.0, "b0"), (1, 600.0, "b1")])  # ten minutes each: not waited for
    workers.stop()  # ends them itself: `close`, after it, would end them only after STOP_WAIT
    for process in workers.processes:
        process.join(30)  # (a worker that stop left running is still alive then)
    assert [process.exitcode for process in workers.processes] == [-signal.SIGTERM] * 2
    workers.close()


def test_an_error_is_reported_and_the_workers_end() -> None:
    def failing(state: None, message: int) -> int:
        if message == 1:
            raise ValueError("no")
        return message

    workers = ForkedWorkers(2, lambda: None, failing)
    workers.send([0, 1])
    with pytest.raises(WorkerFailed, match="ValueError: no"):
        workers.receive()
    workers.close()  # (the other worker's answer may be unread: it is ended, or ends)
    assert not any(process.is_alive() for process in workers.processes)
