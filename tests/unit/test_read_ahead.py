"""Batches are read one ahead on a thread, in order, until one is not full."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from projections.read_ahead import read_ahead


def store(count: int) -> tuple[list[tuple[int, int, int]], Any]:
    """A read function over events 1..count that logs (after, size, thread) per call."""
    calls: list[tuple[int, int, int]] = []

    def read(after: int, size: int) -> list[Any]:
        calls.append((after, size, threading.get_ident()))
        return [SimpleNamespace(id=n) for n in range(after + 1, min(after + size, count) + 1)]

    return calls, read


def ids(batches: Any) -> list[list[int]]:
    return [[n.id for n in batch] for batch in batches]


def test_batches_in_order_until_one_is_not_full() -> None:
    calls, read = store(7)
    assert ids(read_ahead(read, 0, 3)) == [[1, 2, 3], [4, 5, 6], [7]]
    assert [c[:2] for c in calls] == [(0, 3), (3, 3), (6, 3)]
    assert calls[0][2] == threading.get_ident() != calls[1][2]  # later ones read ahead


def test_a_full_last_batch_is_followed_by_an_empty_read() -> None:
    calls, read = store(6)
    assert ids(read_ahead(read, 0, 3)) == [[1, 2, 3], [4, 5, 6]]
    assert [c[:2] for c in calls] == [(0, 3), (3, 3), (6, 3)]


def test_a_short_first_batch_starts_no_thread() -> None:
    calls, read = store(2)
    assert ids(read_ahead(read, 0, 3)) == [[1, 2]]
    assert ids(read_ahead(read, 2, 3)) == []
    assert {c[2] for c in calls} == {threading.get_ident()}


def test_a_caller_that_stops_leaves_no_read_running() -> None:
    calls, read = store(100)
    batches = read_ahead(read, 0, 10)
    assert ids([next(batches)]) == [list(range(1, 11))]
    batches.close()  # the read of the next batch was under way: it has ended
    assert [c[:2] for c in calls] == [(0, 10), (10, 10)]
    assert threading.active_count() == 1 or all(
        not t.name.startswith("planledger-read") for t in threading.enumerate()
    )


def test_unthreaded_reads_are_the_same_on_the_callers_thread() -> None:
    for count in (0, 2, 6, 7):
        calls, read = store(count)
        threaded_calls, threaded_read = store(count)
        assert ids(read_ahead(read, 0, 3, threaded=False)) == ids(read_ahead(threaded_read, 0, 3))
        assert [c[:2] for c in calls] == [c[:2] for c in threaded_calls]
        assert {c[2] for c in calls} == {threading.get_ident()}
