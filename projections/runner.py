"""The projection runner: committed events, in order, applied exactly once to the views.

Writers store the views of their own events in the events' transaction while the views are
up to date, so the runner has work only when they are behind: after a rebuild, a schema change,
or events written without views. One batch = the events read after the tracked position; their
view rows, history rows and the new position commit together. A crash before that commit
leaves the old position and views, so the batch is simply applied again; a crash after it
leaves nothing to redo. A session whose history breaks a rule is marked corrupt (rule and
position kept) and every other session goes on. The plan.json files are derived from the
committed views and tracked separately (rewriting a file is idempotent).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import operator
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from eventsourcing.persistence import Mapper

from domain.base import Event
from domain.chain import CHAIN_BROKEN, GENESIS, links, why_broken
from domain.errors import CorruptHistory, error_line
from domain.plan_state import PlanState
from projections.decode import PlanEventDecoder
from projections.fold import SessionFacts, ViewChanges, fold_events
from projections.forked import ForkedWorkers, WorkerFailed, can_fork, cores
from projections.gc_pause import paused_gc
from projections.shapes import PlanView

VIEWS = "views"  # tracking name of the database views (plan view + history)
# A rebuild of at least this many events (a full first batch) spreads its decoding and
# folding over one forked worker process per core (at most MAX_WORKERS), in batches of
# FORKED_BATCH events. (Forking pays from there: a store of 6,200 events of the bulk bench's
# shape rebuilt on PostgreSQL in 182 ms forked, 302 ms in one process; a threshold of 20k kept
# the bulk store's workers waiting 11 ms more, while four batches' bounds were read.) A worker
# holds the facts of its sessions: past
# MAX_WORKER_SESSIONS of them, the rebuild goes on in this process (memory stays bounded).
# (Each batch waits for its slowest worker, and the workers wait while this process writes the
# last one. On the bulk bench's store, 10k events a batch rebuilt 7% faster than 2k on SQLite
# and 11% on PostgreSQL; 5k, with a last batch half as large, as fast as 10k on SQLite and
# 3-4% faster on PostgreSQL (medians of 16 and 20 alternating rebuilds), for about 8 MB a batch.)
FORKED_BATCH = 5_000
PARALLEL_MIN_EVENTS = FORKED_BATCH
MAX_WORKERS = 4
MAX_WORKER_SESSIONS = 50_000
# Seconds a rebuild waits for the events committed before it that an earlier transaction still
# in flight keeps out of reach (PostgreSQL), so that it folds every one of them.
SETTLE_WAIT = 3.0


class StaleBatch(Exception):
    """Another runner moved the tracking position first; re-read and try again."""


@dataclass(frozen=True)
class LoadedView:
    version: int
    view: PlanView
    corrupt: bool


# (aggregate id, version) -> (store position, stored state) of each event of a batch
Stored = dict[tuple[str, int], tuple[int, bytes]]
Bounds = tuple[int, int]  # (events in a batch, store position of its last)


class ShareReader(Protocol):
    """Reads, in a forked worker, the events of one share of the sessions (see
    ViewStorage.share_reader)."""

    def connect(self) -> None:
        """Connect now, not at the first read (a worker, as it starts: while its parent still
        prepares the first batch)."""

    def read(self, after: int, upto: int, share: int) -> list[tuple[Any, ...]]:
        """The event rows (see event_rows) of the folded events in (after, upto] of the
        sessions of `share`, in order; a plan event's previous chain is left None (the worker,
        which reads its sessions' plan events from the first, knows it)."""


