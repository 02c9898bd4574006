"""The ledger application: every command goes through here, on SQLite or PostgreSQL."""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import (
    IntegrityError,
    JSONTranscoder,
    Transcoder,
)
from eventsourcing.utils import Environment, EnvType, get_topic

from domain.base import Aggregate
from domain.chain import broken_chain
from domain.errors import (
    CorruptHistory,
    ErrorKind,
    InvalidInput,
    LedgerError,
    ProposalNotFound,
    SessionExists,
    SessionNotFound,
)
from domain.forms import ParsedProposal, clean_text, parse_proposal
from domain.ids import plan_aggregate_id, session_aggregate_id, validate_id
from domain.models import PlanSnapshot, TaskOperation, Violation
from domain.plan import Plan
from domain.plan_state import Outcome, PendingProposal
from domain.session_fields import NO_ORIGIN, Goal, Mode, Origin
from planledger.service.actor import actor_or_local
from planledger.service.results import (
    Decision,
    GoalView,
    Problem,
    SessionView,
    VerifyReport,
)
from planledger.service.verify import (
    NOTHING,
    goal_starts,
    judge,
    replay,
    replayed,
    replayed_plan,
    verify_store,
)
from planledger.storage.errors import heals, unavailable_cause
from planledger.storage.recorder import InlineViews
from planledger.storage.scan import ChainedEvent
from planledger.storage.schema import ensure_schema, schema_is_current
from planledger.storage.settings import DatabaseSettings, database_settings
from planledger.storage.transcoding import EventTranscoder, PydanticTranscoding
from projections.decode import PlanEventDecoder
from projections.fold import ViewChanges, fold_events
from projections.forked import cores
from projections.plan_view import plan_view
from projections.shapes import PlanView

if TYPE_CHECKING:  # a plan's commands do not load the session's event classes
    from domain.session import Session

MAX_ATTEMPTS = 100
MAX_OBJECTIVE_CHARS = 2000
FEW_SESSIONS = 20  # named sessions verified stream by stream; more, in one pass over the store
WRITE_CACHE_SIZE = 1000  # plans kept by a long-running process (server) between commands
MAX_VERIFY_WORKERS = 4  # processes of a whole-store verify, at most (one per core below that)
# A snapshot of a plan or session is stored by the save whose events reach a version that is a
# multiple of SNAPSHOT_INTERVAL (the library's `snapshotting_intervals` rule), taken of the
# aggregate just saved: the library's own would read the aggregate back from the store first
# (tens of ms for a long plan, on the command's path), and the aggregate just saved is that
# state already.
SNAPSHOT_INTERVAL = 100
A = TypeVar("A", bound=Aggregate)


class Contention(LedgerError):
    """Too many concurrent writers on one plan; nothing was lost, try again."""

    kind = ErrorKind.UNAVAILABLE
    code = "contention"


@dataclass(frozen=True)
class Call:
    """One plan call to record: its payload in either form, and who made it."""

    payload: Any
    proposal_id: str | None = None
    client: str | None = None
    actor: str | None = None  # None: the local user (planledger.service.actor)
    # The payload passed domain.limits.check_payload already (an import checks each call as it
    # reads it, so that one past the limits is reported alone, not with its session's).
    checked: bool = False


@dataclass(frozen=True)
class ParsedCall:
    parsed: ParsedProposal
    proposal_id: str
    fingerprint: str
    client: str | None
    actor: str | None


def parse_call(call: Call) -> ParsedCall:
    """A call read and its proposal id chosen (before any retry, so a retry finds it)."""
    if not isinstance(call.payload, Mapping):
        raise InvalidInput("a plan proposal must be a JSON object")
    parsed = parse_proposal(call.payload, checked=call.checked)
    proposal_id = parsed.proposal_id or call.proposal_id or uuid.uuid4().hex
    validate_id(proposal_id, "proposal id")
    return ParsedCall(
        parsed, proposal_id, fingerprint(call.payload), call.client, actor_or_local(call.actor)
    )


def fingerprint(payload: Mapping[str, Any]) -> str:
    """Content identity of a proposal, for idempotent retries (ignores `proposal_id`)."""
    body = {k: v for k, v in payload.items() if k != "proposal_id"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))  # ASCII: always encodable
    return hashlib.sha256(canonical.encode()).hexdigest()


