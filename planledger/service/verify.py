"""verify: every stream replayed from its first event by the domain's own rules (a plan's
events applied by the functions its aggregate applies them with, a session's through its
aggregate), so every rule is re-checked on every commit, and each session judged as
`Ledger.verify_session` judges it.

One session is read with two stream reads (its cost does not depend on the store's size). The
whole store is read in one ordered pass (`planledger.storage.scan`), optionally split into key
ranges replayed by worker processes; a stream's replay keeps only the few facts the judgement
needs, so memory stays small whatever the store's size.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eventsourcing.persistence import Mapper, StoredEvent

from domain.base import Event, replay_event
from domain.chain import chain_broken, first_break
from domain.errors import CorruptHistory, error_line
from domain.plan import Plan, apply_to_state
from domain.plan_state import PlanState
from planledger.service.results import Problem
from planledger.storage.scan import ChainedEvent, scan_events, session_events_of, split_points
from planledger.storage.settings import DatabaseSettings
from projections.decode import PlanEventDecoder
from projections.forked import ForkedWorkers, WorkerFailed, can_fork
from projections.gc_pause import paused_gc

# Below this, forking worker processes costs more than it saves.
PARALLEL_MIN_EVENTS = 20_000


@dataclass(frozen=True)
class Replayed:
    """What replaying one stream left: whether it had events, the problem it stopped at, and
    the plan's version."""

    found: bool = False
    problem: Problem | None = None
    version: int = 0


GOAL_STARTED = "domain.session:Session.GoalStarted"  # its topic (domain.session loads late)
# Each session's goals, each with the store position of its start (a plan's commit may name a
# goal started before it).
GoalStarts = dict[str, dict[str, int]]
NO_STARTS: dict[str, int] = {}


def store_goal_starts(database: DatabaseSettings, mapper: Mapper[Any]) -> GoalStarts:
    """Every session's goal starts (an index range read of the session streams)."""
    return goal_starts(session_events_of(database, GOAL_STARTED), mapper)


def goal_starts(rows: Iterable[ChainedEvent], mapper: Mapper[Any]) -> GoalStarts:
    """The goals the GoalStarted events among `rows` started, by session (the first start of
    each; one that does not decode is left out: its session's own replay names it)."""
    starts: GoalStarts = {}
    for row in rows:
        if row.topic != GOAL_STARTED:
            continue
        try:
            event = mapper.to_domain_event(row)  # type: ignore[arg-type]  # (read alike)
            goal_id = getattr(event, "goal_id", None)
        except Exception:
            continue
        if type(goal_id) is str:
            session_id = row.originator_id.removeprefix("session:")
            starts.setdefault(session_id, {}).setdefault(goal_id, row.position)
    return starts


NOTHING = Replayed()
# A stored event: the library's StoredEvent, or a ChainedEvent (whose chain can be checked).
Row = StoredEvent | ChainedEvent


def replay(
    session_id: str,
    stored_events: Iterable[Row],
    mapper: Mapper[Any],
    chained: bool = False,
) -> tuple[Any, Problem | None]:
    """Apply the stream's events in order from the first (never a snapshot); the aggregate
    they build (None: no events) and the first problem, which stops the replay. `chained`:
    the events carry their chain, checked first (domain.chain): a break stops the replay
    before the event it is found at."""
    rows, broken = _chained(session_id, stored_events, chained)
    aggregate: Any = None
    for stored in rows:
        try:
            event = mapper.to_domain_event(stored)  # type: ignore[arg-type]  # (read alike)
            assert isinstance(event, Event)
        except Exception as error:  # an edited row that no longer decodes
            return aggregate, unreadable(session_id, stored, error)
        try:
            aggregate = replay_event(session_id, aggregate, event)
        except CorruptHistory as error:
            return aggregate, corrupt_at(session_id, error)
    return aggregate, broken


