"""The plan.json follower of a long-running process: commits arriving together cost one pass."""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path
from typing import Any, cast

from planledger.service.files import FilesFollower, PlanFiles
from planledger.storage.file_paths import files_lock


class CountingFiles:
    def __init__(self, fail: bool = False) -> None:
        self.passes = 0
        self.fail = fail
        self.warnings: list[str] = []
        self.synced = threading.Event()
        self.root = Path(tempfile.mkdtemp(prefix="files_"))  # (where the pass's lock is)

    def sync(self) -> int:
        self.passes += 1
        self.synced.set()
        if self.fail:
            raise OSError("disk full")
        return 0


def follower_of(files: CountingFiles, interval: float) -> FilesFollower:
    return FilesFollower(cast(PlanFiles, cast(Any, files)), interval=interval)


def test_a_pass_running_in_another_process_is_left_to_it_then_tried_again() -> None:
    """Processes sharing a home take turns: one finds the lock held, writes nothing, and
    looks again after its interval."""
    files = CountingFiles()
    with files_lock(files.root, wait=True):
        follower = follower_of(files, interval=0.2)
        time.sleep(0.5)
        assert files.passes == 0
    assert files.synced.wait(2)
    follower.stop()


def test_back_fills_at_start_then_coalesces_a_burst() -> None:
    files = CountingFiles()
    follower = follower_of(files, interval=0.3)
    assert files.synced.wait(2)  # the start-up pass (a fresh home is back-filled)
    for _ in range(200):  # a burst of commits within one interval
        follower.due()
    time.sleep(0.8)
    follower.stop()
    assert files.passes == 2  # the start-up pass and one for the whole burst


def test_stop_finishes_a_due_pass_and_failures_are_warnings() -> None:
    files = CountingFiles(fail=True)
    follower = follower_of(files, interval=5.0)
    assert files.synced.wait(2)
    follower.due()  # due while the follower waits out its interval
    follower.stop()  # does not wait the interval out, but writes what is due
    assert files.passes == 2
    assert files.warnings == ["plan.json files not written: disk full"] * 2


def test_stop_when_nothing_is_due_is_prompt() -> None:
    files = CountingFiles()
    follower = follower_of(files, interval=5.0)
    assert files.synced.wait(2)
    started = time.monotonic()
    follower.stop()
    assert time.monotonic() - started < 1
    assert files.passes == 1