class Ledger(Application[str]):
    """Plans, sessions and goals as events; decisions under optimistic concurrency."""

    name = "planledger"

    def __init__(
        self, database: DatabaseSettings | str | None = None, *, schema_current: bool | None = None
    ) -> None:
        """`schema_current`: what the caller just read of the schema's version mark (None:
        read it here)."""
        settings = (
            database if isinstance(database, DatabaseSettings) else database_settings(database)
        )
        self.database = settings
        self.lost_races = 0  # saves refused because another writer appended first
        self.write_cache: dict[str, tuple[Plan, PlanView]] = {}
        self.write_cache_lock = threading.Lock()
        self.views_behind = threading.Event()  # set when a save could not store its views
        self.behind_at = 0  # the last store position of such a save
        # Processes of a whole-store verify, used from PARALLEL_MIN_EVENTS events on. On the
        # 2-core machine, 260k events: 38.9k events/s with one, 48-62k with two (SQLite,
        # PostgreSQL; bench/verify_rebuild.py --sessions 20000 --workers N).
        self.verify_workers = min(cores(), MAX_VERIFY_WORKERS)
        current = schema_is_current(settings) if schema_current is None else schema_current
        super().__init__(env=settings.env)
        # `store` saves as the library's `save` does without one (construct_env sets none).
        assert self.repository.cache is None, "the ledger keeps no aggregate cache"
        if not current:
            snapshots = self.snapshots.recorder if self.snapshots else None
            ensure_schema(settings, self.recorder, snapshots)

    def construct_env(self, name: str, env: EnvType | None = None) -> Environment:
        # Only our own setting counts: never os.environ, never silent in-memory storage.
        values = dict(env or {})
        values["IS_SNAPSHOTTING_ENABLED"] = "y"
        return Environment(name, values)

    def construct_transcoder(self) -> Transcoder:
        transcoder = EventTranscoder()
        self.register_transcodings(transcoder)
        return transcoder

    def register_transcodings(self, transcoder: JSONTranscoder) -> None:
        super().register_transcodings(transcoder)
        for model in (PlanSnapshot, Violation, PendingProposal, Outcome, Goal, TaskOperation):
            transcoder.register(PydanticTranscoding(model))

    # -- sessions and goals -----------------------------------------------------------------

    @heals
    def open_session(
        self, session_id: str, mode: Mode = Mode.WORK, origin: Origin = NO_ORIGIN
    ) -> SessionView:
        """Open a session (and its empty plan). SessionExists if it is already open."""
        from domain.session import Session

        validate_id(session_id)
        session = Session.open(session_aggregate_id(session_id), session_id, Mode(mode), origin)
        plan = Plan.create(plan_aggregate_id(session_id), session_id)
        try:
            _, changes = self.store(session, plan)
        except IntegrityError:
            raise SessionExists(session_id) from None
        self.checkin(plan, changes.views[session_id][1])  # the first proposal decides on it
        return session_view(session)

    def session_exists(self, session_id: str) -> bool:
        """Whether any event of the session was ever stored (verify of a named session)."""
        aggregate_id = session_aggregate_id(session_id)
        return bool(self.recorder.select_events(aggregate_id, limit=1))

    def session(self, session_id: str) -> SessionView:
        return session_view(self.session_aggregate(session_id))

    def set_mode(self, session_id: str, mode: Mode) -> SessionView:
        """The user's explicit mode switch, recorded as CollaborationModeChanged."""
        return session_view(
            self.update_aggregate(session_id, self.session_aggregate, lambda s: s.change_mode(mode))
        )

    def start_goal(self, session_id: str, goal_id: str, objective: str) -> SessionView:
        validate_id(goal_id, "goal id")
        if not objective.strip():
            raise InvalidInput("a goal needs a non-blank objective")
        if len(objective) > MAX_OBJECTIVE_CHARS:
            raise InvalidInput(f"a goal objective is at most {MAX_OBJECTIVE_CHARS} characters")
        if clean_text(objective) != objective:
            raise InvalidInput(
                "a goal objective must be plain text (valid Unicode; no NUL or other control "
                "character but tab and newline)"
            )
        return session_view(
            self.update_aggregate(
                session_id, self.session_aggregate, lambda s: s.start_goal(goal_id, objective)
            )
        )

    def move_goal(self, session_id: str, goal_id: str, edge: str) -> SessionView:
        """edge: block, resume, complete or cancel."""
        return session_view(
            self.update_aggregate(
                session_id, self.session_aggregate, lambda s: s.move_goal(goal_id, edge)
            )
        )

    # -- plans ------------------------------------------------------------------------------

    def submit(
        self,
        session_id: str,
        payload: Any,
        *,
        client: str | None = None,
        proposal_id: str | None = None,
        actor: str | None = None,
    ) -> Decision:
        """Propose and decide in one call (CLI, HTTP, ACP, MCP). `actor`: who sent it (None:
        the local user)."""
        return self.record_proposal(session_id, payload, client, proposal_id, actor, decide=True)

    def propose(
        self,
        session_id: str,
        payload: Any,
        *,
        client: str | None = None,
        proposal_id: str | None = None,
        actor: str | None = None,
    ) -> str:
        """Stage one: record the proposal undecided; returns its proposal_id."""
        decision = self.record_proposal(
            session_id, payload, client, proposal_id, actor, decide=False
        )
        return decision.proposal_id

    @heals
    def check(self, session_id: str, payload: Any) -> Decision:
        """The decision `submit` would make now, recording nothing (an unknown session is
        judged as an empty plan): for a call whose outcome must be known before it runs."""
        if not isinstance(payload, Mapping):
            raise InvalidInput("a plan proposal must be a JSON object")
        parsed = parse_proposal(payload)
        try:
            plan = self.plan_aggregate(session_id)
        except SessionNotFound:
            plan = Plan.create(plan_aggregate_id(session_id), session_id)
        proposal_id = parsed.proposal_id or "check"
        plan.propose(proposal_id, parsed, fingerprint(payload), None)
        outcome = plan.decide(self.goals_for(session_id, plan.pending))
        return decision_of(proposal_id, outcome, plan.revision)

    @heals
    def decide(self, session_id: str, proposal_id: str) -> Decision:
        """Stage two: decide a recorded proposal, or return the outcome it already has."""
        for _ in self.attempts():
            plan, before = self.checkout(session_id)
            outcome = plan.outcomes.get(proposal_id)
            if outcome is None:
                plan, before = self.read_plan(session_id)  # the cached plan may predate it
                outcome = plan.outcomes.get(proposal_id)
            if outcome is None:
                raise ProposalNotFound(f"session {session_id!r} has no proposal {proposal_id!r}")
            if outcome.status != "pending":
                self.checkin(plan, before)
                return decision_of(proposal_id, outcome, plan.revision)
            outcome = plan.decide(self.goals_for(session_id, plan.pending))
            decision = self.save_decision(plan, before, proposal_id, outcome)
            if decision is not None:
                return decision
        raise Contention(f"too many concurrent writers on session {session_id!r}")

    def record_proposal(
        self,
        session_id: str,
        payload: Any,
        client: str | None,
        proposal_id: str | None,
        actor: str | None,
        *,
        decide: bool,
    ) -> Decision:
        if not isinstance(payload, Mapping):
            raise InvalidInput("a plan proposal must be a JSON object")
        parsed = parse_proposal(payload)
        proposal_id = parsed.proposal_id or proposal_id or uuid.uuid4().hex
        validate_id(proposal_id, "proposal id")
        return self.decide_proposal(
            session_id,
            parsed,
            proposal_id,
            fingerprint(payload),
            (client, actor_or_local(actor)),
            decide,
        )

    @heals
    def decide_proposal(
        self,
        session_id: str,
        parsed: ParsedProposal,
        proposal_id: str,
        content: str,
        sender: tuple[str | None, str | None],  # (client, actor)
        decide: bool,
    ) -> Decision:
        for _ in self.attempts():
            plan, before = self.checkout(session_id)
            known = plan.outcomes.get(proposal_id)
            if known is not None:  # a retry: the plan's revision now is read from the store
                plan, before = self.read_plan(session_id)
                known = plan.outcomes.get(proposal_id)
            answer = retry_decision(plan, proposal_id, content, decide)
            if answer is not None:
                self.checkin(plan, before)
                return answer
            if known is None:
                plan.propose(proposal_id, parsed, content, *sender)
            outcome = plan.outcomes[proposal_id]
            if decide:
                outcome = plan.decide(self.goals_for(session_id, plan.pending))
            decision = self.save_decision(plan, before, proposal_id, outcome)
            if decision is not None:
                return decision
        raise Contention(f"too many concurrent writers on session {session_id!r}")

    def submit_batch(self, session_id: str, calls: Sequence[Call]) -> list[Decision]:
        """Propose and decide many calls on one session, in order, written in one transaction
        (bulk imports). Each call is decided exactly as `submit` would decide it; a call whose
        proposal_id is already recorded writes nothing and returns its recorded outcome."""
        return self.submit_sessions({session_id: calls})[session_id]

    def submit_sessions(
        self,
        batches: Mapping[str, Sequence[Call]],
        *,
        open_missing: bool = False,
        origins: Mapping[str, Origin] | None = None,
        absent: Collection[str] = (),
    ) -> dict[str, list[Decision]]:
        """`submit_batch` for many sessions at once, all in one transaction; with
        `open_missing`, a session that does not exist yet is opened in it too, with its
        origin from `origins`. The sessions in `absent` were just found missing (a bulk
        import): they are opened without a look first (one opened meanwhile makes the save
        fail, and the retry looks)."""
        parsed: dict[str, list[ParsedCall]] = {}
        for session_id, calls in batches.items():
            validate_id(session_id)
            parsed[session_id] = [parse_call(call) for call in calls]
        return self.record_sessions(parsed, open_missing, origins or {}, absent)

    @heals
    def record_sessions(
        self,
        batches: dict[str, list[ParsedCall]],
        open_missing: bool,
        origins: Mapping[str, Origin],
        absent: Collection[str] = (),
    ) -> dict[str, list[Decision]]:
        from domain.session import Session

        for attempt in self.attempts():
            aggregates: list[Aggregate] = []
            before: dict[str, PlanView | None] = {}
            plans: dict[str, Plan] = {}
            decided: dict[str, list[tuple[Decision, int]]] = {}
            offset = 0  # events of the aggregates before this one, in the order they are stored
            for session_id, calls in batches.items():
                try:
                    if open_missing and not attempt and session_id in absent:
                        raise SessionNotFound(session_id)
                    plan, view = self.checkout(session_id)
                    before[session_id] = view
                except SessionNotFound:
                    if not open_missing:
                        raise
                    session = Session.open(
                        session_aggregate_id(session_id),
                        session_id,
                        Mode.WORK,
                        origins.get(session_id, NO_ORIGIN),
                    )
                    plan = Plan.create(plan_aggregate_id(session_id), session_id)
                    aggregates.append(session)
                    offset += len(session.pending_events)
                    before[session_id] = None
                decided[session_id] = self.decide_calls(session_id, plan, calls, offset)
                offset += len(plan.pending_events)
                plans[session_id] = plan
                aggregates.append(plan)
            try:
                recordings, changes = self.store(*aggregates, before=before)
            except IntegrityError:
                self.lost_races += 1
                for session_id in batches:  # their cached plans may be stale: read again
                    with self.write_cache_lock:
                        self.write_cache.pop(session_id, None)
                continue
            results: dict[str, list[Decision]] = {}
            for session_id, plan in plans.items():
                changed = changes.views.get(session_id)
                after = changed[1] if changed else before[session_id]
                if after is not None:
                    self.checkin(plan, after)
                for decision, position in decided[session_id]:
                    if position > 0 and recordings:
                        decision.store_position = recordings[position - 1].notification.id
                results[session_id] = [decision for decision, _ in decided[session_id]]
            return results
        raise Contention("too many concurrent writers on these sessions")

    def decide_calls(
        self, session_id: str, plan: Plan, calls: list[ParsedCall], offset: int
    ) -> list[tuple[Decision, int]]:
        """Decide each call on `plan` in order; each decision with the (1-based) place of its
        last event among all the events of the save (-1 when it wrote nothing)."""
        decisions: list[tuple[Decision, int]] = []
        for call in calls:
            answer = retry_decision(plan, call.proposal_id, call.fingerprint)
            if answer is not None:
                decisions.append((answer, -1))
                continue
            if call.proposal_id not in plan.outcomes:
                plan.propose(
                    call.proposal_id, call.parsed, call.fingerprint, call.client, call.actor
                )
            outcome = plan.decide(self.goals_for(session_id, plan.pending))
            decided = decision_of(call.proposal_id, outcome, plan.revision)
            decisions.append((decided, offset + len(plan.pending_events)))
        return decisions

    def save_decision(
        self, plan: Plan, before: PlanView, proposal_id: str, outcome: Outcome
    ) -> Decision | None:
        """Save; None when another writer got there first (the caller re-decides)."""
        try:
            recordings, after = self.store_plan(plan, before)
        except IntegrityError:
            self.lost_races += 1
            return None
        self.checkin(plan, after)
        decision = decision_of(proposal_id, outcome, plan.revision)
        decision.store_position = recordings[-1].notification.id if recordings else None
        if recordings and outcome.status == "committed":
            decision._view = after
        return decision

    def goals_for(self, session_id: str, pending: PendingProposal | None) -> set[str]:
        # Only a proposal that names a goal costs a read of the session.
        if pending is None or pending.candidate is None or pending.candidate.goal_id is None:
            return set()
        return set(self.session_aggregate(session_id).goals)

    # -- verification -----------------------------------------------------------------------

    def session_ids(self) -> list[str]:
        """Every opened session, in the order they were opened (once each, also when an
        opening was copied into its stream by hand: verify reports that once)."""
        from domain.session import Session

        topic = get_topic(Session.SessionOpened)
        ids: dict[str, None] = {}
        start = 1
        while True:
            page = self.recorder.select_notifications(start, 500, topics=[topic])
            ids.update(
                (originator[8:], None)
                for originator in map(str, (n.originator_id for n in page))
                if originator.startswith("session:")  # (an opening copied elsewhere: none)
            )
            if len(page) < 500:
                return list(ids)
            start = page[-1].id + 1

    def verify(self, session_ids: Sequence[str] | None = None) -> VerifyReport:
        """Replay every event from the first (never from a snapshot), re-checking every rule.

        A few named sessions are read stream by stream; all of them, or many, in one ordered
        pass over the store (planledger.service.verify)."""
        ids = list(session_ids) if session_ids else self.session_ids()
        for session_id in ids:
            validate_id(session_id)
        if session_ids and len(ids) <= FEW_SESSIONS:
            problems = [p for session_id in ids for p in self.verify_session(session_id)]
        else:
            problems = verify_store(
                self.database,
                self.mapper,
                ids,
                every=not session_ids,
                workers=self.verify_workers,
            )
        return VerifyReport(ok=not problems, sessions_checked=len(ids), problems=problems)

    def verify_session(self, session_id: str) -> list[Problem]:
        validate_id(session_id)
        rows = self.chained_rows(session_aggregate_id(session_id))
        session = replayed(session_id, rows, self.mapper, chained=True)
        plan = NOTHING
        if session.found and session.problem is None:
            goals = goal_starts(rows, self.mapper).get(session_id, {})
            stream = self.chained_rows(plan_aggregate_id(session_id))
            decoder = PlanEventDecoder(self.mapper)
            plan = replayed_plan(session_id, stream, decoder, chained=True, goals=goals)
        return judge(session_id, session, plan)

    def checked_session(self, session_id: str) -> Session:
        """The session replayed from its events, each one's chain checked before it is applied,
        once its plan stream's chain is found whole too (each stream read once)."""
        from domain.session import Session

        validate_id(session_id)
        rows = self.chained_rows(session_aggregate_id(session_id))
        session, problem = replay(session_id, rows, self.mapper, chained=True)
        if problem is not None:
            raise CorruptHistory(session_id, problem.position, problem.rule, problem.message)
        if session is None:
            raise SessionNotFound(session_id)
        broken = self.broken_chain(session_id, streams=(plan_aggregate_id(session_id),))
        if broken is not None:
            raise broken
        assert isinstance(session, Session)
        return session

    def broken_chain(
        self, session_id: str, plan_version: int = 0, streams: Sequence[str] | None = None
    ) -> CorruptHistory | None:
        """domain.chain.broken_chain of the session, read by this ledger's recorder."""
        return broken_chain(self.chained_rows, session_id, plan_version, streams)

    @heals
    def chained_rows(self, aggregate_id: str) -> list[ChainedEvent]:
        """A stream's events with their chains."""
        chained: list[ChainedEvent] = self.recorder.select_chained(  # type: ignore[attr-defined]
            aggregate_id
        )  # (both of the ledger's recorders: planledger.storage.*_recorder)
        return chained

    def stream_events(self, aggregate_id: str) -> list[Any]:
        return list(self.recorder.select_events(aggregate_id))

    def replay_stream(self, aggregate_id: str, session_id: str) -> tuple[Any, Problem | None]:
        return replay(session_id, self.stream_events(aggregate_id), self.mapper)

    # -- plumbing ---------------------------------------------------------------------------

    def checkout(self, session_id: str) -> tuple[Plan, PlanView]:
        """The plan to decide on, with its view: the one this process last saved, else read
        from the store.

        A plan is taken out of the cache, so two threads never share one; a stale one (another
        process wrote since) cannot commit: its next version collides on the events' primary
        key, the save raises IntegrityError, and the retry reads the store.
        """
        with self.write_cache_lock:
            cached = self.write_cache.pop(session_id, None)
        return cached if cached is not None else self.read_plan(session_id)

    def read_plan(self, session_id: str) -> tuple[Plan, PlanView]:
        plan = self.plan_aggregate(session_id)
        return plan, plan_view(plan)

    def checkin(self, plan: Plan, view: PlanView) -> None:
        """Keep a plan whose every event is stored, for the next command on its session."""
        assert not plan.pending_events
        with self.write_cache_lock:
            self.write_cache[plan.session_id] = (plan, view)
            while len(self.write_cache) > WRITE_CACHE_SIZE:
                del self.write_cache[next(iter(self.write_cache))]

    def store_plan(self, plan: Plan, before: PlanView) -> tuple[list[Any], PlanView]:
        """Save the plan's new events with their views; returns the recordings and the view."""
        if not plan.pending_events:
            return [], before
        recordings, changes = self.store(plan, before={plan.session_id: before})
        changed = changes.views.get(plan.session_id)
        return recordings, changed[1] if changed else before

    def store(
        self, *aggregates: Aggregate, before: Mapping[str, PlanView | None] | None = None
    ) -> tuple[list[Any], ViewChanges]:
        """Save the aggregates' new events and, in the same transaction, the views they change
        (when the views are up to date; otherwise `views_behind` is set for a catch-up); then
        the snapshots due (SNAPSHOT_INTERVAL).

        What the library's `Application.save` does for this application, through the public
        parts it uses: each aggregate's `collect_events()` into the event store's `put`. Its
        own `collect_events` first checks every aggregate against two runtime-checkable
        protocols, 11 us a save measured alone and 33 us a submit in place on Python 3.11 (4% of
        a SQLite commit); and its other steps do nothing here: no aggregate cache to fill
        (__init__), no snapshotting_intervals (SNAPSHOT_INTERVAL), no notify hook."""
        events = [(event, None) for aggregate in aggregates for event in aggregate.pending_events]
        changes = fold_events(before or {}, events, judged=True)  # type: ignore[arg-type]
        views = InlineViews(changes)
        due = due_snapshots(aggregates)
        new = [event for aggregate in aggregates for event in aggregate.collect_events()]
        recordings = self.events.put(new, views=views)
        if due and self.snapshots is not None:
            self.snapshots.put([Aggregate.Snapshot.take(aggregate) for aggregate in due])
        if not views.applied:
            positions = [recording.notification.id for recording in recordings]
            self.behind_at = max(self.behind_at, *positions, 0)
            self.views_behind.set()
        return recordings, changes

    def plan_aggregate(self, session_id: str) -> Plan:
        return self.get_aggregate(plan_aggregate_id(session_id), session_id, Plan)

    def session_aggregate(self, session_id: str) -> Session:
        from domain.session import Session

        return self.get_aggregate(session_aggregate_id(session_id), session_id, Session)

    @heals
    def get_aggregate(self, aggregate_id: str, session_id: str, kind: type[A]) -> A:
        validate_id(session_id)
        try:
            aggregate: Any = self.repository.get(aggregate_id)
        except AggregateNotFoundError:
            raise SessionNotFound(session_id) from None
        except LedgerError:
            raise
        except Exception as error:
            if unavailable_cause(error) is not None:
                raise  # the database, not the history: replaying would wait for it again
            # A stored event that no longer decodes: name where, like verify does.
            _, problem = self.replay_stream(aggregate_id, session_id)
            if problem is None:
                raise
            raise CorruptHistory(
                session_id, problem.position, problem.rule, problem.message
            ) from None
        assert isinstance(aggregate, kind)
        return aggregate

    @heals
    def update_aggregate(
        self, session_id: str, load: Callable[[str], A], change: Callable[[A], None]
    ) -> A:
        for _ in self.attempts():
            aggregate = load(session_id)
            change(aggregate)
            try:
                self.store(aggregate)
            except IntegrityError:
                continue
            return aggregate
        raise Contention(f"too many concurrent writers on session {session_id!r}")

    @staticmethod
    def attempts() -> Iterator[int]:
        for attempt in range(MAX_ATTEMPTS):
            if attempt:
                # Jittered backoff so a crowd of losers does not collide again in lockstep.
                time.sleep(random.uniform(0, min(0.05, 0.001 * 2**attempt)))
            yield attempt