class ViewStorage(Protocol):
    """What the runner needs of the database that holds the views (see planledger.storage)."""

    def position(self, name: str) -> int: ...
    def last_committed(self) -> int:
        """The highest position of any committed event, also one that read_event_rows does
        not reach yet (an earlier transaction still in flight)."""
        ...

    def read_event_rows(self, after: int, limit: int) -> list[tuple[Any, ...]]:
        """The event rows (see event_rows) of the events after `after`, in order, never
        skipping one still in flight."""

    def read_stream_rows(self, originator_ids: Sequence[str]) -> list[tuple[Any, ...]]:
        """Every stored event of these streams, each stream's in order (as event rows)."""

    def load_views(self, session_ids: Sequence[str]) -> dict[str, LoadedView]: ...
    def session_versions(self, session_ids: Sequence[str]) -> dict[str, int]:
        """The version of each of these sessions' stored rows (those that have one)."""

    def write_batch(
        self,
        expected_position: int,
        new_position: int,
        changes: ViewChanges,
        stored: Stored,
    ) -> None: ...
    def batch_rows(self, changes: ViewChanges, stored: Stored) -> Any:
        """A batch's changes as the rows `write_batch_rows` writes (no I/O)."""

    def write_batch_rows(
        self, expected_position: int, new_position: int, parts: Sequence[Any]
    ) -> None: ...
    def advance(self, expected_position: int, new_position: int) -> bool:
        """Move the tracking position from `expected_position` to `new_position` (a batch
        whose every event's rows were stored by its writer) in one short statement, not a
        batch's transaction; False if it was not at `expected_position`. Where another runner
        holds it, it is left to that one, unmoved (True: nothing to wait for; a position left
        behind moves at the next catch-up)."""

    def batch_bounds(self, after: int, limit: int) -> Bounds:
        """(how many, store position of the last) of the next `limit` committed events after
        `after`, never past one still in flight; (0, after) when there are none."""

    def share_reader(self, count: int) -> ShareReader:
        """What forked workers read their share of the events with, one of `count` shares
        each: a session's events (its plan's and its own) are all in one share. It connects
        on first use, in the worker."""

    def max_notification_id(self) -> int: ...
    def wait_for_events(self, timeout: float) -> bool: ...
    def reset(self) -> None: ...
    def bulk_writes(self) -> AbstractContextManager[None]: ...
    def between_batches(self) -> None:
        """Between two batches of bulk writes: what the database would do at their end."""

    def close(self) -> None: ...


class EventRow(NamedTuple):
    """A stored event as the runner reads it: what the mapper and the fold read of the
    library's Notification, made at a fraction of its cost."""

    id: int
    originator_id: str
    originator_version: int
    topic: str
    state: bytes
    chain: str | None = None
    previous: str | None = None  # the chain of the stream's event before (None: none)


# An EventRow's fields as a plain tuple (a worker's rows: cheaper to make).
Row = tuple[int, str, int, str, bytes, str | None, str | None]


def event_rows(rows: Sequence[tuple[Any, ...]]) -> list[EventRow]:
    """(id, originator_id, originator_version, topic, state, chain, previous chain) rows,
    their states as bytes."""
    return [
        EventRow(i, o, v, t, d if type(d) is bytes else bytes(d), c, p)
        for i, o, v, t, d, c, p in rows
    ]


def applied(row: EventRow, loaded: Mapping[str, LoadedView]) -> bool:
    """Whether a plan event is in its session's stored view already (its writer stored the
    view with it: the view's version is at or past it)."""
    if not row.originator_id.startswith("plan:"):
        return False
    view = loaded.get(row.originator_id[5:])
    return view is not None and row.originator_version <= view.version


@dataclass
class FoldState:
    """What a fold worker keeps between batches: how it reads its share of the events, the
    last chain of each plan stream, the rules' facts of its sessions' plans and the goals
    they started (a worker folds them from their first event: it needs no view to start
    from), and which of them broke a rule."""

    reader: ShareReader | None = None
    chains: dict[str, str | None] = field(default_factory=dict)
    plans: dict[str, PlanState] = field(default_factory=dict)
    sessions: SessionFacts = field(default_factory=SessionFacts)
    broken: set[str] = field(default_factory=set)


@dataclass
class Known:
    """What a catch-up knows of each session, having folded every event after the store
    position `since`: the rules' facts of its plan, and its own aggregate (for the sessions
    in `sessions`). A session it does not know is resumed from its events
    (ProjectionRunner._resume)."""

    since: int
    plans: dict[str, PlanState] = field(default_factory=dict)
    sessions: SessionFacts = field(default_factory=SessionFacts)

    def forget(self, since: int) -> None:
        """Start again from `since` (the views were moved on by another runner)."""
        self.since = since
        self.plans.clear()
        self.sessions = SessionFacts()

    def bound(self, position: int) -> None:
        """Keep the facts of MAX_WORKER_SESSIONS sessions at most (the oldest go, resumed
        again if need be: what was folded before `position` is then no longer all known)."""
        for kept in (self.plans, self.sessions.aggregates):
            if len(kept) > MAX_WORKER_SESSIONS:
                self.since = position
            while len(kept) > MAX_WORKER_SESSIONS:
                del kept[next(iter(kept))]


