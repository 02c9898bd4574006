"""Batches are written in order, one in flight at a time, and the first error stops the pass."""

from __future__ import annotations

import threading

import pytest

from projections.batch_writer import BatchWriter


def test_batches_are_written_in_order_each_reported_before_the_next_is_handed_over() -> None:
    log: list[str] = []
    threads: set[int] = set()

    def write(n: int) -> None:
        threads.add(threading.get_ident())
        log.append(f"write {n}")

    with BatchWriter(write, lambda n: log.append(f"done {n}")) as writer:
        for n in range(3):
            writer.submit(n, last=n == 2)
            assert writer.in_flight == n
    assert log == ["write 0", "done 0", "write 1", "done 1", "write 2", "done 2"]
    assert threads and threading.get_ident() not in threads


def test_a_lone_batch_is_written_on_the_callers_thread() -> None:
    threads: list[int] = []
    with BatchWriter(lambda n: threads.append(threading.get_ident()), lambda n: None) as writer:
        writer.submit(0, last=True)
        assert writer.in_flight is None
    assert threads == [threading.get_ident()]


def test_a_failed_write_stops_the_pass() -> None:
    done: list[int] = []

    def write(n: int) -> None:
        if n == 1:
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"), BatchWriter(write, done.append) as w:
        for n in range(5):
            w.submit(n, last=False)
    assert done == [0]


def test_an_error_of_the_caller_waits_for_the_batch_in_flight() -> None:
    release = threading.Event()
    written: list[int] = []

    def write(n: int) -> None:
        release.wait(5)
        written.append(n)

    with pytest.raises(KeyError), BatchWriter(write, lambda n: None) as writer:
        writer.submit(0, last=False)
        release.set()
        raise KeyError("folding the next batch failed")
    assert written == [0]  # finished before the error left the block


def test_unthreaded_every_batch_is_written_on_the_callers_thread() -> None:
    threads: list[int] = []
    log: list[int] = []
    write = lambda n: threads.append(threading.get_ident())  # noqa: E731
    with BatchWriter(write, log.append, threaded=False) as writer:
        for n in range(3):
            writer.submit(n, last=n == 2)
            assert writer.in_flight is None and log[-1] == n
    assert set(threads) == {threading.get_ident()}
