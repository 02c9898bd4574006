"""What a long-running process's follower does each time it waits on the store: the live feed's
thread (planledger.service.feed.ChangeSignal) calls `ViewsFollower.wait_for_change`.

One follower per store leads (on PostgreSQL the holder of an advisory lock, see
PostgresViewStore.leads_followers; on SQLite every one): it catches the views up after other
processes' commits, at most once per CHECK_INTERVAL, and then wakes the other followers, whose
feeds and plan.json files follow the position it moved (each catching up after every commit
would redo the leader's work once per process).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from planledger.service.files import FilesFollower
from planledger.storage.views import ViewStore

# Seconds between catch-ups of the leader, which moves the views' position past the events that
# writers stored with their views (and applies those stored without): the live feed and the
# plan.json files follow that position.
CHECK_INTERVAL = 0.05
# Seconds: the leader looks at the store this often with no wake-up at all (one lost with the
# process that committed: planledger.storage.commit_notifier).
IDLE_CHECK = 1.0


class ViewsFollower:
    """`store`: a view store of the follower's own, whose connection it waits on; `views`: the
    process's; `catch_up()`: catch the views up if behind, returning whether they were;
    `files`: the process's plan.json follower, told of every change."""

    def __init__(
        self,
        store: ViewStore,
        views: ViewStore,
        catch_up: Callable[[], bool],
        files: FilesFollower | None,
    ) -> None:
        self.store = store
        self.views = views
        self.catch_up = catch_up
        self.files = files
        self.leading = False
        self.checked_at = 0.0  # when the leader last caught up
        self.unchecked = False  # a change came within CHECK_INTERVAL of that: caught up soon
        self.recheck = False  # events wait above the horizon: caught up again soon

    def wait_for_change(self, timeout: float) -> bool:
        """Wait at most `timeout` seconds for a change; whether one came (the feeds then
        re-query from their positions)."""
        if self.unchecked or self.recheck:  # not caught up yet: wait no longer than that
            left = self.checked_at + CHECK_INTERVAL - time.monotonic()
            timeout = max(0.0, min(timeout, left))
        changed = self.store.wait_for_events(timeout)
        if self.store.leads_followers() != self.leading:
            self.leading = not self.leading
            changed = True  # (a new leader catches up what the last one left)
        if self.leading:
            changed = self._lead(changed)
        if changed and self.files is not None:
            self.files.due()
        return changed

    def _lead(self, changed: bool) -> bool:
        now = time.monotonic()
        idle = now - self.checked_at >= IDLE_CHECK
        if not (changed or self.unchecked or self.recheck or idle):
            return False
        deferred, self.unchecked = self.unchecked, now - self.checked_at < CHECK_INTERVAL
        if self.unchecked:
            return changed
        self.checked_at = now
        # A change put off is a change, also when another process moved the views' position
        # meanwhile (nothing left to catch up here).
        if self.catch_up():
            self.store.wake_followers()
            changed = True
        # Events kept above the horizon (an earlier transaction still in flight): looked at
        # again after CHECK_INTERVAL, not at the next commit, which may never come.
        self.recheck = self.views.events_past_views()
        return changed or deferred