def fold_state(reader: ShareReader) -> FoldState:
    """A fold worker's state as it starts, connected (if it cannot connect yet, its first read
    tries again, and its error is then the worker's answer)."""
    with contextlib.suppress(Exception):
        reader.connect()
    return FoldState(reader)


@dataclass
class FoldedPart:
    """A worker's share of a batch: its rows, the sessions found corrupt, and whether it now
    holds too many sessions to go on."""

    rows: Any
    corrupt: list[tuple[str, int, str, str]]  # session_id, position, rule, detail
    full: bool


class ProjectionRunner:
    """Feeds the views from the event store."""

    def __init__(
        self,
        store: ViewStorage,
        mapper: Mapper[Any],
        batch_size: int = 1000,
        workers: int | None = None,
    ) -> None:
        self.store = store
        self.mapper = PlanEventDecoder(mapper)  # decodes as `mapper` does
        self.batch_size = batch_size
        # Fold processes of a large rebuild (default: one per core, at most MAX_WORKERS).
        self.workers = min(cores(), MAX_WORKERS) if workers is None else workers
        self.changed = threading.Condition()
        self.catching_up = threading.Lock()  # one catch-up at a time (the feed's, a read's)
        self.position = self.store.position(VIEWS)
        self.corrupt: dict[str, CorruptHistory] = {}  # found by this runner, for reports

    # -- catching up --------------------------------------------------------------------------

    def catch_up(self, on_batch: Callable[[int, int], None] | None = None) -> int:
        """Apply every committed event not yet applied; returns the position reached.

        `on_batch(events_in_batch, position)` is called after each committed batch.
        """
        with self.catching_up:
            return self._catch_up(on_batch)

    def catch_up_to(
        self, end: int, wait: float, on_batch: Callable[[int, int], None] | None = None
    ) -> int:
        """Catch up until `end` is reached (events that an earlier transaction still in flight
        keeps out of reach, PostgreSQL), waiting at most `wait` seconds; the position reached."""
        deadline = time.monotonic() + wait
        while (reached := self.catch_up(on_batch)) < end and time.monotonic() < deadline:
            time.sleep(0.005)
        return reached

    def _catch_up(self, on_batch: Callable[[int, int], None] | None) -> int:
        # Start from where the views are: writers move the position too.
        position = self.store.position(VIEWS)
        known = Known(position)
        while True:
            batch = event_rows(self.store.read_event_rows(position, self.batch_size))
            if not batch:
                self._advance(position)
                return position
            try:
                with paused_gc():
                    position = self.apply_batch(position, batch, known)
            except StaleBatch:  # another runner (or a writer) got there first
                position = self.store.position(VIEWS)
                known.forget(position)  # (folded past views that are not those stored)
                continue
            self._advance(position)
            known.bound(position)
            if on_batch:
                on_batch(len(batch), position)
            if len(batch) < self.batch_size:
                return position

    def apply_batch(self, position: int, batch: list[EventRow], known: Known) -> int:
        """Fold `batch` (the events after `position`) into the views; the position after it
        (StaleBatch: another runner moved the position first)."""
        touched = sorted(
            {
                str(n.originator_id).removeprefix("plan:")
                for n in batch
                if str(n.originator_id).startswith("plan:")
            }
        )
        loaded = self.store.load_views(touched)
        corrupt = [sid for sid, view in loaded.items() if view.corrupt]
        reached = batch[-1].id
        if loaded:  # events whose writers stored their views with them: already applied
            batch = [row for row in batch if not applied(row, loaded)]
        if self._stored_by_writers(batch):  # the usual batch: only the position to move
            if not self.store.advance(position, reached):
                raise StaleBatch("the views' position moved meanwhile")
            known.forget(reached)  # (its sessions' facts were not folded)
            return reached
        # Every session goes on from the facts of its events, never from its view alone (one
        # whose events before the batch are gone goes on from none: its next event is refused).
        broke, earlier = self._resume(position, batch, loaded, known)
        changes, stored = self._fold(batch, [*corrupt, *broke], known.plans, known.sessions)
        for session_id, error in broke.items():
            changes.corrupt.setdefault(session_id, error)
        stored.update(earlier)  # (where those broke)
        self.store.write_batch(position, reached, changes, stored)
        self.corrupt.update(changes.corrupt)
        return reached

    def _stored_by_writers(self, batch: Sequence[EventRow]) -> bool:
        """Whether every event left of a batch (none, or session events alone) is in its
        session's stored row already: its writer stored the row with it."""
        ids = {row.originator_id for row in batch}
        if not all(i.startswith("session:") for i in ids):
            return False
        versions = self.store.session_versions(sorted(i[8:] for i in ids))
        return all(
            row.originator_version <= versions.get(row.originator_id[8:], 0) for row in batch
        )

    def _resume(
        self,
        position: int,
        batch: Sequence[EventRow],
        loaded: Mapping[str, LoadedView],
        known: Known,
    ) -> tuple[dict[str, CorruptHistory], Stored]:
        """Into `known`, the facts of each session this batch goes on with that the catch-up
        does not hold: its own stream's events before the batch (from `known.since` on, it
        folded them itself) and, where its plan goes on from a view stored before (by a
        writer, or an earlier catch-up), its plan's events up to the view's, all replayed in
        store order as a rebuild folds them. (A view keeps the plan, not every fact of its
        rules: which proposal ids were used, and the stream's position, so a fold from a view
        alone would pass a reused id or a missing event that a fold from the first event
        refuses.) Returns the sessions whose history breaks before the batch, as corrupt
        there, and the store position and state of each event read. (A stream that now ends
        before its view leaves the facts behind it: the batch's next event is then refused as
        missing_event.)"""
        sessions = known.sessions
        plans: dict[str, int] = {}  # session: the version of its view
        opened: set[str] = set()  # sessions whose own stream is read
        next_event: dict[str, int] = {}  # session: the version of its stream's first event here
        for row in batch:
            kind, _, session_id = row.originator_id.partition(":")
            if session_id in sessions.broken or kind not in ("plan", "session"):
                continue
            if kind == "session":
                next_event.setdefault(session_id, row.originator_version)
            if known.since and session_id not in sessions.aggregates:
                opened.add(session_id)
            view = loaded.get(session_id)
            if kind != "plan" or view is None or view.corrupt or session_id in plans:
                continue
            kept = known.plans.get(session_id)
            if kept is None or kept.version != view.version:
                plans[session_id] = view.version
                opened.add(session_id)  # (each commit judged by the goals started before it)
        opened -= {s for s, first in next_event.items() if first == 1 and s not in plans}
        if not opened:  # (a session opened in the batch has no events before it)
            return {}, {}
        for session_id in plans:
            known.plans.pop(session_id, None)
        for session_id in opened:
            sessions.forget(session_id)
        streams = [f"plan:{s}" for s in plans] + [f"session:{s}" for s in opened]
        earlier = []
        for row in event_rows(self.store.read_stream_rows(streams)):
            kind, _, session_id = row.originator_id.partition(":")
            if kind == "plan":
                before = row.originator_version <= plans[session_id]
            elif session_id in next_event:  # its events before the one the batch goes on with
                before = row.originator_version < next_event[session_id]
            else:
                before = row.id <= position
            if before:
                earlier.append(row)
        earlier.sort(key=operator.itemgetter(0))  # store order (a row's first field: its id)
        changes, stored = self._fold(earlier, [], known.plans, sessions)
        return changes.corrupt, stored

    def _fold(
        self,
        batch: Sequence[Row],
        corrupt: Sequence[str],
        plans: dict[str, PlanState],
        sessions: SessionFacts,
    ) -> tuple[ViewChanges, Stored]:
        """The batch (EventRows, or tuples of their fields) decoded and folded onto `plans`
        and `sessions` (the facts of the sessions folded before it, changed in place;
        `corrupt`: the sessions whose plan broke before it), and the store position and state
        of each event. A stream that breaks (a chain, a row that no longer decodes) is read no
        further: a session's own stream ahead of its plan's, as verify judges them."""
        events: list[tuple[Event, int]] = []
        plan_broken, session_broken = set(corrupt), sessions.broken
        unreadable: dict[str, CorruptHistory] = {}  # plans' streams
        unreadable_sessions: dict[str, CorruptHistory] = {}  # sessions' own streams
        stored: Stored = {(o, v): (i, d) for i, o, v, _, d, _, _ in batch}
        # Every chain checked first, in one pass (domain.chain.first_break says why).
        linked = [links(p or GENESIS, t, o, v, d, c) for _, o, v, t, d, c, p in batch]
        decode = self.mapper.decode
        for (i, o, v, t, d, c, _), holds in zip(batch, linked, strict=True):
            kind, _, session_id = o.partition(":")
            if kind == "plan":
                if session_id in plan_broken or session_id in unreadable:
                    continue
                if session_id in session_broken or session_id in unreadable_sessions:
                    continue
                broke = unreadable
            elif kind == "session":
                # (read on past a break: a later opening or mode change still lists it)
                broke = {} if session_id in session_broken else unreadable_sessions
            else:
                continue  # a stream of no session (none the ledger writes): verify reads none
            if not holds:  # a row the ledger did not write as it is: corrupt from here on
                broke.setdefault(
                    session_id, CorruptHistory(session_id, v, CHAIN_BROKEN, f"{o}: {why_broken(c)}")
                )
                continue
            try:
                event = decode(o, v, t, d)
                assert isinstance(event, Event)
            except Exception as error:  # an edited row that no longer decodes
                broke.setdefault(
                    session_id, CorruptHistory(session_id, v, "unreadable_event", error_line(error))
                )
                continue
            events.append((event, i))
        # A session's events before its unreadable one are folded (its view is the last good
        # one, whatever the batches), unless a rule broke earlier still.
        stops = {sid: unread.position for sid, unread in unreadable_sessions.items()}
        changes = fold_events(
            {},
            events,
            corrupt=plan_broken,
            states=plans,
            sessions=sessions,
            session_stops=stops,
        )
        for session_id, unread in unreadable.items():
            changes.corrupt.setdefault(session_id, unread)
        for session_id, unread in unreadable_sessions.items():
            if session_id not in session_broken:  # (else its stream broke earlier still)
                session_broken.add(session_id)
                sessions.forget(session_id)
                plans.pop(session_id, None)
                changes.corrupt[session_id] = unread
        return changes, stored

    # -- a rebuild spread over worker processes ----------------------------------------------

    def _first_batches(self) -> list[Bounds] | None:
        """The bounds of a rebuild's first batches, read until they hold PARALLEL_MIN_EVENTS
        events (None: the store holds fewer, rebuilt in this process). A forked rebuild starts
        with them: its check costs no reading of its own."""
        batches = [self.store.batch_bounds(0, FORKED_BATCH)]
        while sum(events for events, _ in batches) < PARALLEL_MIN_EVENTS:
            upcoming = self._bounds_after(batches[-1])
            if not upcoming[0]:
                return None
            batches.append(upcoming)
        return batches

    def _rebuild_forked(
        self, batches: list[Bounds], on_batch: Callable[[int, int], None] | None
    ) -> ForkedWorkers:
        """Reset the views, then apply the events from position 0 (the bounds of the first
        `batches` known already), each batch read, decoded, folded and made into rows by forked
        workers (each reads the events of its own sessions, on a connection of its own) while
        this process writes the batch before (and resets the views while they fold the first).
        Every batch still commits with its position, so this stops at any batch and `catch_up`
        goes on from there: when another runner moved the position, a worker failed, or a
        worker holds MAX_WORKER_SESSIONS views. Returns the workers, stopped: the caller waits
        for them to end (`close`) once it has done what it can do while they exit."""
        count = self.workers
        known = collections.deque(batches)
        reader = self.store.share_reader(count)
        workers = ForkedWorkers(count, functools.partial(fold_state, reader), self.fold_part)
        reset = False

        def send(bounds: Bounds, after: int) -> None:
            workers.send([(after, bounds[1], share) for share in range(count)])

        try:
            # The rows of a batch hold no cycles: the collector would only re-scan this
            # process's heap (a large one after building a store) between batches.
            with paused_gc():
                bounds = known.popleft()
                if bounds[0]:
                    send(bounds, 0)
                self.store.reset()
                reset = True
                position = 0
                while bounds[0]:
                    # Two batches in flight: a worker that has sent its part of this one goes
                    # on with the next at once, whatever the others and this process still do
                    # (a full worker, below, folds one batch more than it keeps).
                    upcoming = known.popleft() if known else self._bounds_after(bounds)
                    if upcoming[0]:
                        send(upcoming, bounds[1])
                    answers: list[FoldedPart] = workers.receive()
                    if not upcoming[0]:
                        workers.stop()  # nothing left to fold: they exit while this writes
                    position = self._write_folded(position, bounds, answers, on_batch)
                    if any(answer.full for answer in answers):
                        break
                    if upcoming[0]:
                        self.store.between_batches()  # while the workers fold the next batch
                    bounds = upcoming
        except (StaleBatch, WorkerFailed):
            pass  # the views stored are those of the last batch written: catch_up goes on
        except BaseException:
            workers.close()  # nothing follows: wait for them here
            raise
        finally:
            workers.stop()
            if not reset:
                self.store.reset()
        return workers

    def _write_folded(
        self,
        position: int,
        bounds: Bounds,
        answers: list[FoldedPart],
        on_batch: Callable[[int, int], None] | None,
    ) -> int:
        """Write a batch the workers folded (it expects the views at `position`)."""
        events, reached = bounds
        self.store.write_batch_rows(position, reached, [answer.rows for answer in answers])
        for answer in answers:
            for sid, at, rule, detail in answer.corrupt:
                self.corrupt[sid] = CorruptHistory(sid, at, rule, detail)
        self._advance(reached)
        if on_batch:
            on_batch(events, reached)
        return reached

    def _bounds_after(self, bounds: Bounds) -> Bounds:
        if bounds[0] < FORKED_BATCH:
            return (0, bounds[1])  # the end of the store when it was read: catch_up goes on
        return self.store.batch_bounds(bounds[1], FORKED_BATCH)

    def fold_part(self, state: FoldState, share: tuple[int, int, int]) -> FoldedPart:
        """In a worker: its share (after, upto, share) of a batch read and folded onto the
        facts it holds."""
        assert state.reader is not None
        part = state.reader.read(*share)
        batch: list[Row] = []
        chains, touched = state.chains, set()
        for i, o, v, t, d, c, p in part:
            if o.startswith("plan:"):
                p = chains.get(o)
                chains[o] = c
                touched.add(o[5:])
            batch.append((i, o, v, t, d if type(d) is bytes else bytes(d), c, p))
        broken = sorted(touched & state.broken)
        changes, stored = self._fold(batch, broken, state.plans, state.sessions)
        state.broken.update(changes.corrupt)
        corrupt = [
            (sid, error.position, error.rule, error.detail)
            for sid, error in changes.corrupt.items()
        ]
        rows = self.store.batch_rows(changes, stored)
        return FoldedPart(rows, corrupt, len(state.chains) > MAX_WORKER_SESSIONS)

    # -- waiting ------------------------------------------------------------------------------

    def _advance(self, position: int) -> None:
        with self.changed:
            if position == self.position:
                return
            self.position = position
            self.changed.notify_all()

    def wait_for(self, position: int, timeout: float = 5.0) -> bool:
        """Block until this runner has applied `position` (True) or time out."""
        with self.changed:
            return self.changed.wait_for(lambda: self.position >= position, timeout=timeout)

    def run(self, stop: threading.Event, idle_timeout: float = 1.0) -> None:
        """Follow the event store until `stop` is set: catch up at every wake-up."""
        self.store.wait_for_events(0)  # start listening before the first catch-up
        while not stop.is_set():
            self.catch_up()
            self.store.wait_for_events(idle_timeout)

    def rebuild(self, on_batch: Callable[[int, int], None] | None = None) -> int:
        """Drop every view and position, then apply all events again (a large store's with
        worker processes, see PARALLEL_MIN_EVENTS), up to the last committed before the call
        (waiting at most SETTLE_WAIT for it); returns the position reached."""
        self.corrupt.clear()
        end = self.store.last_committed()
        with self.changed:
            self.position = 0
        # (the workers' exit overlaps with the catch-up and the end of the bulk writes)
        with contextlib.ExitStack() as after, self.store.bulk_writes():
            batches = self._first_batches() if self.workers > 1 and can_fork() else None
            if batches is not None:  # resets the views first
                after.callback(self._rebuild_forked(batches, on_batch).close)
            else:
                self.store.reset()
            return self.catch_up_to(end, SETTLE_WAIT, on_batch)

    def close(self) -> None:
        self.store.close()
