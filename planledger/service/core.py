"""The service layer: the one way in (commands) and out (queries, live feed) for every client.

A client (CLI, HTTP, MCP, ACP, TUI, importers, hooks) takes a `PlanLedger` from
`open_planledger(url)`, calls it, renders what it returns, and maps a `LedgerError`'s `kind` to
its own codes. It never builds a ledger, a store or a runner of its own.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from domain.chain import CHAIN_BROKEN, broken_chain
from domain.errors import (
    CorruptHistory,
    LedgerError,
    RevisionNotFound,
    SessionNotFound,
    StorageUnavailable,
    error_line,
)
from domain.ids import validate_id
from domain.session_fields import Mode, Origin
from planledger.service.feed import ChangeSignal, FeedEvent
from planledger.service.files import FilesFollower, PlanFiles
from planledger.service.follower import ViewsFollower
from planledger.service.results import Decision, Problem, SessionView, VerifyReport
from planledger.storage.errors import may_not_write, probe_cause, unavailable_cause
from planledger.storage.schema import schema_is_current
from planledger.storage.settings import DatabaseSettings, database_settings, home_dir
from planledger.storage.stores import open_store
from planledger.storage.views import ViewStore
from projections.compaction import DEFAULT_MAX_CHARS, CompactionSnapshot, build_plan_snapshot
from projections.plan_diff import PlanDiff, plan_diff
from projections.shapes import CorruptMark, History, PlanView, SessionList

if TYPE_CHECKING:
    # The write side (eventsourcing, the event classes, the projection runner) is imported
    # when a command first needs it: a read of the views (`plan show`) needs none of it.
    # (cryptography is imported by the commands that sign or check.)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

    from domain.checkpoint import Checkpoint
    from planledger.service.ledger import Call, Ledger
    from planledger.service.report import SessionReport
    from planledger.service.tokens import Grant, NewToken, TokenInfo
    from projections.decode import PlanEventDecoder
    from projections.runner import ProjectionRunner

FEED_BATCH = 500
CATCH_UP_WAIT = 3.0  # seconds a write waits for the views to reach it (then reads may lag)
# A transaction holding the readers of the store's order back (planledger.storage.horizon) for
# longer than this is a health warning.
HELD_BACK_WARNING = 30.0


@dataclass(frozen=True)
class Health:
    store_position: int
    error: str | None = None  # the database or the live feed is down
    warnings: tuple[str, ...] = ()  # plan.json files failing; a transaction holding reads back


class PlanLedger:
    """Commands, queries and the live feed over one database."""

    def __init__(self, database: DatabaseSettings, home: Path | None = None) -> None:
        self.database = database
        self.home = home
        self._write_side_lock = threading.Lock()
        self._ledger: Ledger | None = None
        self._runner: ProjectionRunner | None = None
        if not schema_is_current(database):  # (fails at once, naming why, when unreachable)
            self._ledger = self._built_ledger(schema_current=False)  # it sets the schema up
        self.views: ViewStore = open_store(database)
        self.files = PlanFiles(home, database, self.views) if home is not None else None
        self._signal: ChangeSignal | None = None
        self._files_follower: FilesFollower | None = None
        self._signal_lock = threading.Lock()
        self._commits = 0  # commits that wrote their plan.json file on this process's path
        self._notes: deque[str] = deque(maxlen=5)  # why reads lag (see warnings)
        self._catch_up_if_behind()

    @property
    def ledger(self) -> Ledger:
        """The write side: eventsourcing's application over the events, built on first use."""
        if self._ledger is None:
            with self._write_side_lock:
                if self._ledger is None:
                    self._ledger = self._built_ledger(schema_current=True)
        return self._ledger

    @property
    def runner(self) -> ProjectionRunner:
        """What brings the views up to the events, built on first use."""
        if self._runner is None:
            from projections.runner import ProjectionRunner

            mapper = self.ledger.mapper
            with self._write_side_lock:
                if self._runner is None:
                    self._runner = ProjectionRunner(self.views, mapper)
        return self._runner

    def _built_ledger(self, *, schema_current: bool) -> Ledger:
        from planledger.service.ledger import Ledger

        with storage_errors(self.database):
            return Ledger(self.database, schema_current=schema_current)

    # -- commands ---------------------------------------------------------------------------

    def open_session(
        self,
        session_id: str,
        mode: Mode | str = Mode.WORK,
        *,
        source: str | None = None,
        parent_session_id: str | None = None,
        cwd: str | None = None,
    ) -> SessionView:
        """Open a session and its empty plan; `exists` if it is already open. `source` names
        the client or importer opening it, `parent_session_id` the session it was forked
        from or works for, `cwd` the agent's working directory (each None when unknown)."""
        origin = Origin.checked(source, parent_session_id, cwd)
        view = self.ledger.open_session(session_id, Mode(mode), origin)
        self._after_write(session_id)
        return view

    def set_mode(self, session_id: str, mode: Mode | str) -> SessionView:
        """The user's explicit switch of the collaboration mode (recorded as an event)."""
        view = self.ledger.set_mode(session_id, Mode(mode))
        self._after_write()
        return view

    def start_goal(self, session_id: str, goal_id: str, objective: str) -> SessionView:
        view = self.ledger.start_goal(session_id, goal_id, objective)
        self._after_write()
        return view

    def move_goal(self, session_id: str, goal_id: str, edge: str) -> SessionView:
        """edge: complete, block, resume or cancel."""
        view = self.ledger.move_goal(session_id, goal_id, edge)
        self._after_write()
        return view

    def submit(
        self,
        session_id: str,
        payload: Any,
        *,
        client: str | None = None,
        proposal_id: str | None = None,
        actor: str | None = None,
    ) -> Decision:
        """Propose and decide in one call; the views include the decision when it returns.
        `actor`: who sent it (an HTTP token's name; None: the local user)."""
        decision = self.ledger.submit(
            session_id, payload, client=client, proposal_id=proposal_id, actor=actor
        )
        self._after_write(*_committed(session_id, decision))
        return decision

    def check(self, session_id: str, payload: Any) -> Decision:
        """The decision `submit` would make now, recording nothing (a hook checks a call whose
        result it cannot know before the agent runs it); an unknown session is judged as an
        empty plan."""
        return self.ledger.check(session_id, payload)

    def submit_batch(self, session_id: str, calls: Sequence[Call]) -> list[Decision]:
        """Many calls on one session, each decided as `submit` would, in one transaction."""
        decisions = self.ledger.submit_batch(session_id, calls)
        self._after_write(*_committed(session_id, *decisions))
        return decisions

    def submit_sessions(
        self,
        batches: Mapping[str, Sequence[Call]],
        *,
        open_missing: bool = False,
        origins: Mapping[str, Origin] | None = None,
        absent: Collection[str] = (),
    ) -> dict[str, list[Decision]]:
        """Bulk recording (imports): many sessions' calls in one transaction, each decided as
        `submit` would; `open_missing` opens the sessions that do not exist yet (with their
        `origins`; those in `absent` were just found missing and are not looked for first).
        Their plan.json files are back-filled in the background, not written one by one."""
        results = self.ledger.submit_sessions(
            batches, open_missing=open_missing, origins=origins, absent=absent
        )
        self._after_write()
        return results

    def propose(
        self,
        session_id: str,
        payload: Any,
        *,
        client: str | None = None,
        proposal_id: str | None = None,
        actor: str | None = None,
    ) -> str:
        """Stage one: record a proposal undecided; returns its proposal_id."""
        recorded = self.ledger.propose(
            session_id, payload, client=client, proposal_id=proposal_id, actor=actor
        )
        self._after_write()
        return recorded

    def decide(self, session_id: str, proposal_id: str) -> Decision:
        """Stage two: decide a recorded proposal (or return the outcome it already has)."""
        decision = self.ledger.decide(session_id, proposal_id)
        self._after_write(*_committed(session_id, decision))
        return decision

    # -- queries ----------------------------------------------------------------------------

    def session(self, session_id: str) -> SessionView:
        """The session's mode and goals, replayed from its events (a session whose events are
        not the ones the ledger wrote is an error, as for its plan)."""
        from planledger.service.ledger import session_view

        return session_view(self.ledger.checked_session(session_id))

    def should_continue(self, session_id: str) -> bool:
        """True exactly when the session has an active goal (never from edited events)."""
        return self.ledger.checked_session(session_id).should_continue

    def sessions(self) -> SessionList:
        """Every session, newest first."""
        return self.views.session_list()

    def plan(self, session_id: str, revision: int | None = None) -> PlanView:
        """The plan view now, or the committed plan as it stood at `revision` (both from the
        views, which the rules were re-checked into: a corrupt session is an error)."""
        view = self._sound_view(session_id)
        if revision is None or revision == view.revision:
            return view
        if revision > view.revision:
            raise RevisionNotFound(
                f"session {session_id!r} has no revision {revision} (latest: {view.revision})"
            )
        at = self.views.plan_at(session_id, revision, self._decoder())
        if at is None:
            raise RevisionNotFound(f"session {session_id!r} has no revision {revision}")
        return at

    def plan_after(self, session_id: str, decision: Decision) -> PlanView:
        """The plan as a committed `decision` left it: the view its commit wrote when this
        process wrote it, else read at its revision."""
        if decision.view is not None:
            return decision.view
        view = self.plan(session_id)
        if view.revision != decision.revision:  # another writer committed since
            view = self.plan(session_id, decision.revision)
        return view

    def report(self, session_id: str) -> SessionReport:
        """The session's audit report, from its events (planledger.service.report)."""
        from planledger.service.report import session_report

        return session_report(self.ledger, session_id)

    def plan_diff(self, session_id: str, first: int, second: int) -> PlanDiff:
        """What changed from revision `first` to revision `second` (0: no plan yet)."""
        return plan_diff(self.plan(session_id, first), self.plan(session_id, second))

    def history(self, session_id: str) -> History:
        """Every proposal, commit and rejection of the session, in order."""
        self._sound_view(session_id)
        return History(session_id=session_id, entries=self.views.history(session_id))

    def compaction(self, session_id: str, max_chars: int = DEFAULT_MAX_CHARS) -> CompactionSnapshot:
        """The bounded handoff summary; a plan that cannot be read is `unreadable`."""
        validate_id(session_id)
        if self.views.plan_view(session_id) is None:
            raise SessionNotFound(session_id)
        return build_plan_snapshot(lambda: self.plan(session_id), max_chars)

    def _decoder(self) -> PlanEventDecoder:
        """A decoder of commit events for one read (it remembers what it decoded: a thread
        of its own each)."""
        from projections.decode import PlanEventDecoder

        return PlanEventDecoder(self.ledger.mapper)

    def _sound_view(self, session_id: str) -> PlanView:
        validate_id(session_id)
        found = self.views.plan_view_row(session_id)
        if found is None:
            raise SessionNotFound(session_id)
        view, corrupt, version = found
        if corrupt is not None:
            raise CorruptHistory(session_id, corrupt.position, corrupt.rule, corrupt.message)
        # The views were made from events that must still be there as they were written.
        self._sound_chains(session_id, version)
        return view

    def _sound_chains(self, session_id: str, plan_version: int = 0) -> None:
        """Raise CorruptHistory where the session's chains break (or its plan stream ends
        before `plan_version`)."""
        broken = broken_chain(self.views.chained_rows, session_id, plan_version)
        if broken is not None:
            raise broken

    def verify(
        self,
        session_ids: Sequence[str] | None = None,
        checkpoint: Checkpoint | None = None,
        trusted: Ed25519PublicKey | None = None,
    ) -> VerifyReport:
        """Replay from the first event (never a snapshot), re-checking every rule and chain,
        and, given a `checkpoint`, that the store still holds every event it signed (with
        `trusted`, that this key signed it). A session found corrupt is marked so in the
        views: reads refuse it from then on."""
        for session_id in session_ids or ():
            validate_id(session_id)
            if self.views.plan_view(session_id) is None and not self.ledger.session_exists(
                session_id
            ):
                raise SessionNotFound(session_id)
        report = self.ledger.verify(session_ids)
        report = self._with_streams_cut_short(report, session_ids)
        if checkpoint is not None:
            from planledger.service.checkpoints import checkpoint_problems

            found = checkpoint_problems(self.views, checkpoint, trusted)
            wanted = set(session_ids or ())
            found = [p for p in found if not wanted or p.session_id in wanted or not p.session_id]
            if found:
                problems = [*report.problems, *found]
                report = report.model_copy(update={"ok": False, "problems": problems})
        for problem in report.problems:
            if problem.rule != "session_not_found" and problem.session_id:
                self.views.mark_corrupt(
                    problem.session_id,
                    CorruptMark(
                        rule=problem.rule, position=problem.position, message=problem.message
                    ),
                )
        return report

    def _with_streams_cut_short(
        self, report: VerifyReport, session_ids: Sequence[str] | None
    ) -> VerifyReport:
        """`report` and each session whose plan stream now ends before the event its view was
        made from (its last events deleted, their chain intact): chain_broken there."""
        wanted = set(session_ids or ())
        judged = {p.session_id for p in report.problems}
        found = [
            Problem(
                session_id=sid,
                position=last + 1,
                rule=CHAIN_BROKEN,
                message=f"plan:{sid}: the events from position {last + 1} to {version} are gone "
                "(the views were made from them)",
            )
            for sid, version, last in self.views.streams_cut_short()
            if (not wanted or sid in wanted) and sid not in judged
        ]
        if not found:
            return report
        return report.model_copy(update={"ok": False, "problems": [*report.problems, *found]})

    def checkpoint(self, key: Ed25519PrivateKey) -> Checkpoint:
        """A signed statement of the store as it is now (planledger.service.checkpoints)."""
        from planledger.service.checkpoints import make_checkpoint

        return make_checkpoint(self.views, self.database, key)

    def latest_checkpoint(self) -> Checkpoint | None:
        from planledger.service.checkpoints import latest_checkpoint

        return latest_checkpoint(self.views)

    # -- named tokens of the HTTP server (planledger.service.tokens) --------------------------

    def add_token(self, name: str, scope: str) -> NewToken:
        from planledger.service.tokens import Scope, add_token

        return add_token(self.views, name, Scope(scope))

    def tokens(self) -> list[TokenInfo]:
        from planledger.service.tokens import list_tokens

        return list_tokens(self.views)

    def revoke_token(self, name: str) -> None:
        from planledger.service.tokens import revoke_token

        revoke_token(self.views, name)

    def grant_of(self, token: str) -> Grant | None:
        """What a token in use may do (None: unknown or revoked)."""
        from planledger.service.tokens import grant_of

        return grant_of(self.views, token)

    def tokens_in_use(self) -> bool:
        from planledger.service.tokens import tokens_in_use

        return tokens_in_use(self.views)

    # -- live feed --------------------------------------------------------------------------

    async def follow(
        self, session_id: str | None = None, after: int = 0, *, idle_timeout: float = 15.0
    ) -> AsyncIterator[FeedEvent]:
        """Every plan event after store position `after` (of one session, or all), in store
        order, then each new one as any writer commits it. Runs until the caller stops."""
        import asyncio

        if session_id is not None:
            await asyncio.to_thread(self.session, session_id)  # not_found before following
        signal = self._change_signal()
        last = after
        while True:
            generation = signal.generation
            events = await asyncio.to_thread(self.events_after, last, session_id)
            for event in events:
                yield event
                last = event.store_position
            if len(events) < FEED_BATCH and signal.generation == generation:
                await signal.wait(idle_timeout)

    def events_after(
        self, after: int, session_id: str | None = None, limit: int = FEED_BATCH
    ) -> list[FeedEvent]:
        """The feed's events after store position `after`, without waiting."""
        if self._signal is None:  # no follower moves the views' position: catch up here
            self._catch_up_if_behind()
        return [
            FeedEvent(
                store_position=position,
                session_id=sid,
                kind=entry.kind,
                entry=entry,
                plan=view,
            )
            for sid, position, entry, view in self.views.feed_after(
                after, session_id, limit, self._decoder()
            )
        ]

    def store_position(self) -> int:
        """The position of the store's order the views have reached."""
        return self.views.max_notification_id()

    def health(self) -> Health:
        """The store position reached, and what is wrong (None while all is well)."""
        try:
            position = self.store_position()
        except Exception as error:
            return Health(store_position=0, error=f"database unavailable: {error_line(error)}")
        feed_error = self._signal.error if self._signal is not None else None
        warnings = list(self.files.warnings)[-5:] if self.files is not None else []
        warnings.extend(self._held_back(HELD_BACK_WARNING))  # now, not when a write waited
        return Health(store_position=position, error=feed_error, warnings=tuple(warnings))

    def _held_back(self, older_than: float) -> tuple[str, ...]:
        try:
            return self.views.horizon_holders(older_than)
        except Exception:  # a health report says what it can (a role that may not look)
            return ()

    # -- plumbing ---------------------------------------------------------------------------

    def catch_up(self) -> int:
        """Bring the views and their position up to every event committed before the call
        (the views are behind only after a rebuild, a schema change, or events written
        without views; on PostgreSQL writers leave the position to the runner, and an earlier
        transaction still in flight anywhere on the server holds the runner back for as long
        as it lasts, at most CATCH_UP_WAIT here); returns the position reached."""
        return self._catch_up_to(self.views.last_committed())

    def _catch_up_to(self, position: int) -> int:
        """Catch the views up to `position` at least, or until CATCH_UP_WAIT passes (then
        the transactions holding the runner back are said after the command); the position
        reached."""
        reached = self.runner.catch_up_to(position, CATCH_UP_WAIT)
        if reached < position:
            self._notes.extend(self._held_back(0))  # said after the command, with its warnings
        return reached

    def _catch_up_if_behind(self) -> bool:
        """Catch the views up if they are behind the store; whether they were. A process that
        may not write (a read-only role, a standby) reads on: a writer stores each session's
        views with its events, and only the views' position (the live feed's) waits for a
        process that may write."""
        reached, last = self.views.status()
        if reached < last:
            try:
                self.runner.catch_up()
            except Exception as error:
                if not may_not_write(error):
                    raise
                note = (
                    "this database connection may not write: the views' position stays at "
                    f"{reached} (plans and histories are read as writers stored them; the live "
                    "feed follows once a process that may write catches the views up)"
                )
                if note not in self._notes:
                    self._notes.append(note)
        return reached < last

    def _after_write(self, *committed: str) -> None:
        if self.ledger.views_behind.is_set():
            self.ledger.views_behind.clear()
            self._catch_up_to(self.ledger.behind_at)
        # A long-running process has a follower that brings the files up, off the request's
        # path (within FOLLOW_INTERVAL); a one-shot command writes its session's file itself.
        # A process that commits a second time is a long-running one (a harness on the
        # Python API): from then on it follows too.
        if committed and self.files is not None and self._signal is None:
            self._commits += 1
            if self._commits > 1:
                self.follow_files()
            else:
                for session_id in committed:
                    found = self.views.plan_view(session_id)
                    if found is not None and found[1] is None:
                        self.files.write(found[0])
        if self._signal is not None:
            self._signal.fire()

    @property
    def warnings(self) -> list[str]:
        """Side effects that failed after a commit (plan.json files; never a failed commit),
        and why reads lag (a transaction holding the readers back, a connection that may not
        move the views' position)."""
        files = list(self.files.warnings) if self.files is not None else []
        return files + list(self._notes)

    def follow_files(self) -> None:
        """For long-running processes: keep the plan.json files following every writer."""
        self._change_signal().start()

    def sync_files(self) -> int:
        """Write the plan.json files of the views changed since the files' position (the
        background back-fill)."""
        return self.files.sync() if self.files is not None else 0

    def repair_files(self, on_page: Callable[[int], None] | None = None) -> int:
        """Rewrite every plan.json file that is missing or differs from its view, whatever
        the files' position says (`projections rebuild`, `sync-files`); how many were."""
        return self.files.repair(on_page=on_page) if self.files is not None else 0

    def _change_signal(self) -> ChangeSignal:
        with self._signal_lock:
            if self._signal is None:
                store = open_store(self.database)  # its own connection to wait on
                follower = FilesFollower(self.files) if self.files is not None else None
                views = ViewsFollower(store, self.views, self._catch_up_if_behind, follower)
                self._signal = ChangeSignal(views.wait_for_change)
                self._signal_store = store
                self._files_follower = follower
            return self._signal

    def close(self) -> None:
        if self.files is not None and self._signal is None:
            self.files.settle()  # a one-shot process: back-fill in the background if needed
        if self._signal is not None:
            self._signal.stop()
            if self._files_follower is not None:
                # The views' position past this process's commits, which the files follow
                # (a connection that may not write, a database gone: another process's pass).
                with contextlib.suppress(Exception):
                    self.catch_up()
                self._files_follower.due()  # commits its thread has not seen yet: written now
                self._files_follower.stop()
            self._signal_store.close()
        self.views.close()
        if self._ledger is not None:
            self._ledger.close()

    def __enter__(self) -> PlanLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _committed(session_id: str, *decisions: Decision) -> list[str]:
    """[session_id] when one of the decisions wrote a commit (its plan.json is then due)."""
    wrote = any(d.status == "committed" and d.store_position is not None for d in decisions)
    return [session_id] if wrote else []


def open_planledger(
    url: str | None = None, *, home: Path | Callable[[], Path] | None = home_dir
) -> PlanLedger:
    """The service on `url` (else PLANLEDGER_DATABASE_URL, else the SQLite default), with
    plan.json files under `home` (PLANLEDGER_HOME by default; None writes none)."""
    files = home() if callable(home) else home
    settings = database_settings(url)
    with storage_errors(settings):
        return PlanLedger(settings, files)


@contextlib.contextmanager
def storage_errors(settings: DatabaseSettings) -> Iterator[None]:
    """A database that cannot be reached, as StorageUnavailable naming why."""
    try:
        yield
    except LedgerError:
        raise
    except Exception as error:
        cause = unavailable_cause(error)
        if cause is None:
            raise
        raise StorageUnavailable(
            f"storage unavailable ({settings.display_url}): {probe_cause(settings) or cause}"
        ) from error