def _chained(
    session_id: str, stored_events: Iterable[Row], chained: bool
) -> tuple[list[Row], Problem | None]:
    """The events to apply, and the break of their chain that ends them (when `chained`: the
    events are ChainedEvents, checked in one pass before any is applied)."""
    rows = list(stored_events)
    if not chained:
        return rows, None
    at = first_break(rows)  # type: ignore[arg-type]  # (rows read with their chains)
    if at is None:
        return rows, None
    broken = chain_broken(session_id, rows[at])  # type: ignore[arg-type]
    return rows[:at], corrupt_at(session_id, broken)


def unreadable(session_id: str, stored: Row, error: Exception) -> Problem:
    message = error_line(error)
    return problem(session_id, stored.originator_version, "unreadable_event", message)


def replayed(
    session_id: str,
    stored_events: Iterable[Row],
    mapper: Mapper[Any],
    chained: bool = False,
) -> Replayed:
    """A session stream replayed through its aggregate."""
    aggregate, problem = replay(session_id, stored_events, mapper, chained)
    if problem is not None:
        return Replayed(found=True, problem=problem)
    if aggregate is None:
        return NOTHING
    if not isinstance(aggregate, Plan):  # a session
        return Replayed(found=True)
    return Replayed(found=True, version=aggregate.version)


def replayed_plan(
    session_id: str,
    stored_events: Iterable[Row],
    decoder: PlanEventDecoder,
    chained: bool = False,
    goals: Mapping[str, int] | None = None,
) -> Replayed:
    """A plan stream's events applied in order by the plan's rules (`apply_to_state`, the
    functions the aggregate applies its events with) to the facts they need, from the first
    (`chained`: each event's chain checked before; `goals`: the session's goals and the store
    positions of their starts, each commit judged by those started before it; None: goals
    not checked)."""
    rows, broken = _chained(session_id, stored_events, chained)
    # Decoded first, then applied: each pass keeps its own code in the CPU's caches (about a
    # tenth off a replay, against decoding and applying each event in turn).
    events: list[Any] = []
    for stored in rows:
        try:
            events.append(decoder.to_domain_event(stored))  # type: ignore[arg-type]
        except Exception as error:  # an edited row that no longer decodes
            broken = unreadable(session_id, stored, error)  # (after the events before it)
            break
    plan: PlanState | None = None
    for stored, event in zip(rows, events, strict=False):
        started = None
        if goals is not None and isinstance(event, Plan.PlanCommitted):
            at = getattr(stored, "position", 0)
            started = [goal for goal, start in goals.items() if start < at] if goals else []
        try:
            plan, _ = apply_to_state(plan, session_id, event, session_goals=started)
        except CorruptHistory as error:
            return Replayed(found=True, problem=corrupt_at(session_id, error))
        except Exception as error:  # an edited row decoded to what the rules cannot take
            return Replayed(found=True, problem=unreadable(session_id, stored, error))
    if broken is not None:
        return Replayed(found=True, problem=broken)
    if plan is None:
        return NOTHING if not rows else Replayed(found=True)
    return Replayed(found=True, version=plan.version or 0)


def judge(session_id: str, session: Replayed, plan: Replayed) -> list[Problem]:
    """The session's problem: its own stream's, else not found, else its plan's; none when all
    is well."""
    if session.problem is not None:
        return [session.problem]
    if not session.found:
        return [problem(session_id, 0, "session_not_found", f"no session {session_id!r}")]
    if plan.problem is not None:
        return [plan.problem]
    if not plan.found:
        return [problem(session_id, 0, "missing_plan", "the session has no plan stream")]
    return []


def problem(session_id: str, position: int, rule: str, message: str) -> Problem:
    return Problem(session_id=session_id, position=position, rule=rule, message=message)


def corrupt_at(session_id: str, error: CorruptHistory) -> Problem:
    """A replay's CorruptHistory as the session's problem."""
    return problem(session_id, error.position, error.rule, error.detail)