def due_snapshots(aggregates: Sequence[Aggregate]) -> list[Aggregate]:
    """The aggregates whose pending events reach a multiple of SNAPSHOT_INTERVAL (a bulk
    save holds thousands of aggregates: one look at each one's first and last version)."""
    due = []
    for aggregate in aggregates:
        pending = aggregate.pending_events
        if pending:
            first, last = pending[0].originator_version, pending[-1].originator_version
            if last // SNAPSHOT_INTERVAL > (first - 1) // SNAPSHOT_INTERVAL:
                due.append(aggregate)
    return due


def session_view(session: Session) -> SessionView:
    return SessionView(
        session_id=session.session_id,
        mode=str(session.mode),
        goals=[
            GoalView(goal_id=goal.goal_id, objective=goal.objective, state=str(goal.state))
            for goal in session.goals.values()
        ],
        should_continue=session.should_continue,
        source=session.source,
        parent_session_id=session.parent_session_id,
        cwd=session.cwd,
    )


def decision_of(proposal_id: str, outcome: Outcome, current_revision: int) -> Decision:
    """The decision an outcome records: its own revision (a retry answers what was decided
    then, not the plan's revision now, which another writer may have moved on)."""
    violations = list(outcome.violations)
    if outcome.status == "committed":
        status = "committed"
    elif any(v.code == "revision_conflict" for v in violations):
        status = "conflict"
    else:
        status = "rejected"
    return Decision(
        status=status,  # type: ignore[arg-type]
        revision=current_revision if outcome.revision is None else outcome.revision,
        proposal_id=proposal_id,
        violations=violations,
        current_revision=current_revision,
    )


def retry_decision(
    plan: Plan, proposal_id: str, fingerprint: str, decide: bool = True
) -> Decision | None:
    """What a proposal id the plan recorded before answers, writing nothing (None: not
    recorded, or recorded and undecided while `decide` asks for its decision): its recorded
    outcome when sent again with the same content, proposal_id_reused with other content."""
    known = plan.outcomes.get(proposal_id)
    if known is None:
        return None
    if known.fingerprint != fingerprint:
        return reused_decision(proposal_id, plan.revision)
    if known.status != "pending" or not decide:
        return decision_of(proposal_id, known, plan.revision)
    return None


def reused_decision(proposal_id: str, current_revision: int) -> Decision:
    return Decision(
        status="rejected",
        revision=current_revision,
        proposal_id=proposal_id,
        violations=[
            Violation(
                code="proposal_id_reused",
                message=f"proposal_id {proposal_id!r} was already used for different content; "
                "send a new proposal_id for a new proposal.",
            )
        ],
        current_revision=current_revision,
    )
