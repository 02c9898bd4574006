"""Forked workers take their messages in order, even when sent the next before answering the
last; answers come back in the workers' order whoever finishes first; a worker still busy
when they are stopped is ended, an idle one ends by itself."""

from __future__ import annotations

import platform
import resource
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


def churn(state: None, blocks: int) -> int:
    """Allocate and free `blocks` blocks of 8 KiB (as a batch's rows come and go); the page
    faults that took."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    held = [bytes(8192) for _ in range(blocks)]
    del held
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc settings")
def test_a_worker_keeps_the_memory_it_freed_for_its_next_message() -> None:
    blocks = 4096  # 32 MiB: 8,192 pages
    workers = ForkedWorkers(1, lambda: None, churn)
    try:
        faults = []
        for _ in range(3):
            workers.send([blocks])
            faults.append(workers.receive()[0])
    finally:
        workers.close()
    assert faults[0] > blocks  # the first message's memory is new to the worker
    # The next ones reuse it (by default glibc gives it back at once, and they fault it in
    # again: about as many faults as the first)
    assert max(faults[1:]) < blocks // 10, faults