def replay_range(
    database: DatabaseSettings,
    mapper: Mapper[Any],
    wanted: set[str] | None,
    lower: str = "",
    upper: str | None = None,
    chained: bool = True,
    starts: GoalStarts | None = None,
) -> tuple[dict[str, Replayed], dict[str, Replayed]]:
    """Replay every session and plan stream in the key range [lower, upper) (only those of
    `wanted` sessions, when given): (sessions, plans) by session id. `chained` checks every
    event's chain (False: only the rules, for the bench to measure what the chain costs).
    `starts`: the store's goal starts (None: read here)."""
    sessions: dict[str, Replayed] = {}
    plans: dict[str, Replayed] = {}
    if starts is None:
        starts = store_goal_starts(database, mapper)
    decoder = PlanEventDecoder(mapper)
    events = scan_events(database, lower, upper)
    with paused_gc():  # a replay makes no cycles: the collector would only re-scan the heap
        for originator_id, stream in itertools.groupby(events, key=_originator):
            kind, _, session_id = originator_id.partition(":")
            if wanted is not None and session_id not in wanted:
                continue
            if kind == "plan":
                goals = starts.get(session_id, NO_STARTS)
                plans[session_id] = replayed_plan(session_id, stream, decoder, chained, goals)
            elif kind == "session":
                sessions[session_id] = replayed(session_id, stream, mapper, chained)
    return sessions, plans


def verify_store(
    database: DatabaseSettings,
    mapper: Mapper[Any],
    session_ids: Sequence[str],
    *,
    every: bool,
    workers: int = 1,
    chained: bool = True,
) -> list[Problem]:
    """Judge `session_ids` (in order) from one ordered pass over the store; `every` says they
    are all the store's sessions (nothing to filter out).

    With `workers` > 1 and a store of at least PARALLEL_MIN_EVENTS events, the key space is
    cut into as many ranges: this process replays the first, forked workers the others (where
    this system cannot fork, this process replays them all)."""
    wanted = None if every else set(session_ids)
    points = (
        split_points(database, workers, PARALLEL_MIN_EVENTS) if workers > 1 and can_fork() else []
    )
    bounds = list(zip(["", *points], [*points, None], strict=True))
    if not points:
        found = [replay_range(database, mapper, wanted, "", None, chained)]
    else:
        starts = store_goal_starts(database, mapper)  # (once: the workers are forked with it)
        found = _replay_forked(database, mapper, wanted, bounds, chained, starts)
    sessions: dict[str, Replayed] = {}
    plans: dict[str, Replayed] = {}
    for found_sessions, found_plans in found:
        sessions.update(found_sessions)
        plans.update(found_plans)
    problems: list[Problem] = []
    for session_id in session_ids:
        session = sessions.get(session_id, NOTHING)
        problems += judge(session_id, session, plans.get(session_id, NOTHING))
    return problems


Ranges = tuple[dict[str, Replayed], dict[str, Replayed]]


def _replay_forked(
    database: DatabaseSettings,
    mapper: Mapper[Any],
    wanted: set[str] | None,
    bounds: list[tuple[str, str | None]],
    chained: bool,
    starts: GoalStarts,
) -> list[Ranges]:
    """The first range replayed here, the others by forked workers (each opens its own
    connection). If a worker fails, every range is replayed here instead, where the error, if
    it lasts, is raised as itself."""
    workers = ForkedWorkers(
        len(bounds) - 1,
        lambda: None,
        lambda _, bound: replay_range(
            database, mapper, wanted, bound[0], bound[1], chained, starts
        ),
    )
    try:
        workers.send(bounds[1:])
        here = replay_range(database, mapper, wanted, bounds[0][0], bounds[0][1], chained, starts)
        return [here, *workers.receive()]
    except WorkerFailed:
        pass
    finally:
        workers.close()
    return [
        replay_range(database, mapper, wanted, lower, upper, chained, starts)
        for lower, upper in bounds
    ]


def _originator(stored: Row) -> str:
    return str(stored.originator_id)
