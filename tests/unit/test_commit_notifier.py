"""A writer's wake-ups for the store's follower: sent from a thread, after the commits they
stand for, at most one per gap for a burst, what is due sent on closing, a failed send not the
end of them."""

from __future__ import annotations

import threading
import time

from planledger.storage.commit_notifier import CommitNotifier

WAIT = 5.0


class Sends:
    """The times of the sends, and an event set by each."""

    def __init__(self, fail_first: bool = False) -> None:
        self.times: list[float] = []
        self.sent = threading.Event()
        self.fail_first = fail_first

    def __call__(self) -> None:
        self.times.append(time.monotonic())
        self.sent.set()
        if self.fail_first and len(self.times) == 1:
            raise ConnectionError("the database went away")


def test_a_burst_of_commits_costs_a_notify_per_gap_and_one_after_the_last() -> None:
    sends = Sends()
    notifier = CommitNotifier(sends, gap=0.05)
    start = time.monotonic()
    for _ in range(200):
        notifier.committed()
        time.sleep(0.001)
    last = time.monotonic()
    deadline = time.monotonic() + WAIT
    while not (sends.times and sends.times[-1] >= last) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sends.times and sends.times[-1] >= last, "no notify after the last commit"
    assert len(sends.times) <= (last - start) / 0.05 + 2
    notifier.close()


def test_a_commit_after_a_quiet_spell_is_notified_at_once() -> None:
    sends = Sends()
    notifier = CommitNotifier(sends, gap=10.0)
    notifier.committed()
    assert sends.sent.wait(WAIT)
    notifier.close()


def test_closing_sends_what_is_due_and_nothing_after() -> None:
    sends = Sends()
    notifier = CommitNotifier(sends, gap=10.0)
    notifier.committed()
    assert sends.sent.wait(WAIT)
    notifier.committed()  # within the gap: due, not sent yet
    assert len(sends.times) == 1
    notifier.close()
    assert len(sends.times) == 2
    notifier.committed()
    time.sleep(0.1)
    assert len(sends.times) == 2


def test_a_failed_send_does_not_end_the_wake_ups() -> None:
    sends = Sends(fail_first=True)
    notifier = CommitNotifier(sends, gap=0.01)
    notifier.committed()
    assert sends.sent.wait(WAIT)
    sends.sent.clear()
    notifier.committed()
    assert sends.sent.wait(WAIT)
    assert len(sends.times) == 2
    notifier.close()
