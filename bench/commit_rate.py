"""Commit rate of the plan ledger on PostgreSQL, against baselines measured in the same run.

    python bench/commit_rate.py [--rounds N] [--seconds S] [--out bench/results/commit_rate.json]
                                [--experiments | --variants a,b,c,...] [--database URL]

Single client, one connection at a time. Every variant gets its own fresh schema (created at
the start, dropped at the end). Variants are interleaved: each round runs every variant for S
seconds, in a rotated order, and the reported figure is the median over rounds of
commits / (time spent inside the measured call).

  a  raw psycopg 3 (binary): one single-row INSERT (bigserial id, 300-byte bytea) + COMMIT.
  b  plain `eventsourcing`: Application.save() of a new Aggregate (one Created event).
  c  the ledger: Ledger.submit() of a strict-form (plan_update) proposal that commits.
  d  no database: the same plan JSON written atomically to plan.json (write, fsync, rename,
     fsync of the directory), the baseline the ledger replaces.

Workload of (c): strict form on many sessions, rotating. Each session is opened outside the
timed calls and then receives the 6 revisions of one 5-step plan: step 1 in_progress, then
step k completed and step k+1 in_progress, ..., then every step completed; each payload
carries `expected_revision` (so the revision rule is exercised) and is ~515 bytes of JSON.
Every decision must come back "committed" or the run stops.

`--experiments` adds bench-only variants of (c) (library env settings, a custom recorder
through APPLICATION_RECORDER_TOPIC, or Ledger subclasses; nothing in planledger/ is changed):

  c_cache          AGGREGATE_CACHE_MAXSIZE=1000 (library repository cache, fast-forward)
  c_dbfn           POSTGRES_ENABLE_DB_FUNCTIONS=y (library insert function; it has NO table lock)
  c_1trip          the stock locked insert sent in one pipeline sync instead of several
  c_nosnap         no snapshot store, so no snapshot SELECT per load
  c_fastwrite      c_1trip with the rows as plain binary parameters (no composite array)
  c_lockfn         one autocommit call of a plpgsql function that LOCKs, NOTIFYs and INSERTs
  c_writecache     a Ledger subclass that keeps the plan it saved for the next submit
  c_fast_both, c_lockfn_wcache   the write-side cache with c_fastwrite / c_lockfn
  c_codex*         ONE long session in the Codex form (snapshots, growing history), alone and
                   with the cache / 20-event snapshots / c_lockfn_wcache's changes

A variant's (c) rate is only counted for decisions that came back "committed".
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
from eventsourcing.application import Application  # noqa: E402
from eventsourcing.domain import Aggregate as LibAggregate  # noqa: E402
from eventsourcing.persistence import StoredEvent  # noqa: E402
from eventsourcing.postgres import PostgresApplicationRecorder  # noqa: E402
from eventsourcing.utils import Environment, EnvType, get_topic  # noqa: E402
from psycopg import sql  # noqa: E402
from psycopg.rows import tuple_row  # noqa: E402
from psycopg.types.numeric import Int8  # noqa: E402

from planledger.ledger import Ledger  # noqa: E402
from planledger.settings import DatabaseSettings, database_settings  # noqa: E402

DEFAULT_DATABASE = "postgresql://postgres@127.0.0.1:5432/test"
DEFAULT_OUT = ROOT / "bench" / "results" / "commit_rate.json"
PAYLOAD_BYTES = 300
WARMUP_SECONDS = 0.5

# -- workloads of the ledger ----------------------------------------------------------------

PLAN_TITLE = "Fix the flaky retry test in the HTTP client"
STEP_TITLES = (
    "Reproduce the failing retry test locally",
    "Find where the backoff timer is reset",
    "Write a regression test for the reset",
    "Fix the reset and keep the jitter",
    "Run the full suite and update the changelog",
)
REVISIONS_PER_SESSION = len(STEP_TITLES) + 1


def strict_payload(revision: int) -> dict[str, Any]:
    """Revision `revision` (0-based) of the 5-step plan: steps before it completed, it active."""
    steps = []
    for index, title in enumerate(STEP_TITLES):
        if index < revision:
            status = "completed"
        elif index == revision:
            status = "in_progress"
        else:
            status = "pending"
        steps.append({"id": f"step-{index + 1}", "title": title, "status": status})
    return {"title": PLAN_TITLE, "expected_revision": revision, "steps": steps}


STRICT_SCRIPT = [strict_payload(r) for r in range(REVISIONS_PER_SESSION)]


def codex_payload(n: int) -> dict[str, Any]:
    """update_plan form: the same 5 steps, the n-th (mod 5) in progress, the others pending."""
    active = n % len(STEP_TITLES)
    return {
        "plan": [
            {"step": title, "status": "in_progress" if i == active else "pending"}
            for i, title in enumerate(STEP_TITLES)
        ]
    }


def json_size(payload: Any) -> int:
    return len(json.dumps(payload, separators=(",", ":")).encode())


# -- bench-only variations of the ledger ----------------------------------------------------


class OneTripRecorder(PostgresApplicationRecorder):
    """The library's locked insert, sent as ONE pipeline sync: BEGIN; SET LOCAL lock_timeout;
    LOCK TABLE ... IN EXCLUSIVE MODE; NOTIFY; INSERT ... RETURNING; COMMIT.

    Same statements and the same table lock as the stock recorder (which syncs after BEGIN,
    after the INSERT and again for COMMIT), so the same ordering guarantee for readers.
    """

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        if not stored_events:
            return []
        rows = [
            self.construct_pg_stored_event(
                e.originator_id, e.originator_version, e.topic, e.state
            )
            for e in stored_events
        ]
        notify = sql.SQL("NOTIFY {0}").format(sql.Identifier(self.channel_name))
        error: Exception | None = None
        ids: list[int] = []
        with self.datastore.get_connection() as conn:
            with conn.cursor() as head, conn.cursor() as curs:
                try:
                    # Leaving the pipeline block sends the one Sync and reads every result.
                    with conn.pipeline():
                        head.execute("BEGIN", prepare=True)
                        for statement in self.lock_table_statements:
                            head.execute(statement, prepare=True)
                        head.execute(notify, prepare=True)
                        curs.execute(self.insert_events_statement, (rows,), prepare=True)
                        head.execute("COMMIT", prepare=True)
                    ids = [row["notification_id"] for row in curs.fetchall()]
                except Exception as e:
                    error = e
            if error is not None:
                if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    conn.rollback()
                raise error
        return ids


class FastWriteRecorder(OneTripRecorder):
    """One pipeline sync like OneTripRecorder, and the rows sent as plain parameters
    (VALUES (...), (...) with the state as a binary bytea) instead of a text-encoded array of
    composite values that the server parses and unnests. Same lock, same NOTIFY."""

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        if not stored_events:
            return []
        statements = self.__dict__.setdefault("_values_statements", {})
        n = len(stored_events)
        insert = statements.get(n)
        if insert is None:
            insert = statements[n] = sql.SQL(
                "INSERT INTO {table} (originator_id, originator_version, topic, state) "
                "VALUES {rows} RETURNING notification_id"
            ).format(
                table=sql.Identifier(self.datastore.schema, self.events_table_name),
                rows=sql.SQL(", ").join([sql.SQL("(%s, %s::bigint, %s, %b)")] * n),
            )
        params: list[Any] = []
        for e in stored_events:
            params += (e.originator_id, e.originator_version, e.topic, e.state)
        notify = sql.SQL("NOTIFY {0}").format(sql.Identifier(self.channel_name))
        error: Exception | None = None
        ids: list[int] = []
        with self.datastore.get_connection() as conn:
            with conn.cursor() as head, conn.cursor() as curs:
                try:
                    with conn.pipeline():
                        head.execute("BEGIN", prepare=True)
                        for statement in self.lock_table_statements:
                            head.execute(statement, prepare=True)
                        head.execute(notify, prepare=True)
                        curs.execute(insert, params, prepare=True)
                        head.execute("COMMIT", prepare=True)
                    ids = [row["notification_id"] for row in curs.fetchall()]
                except Exception as e:
                    error = e
            if error is not None:
                if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    conn.rollback()
                raise error
        return ids


class LockedFunctionRecorder(PostgresApplicationRecorder):
    """One autocommit statement per save: a plpgsql function that takes the same EXCLUSIVE
    table lock as the stock recorder, NOTIFYs and inserts (unlike the library's own
    POSTGRES_ENABLE_DB_FUNCTIONS function, which has no LOCK TABLE). The rows go as four
    binary arrays (ids, versions, topics, states): no composite type to format or parse."""

    # For attribution in profile_submit.py only: the ledger needs both (ordering, runners).
    take_lock = True
    notify = True

    def create_table(self) -> None:
        super().create_table()
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(self._function_ddl(), prepare=False)

    def _function_name(self) -> sql.Identifier:
        suffix = ("" if self.take_lock else "_nolock") + ("" if self.notify else "_nonotify")
        name = f"bench_insert_locked_{self.events_table_name}{suffix}"
        return sql.Identifier(self.datastore.schema, name)

    def _function_ddl(self) -> sql.Composed:
        return sql.SQL(
            "CREATE OR REPLACE FUNCTION {fn}(ids {id_type}[], versions bigint[], "
            "topics text[], states bytea[]) RETURNS SETOF bigint LANGUAGE plpgsql AS $$ "
            "BEGIN "
            "SET LOCAL lock_timeout = '{timeout}s'; "
            "{lock}{notify}"
            "RETURN QUERY INSERT INTO {table} (originator_id, originator_version, topic, state) "
            "SELECT * FROM unnest(ids, versions, topics, states) RETURNING notification_id; "
            "END $$"
        ).format(
            fn=self._function_name(),
            id_type=sql.SQL(self.datastore.originator_id_type),
            timeout=sql.SQL(str(int(self.datastore.lock_timeout))),
            table=sql.Identifier(self.datastore.schema, self.events_table_name),
            lock=sql.SQL("LOCK TABLE {} IN EXCLUSIVE MODE; " if self.take_lock else "").format(
                sql.Identifier(self.datastore.schema, self.events_table_name)),
            notify=sql.SQL("NOTIFY {}; " if self.notify else "").format(
                sql.Identifier(self.channel_name)),
        )

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        if not stored_events:
            return []
        call = self.__dict__.get("_call")
        if call is None:
            call = self.__dict__["_call"] = sql.SQL(
                "SELECT * FROM {fn}(%b::{id_type}[], %b::bigint[], %b::text[], %b::bytea[])"
            ).format(fn=self._function_name(),
                     id_type=sql.SQL(self.datastore.originator_id_type))
        params = (
            [e.originator_id for e in stored_events],
            [Int8(e.originator_version) for e in stored_events],
            [e.topic for e in stored_events],
            [e.state for e in stored_events],
        )
        with self.datastore.get_connection() as conn, conn.cursor(row_factory=tuple_row) as curs:
            curs.execute(call, params, prepare=True)
            return [row[0] for row in curs.fetchall()]


class WriteCacheLedger(Ledger):
    """A write-side cache of Plan aggregates for submit(): no read before a decision.

    A cached plan is taken OUT of the cache for a command (so concurrent threads never share
    it), and put back only after its events were saved, when it is exactly the stored state.
    A stale plan (another process wrote first) cannot commit: its next version collides on the
    (originator_id, originator_version) key, save raises IntegrityError, and the ledger's own
    retry loop then calls _plan() again, which finds nothing cached and reads the database.
    Queries (plan(), history(), verify) do not use it.
    """

    name = "planledger"
    WRITE_CACHE_SIZE = 1000

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._write_cache: dict[str, Any] = {}
        self._command_session: str | None = None

    def _propose(self, session_id: str, *args: Any, **kwargs: Any) -> Any:
        self._command_session = session_id
        try:
            return super()._propose(session_id, *args, **kwargs)
        finally:
            self._command_session = None

    def _plan(self, session_id: str) -> Any:
        if self._command_session == session_id:
            plan = self._write_cache.pop(session_id, None)
            if plan is not None:
                return plan
        return super()._plan(session_id)

    def _save_decision(self, plan: Any, proposal_id: str, outcome: Any) -> Any:
        decision = super()._save_decision(plan, proposal_id, outcome)
        if decision is not None:
            if len(self._write_cache) >= self.WRITE_CACHE_SIZE:
                self._write_cache.pop(next(iter(self._write_cache)), None)
            self._write_cache[plan.session_id] = plan
        return decision


class NoSnapshotStoreLedger(Ledger):
    """The ledger with snapshotting off: repository.get() reads only the events table."""

    name = "planledger"
    snapshotting_intervals = {}  # noqa: RUF012

    def construct_env(self, name: str, env: EnvType | None = None) -> Environment:
        environment = super().construct_env(name, env)
        environment["IS_SNAPSHOTTING_ENABLED"] = "n"
        return environment


def snapshot_interval_ledger(interval: int) -> type[Ledger]:
    from domain.plan import Plan
    from domain.session import Session

    class IntervalLedger(Ledger):
        name = "planledger"
        snapshotting_intervals = {Plan: interval, Session: interval}  # noqa: RUF012

    IntervalLedger.__name__ = f"Ledger_snapshot_every_{interval}"
    return IntervalLedger


ONE_TRIP = {"APPLICATION_RECORDER_TOPIC": get_topic(OneTripRecorder)}
FAST_WRITE = {"APPLICATION_RECORDER_TOPIC": get_topic(FastWriteRecorder)}
LOCKED_FN = {"APPLICATION_RECORDER_TOPIC": get_topic(LockedFunctionRecorder)}
CACHE = {"AGGREGATE_CACHE_MAXSIZE": "1000"}
DB_FUNCTIONS = {"POSTGRES_ENABLE_DB_FUNCTIONS": "y"}


# -- variants -------------------------------------------------------------------------------


@dataclass
class RoundResult:
    commits: int
    seconds: float
    latencies: list[float] = field(repr=False)

    @property
    def rate(self) -> float:
        return self.commits / self.seconds if self.seconds else 0.0

    def as_json(self) -> dict[str, Any]:
        lat = sorted(self.latencies)

        def pct(p: float) -> float:
            return round(1000 * lat[min(len(lat) - 1, int(p * len(lat)))], 4) if lat else 0.0

        return {
            "commits": self.commits,
            "timed_seconds": round(self.seconds, 4),
            "rate_per_s": round(self.rate, 2),
            "latency_ms": {"p50": pct(0.50), "p90": pct(0.90), "p99": pct(0.99),
                           "max": pct(1.0)},
        }


class Variant:
    key = ""
    label = ""
    description = ""

    def __init__(self, database: str, schema: str) -> None:
        self.database = database
        self.schema = schema

    def setup(self) -> None: ...

    def close(self) -> None: ...

    def operations(self) -> Iterator[Callable[[], None]]:
        """Yields one timed operation (one committed transaction) at a time.

        Untimed preparation (e.g. opening the next session) happens inside the generator,
        between the yields, so it is outside the measured call.
        """
        raise NotImplementedError

    def run(self, seconds: float) -> RoundResult:
        latencies: list[float] = []
        clock = time.perf_counter
        ops = self._ops
        end = clock() + seconds
        while clock() < end:
            op = next(ops)
            start = clock()
            op()
            latencies.append(clock() - start)
        return RoundResult(len(latencies), sum(latencies), latencies)

    def start(self) -> None:
        self.setup()
        self._ops = self.operations()

    def info(self) -> dict[str, Any]:
        return {}


def conninfo(database: str) -> str:
    return database.split("?", 1)[0]


class RawPsycopg(Variant):
    key = "a"
    label = "raw psycopg INSERT+COMMIT"
    description = (
        "psycopg 3 (binary), autocommit off: INSERT INTO t (payload) VALUES (%s) with a "
        f"{PAYLOAD_BYTES}-byte bytea, prepared, binary parameters, then conn.commit()"
    )

    def setup(self) -> None:
        self.conn = psycopg.connect(conninfo(self.database))
        table = sql.Identifier(self.schema, "t")
        self.conn.execute(
            sql.SQL("CREATE TABLE {} (id bigserial PRIMARY KEY, payload bytea NOT NULL)").format(
                table
            )
        )
        self.conn.commit()
        self.insert = sql.SQL("INSERT INTO {} (payload) VALUES (%b)").format(table)

    def operations(self) -> Iterator[Callable[[], None]]:
        conn, insert = self.conn, self.insert
        cur = conn.cursor(binary=True)

        def op() -> None:
            cur.execute(insert, (os.urandom(PAYLOAD_BYTES),), prepare=True)
            conn.commit()

        while True:
            yield op

    def close(self) -> None:
        self.conn.close()

    def info(self) -> dict[str, Any]:
        return {"payload_bytes": PAYLOAD_BYTES}


class BenchNote(LibAggregate):
    """A library aggregate with one ~300-character field, saved once (its Created event)."""

    def __init__(self, text: str) -> None:
        self.text = text


class PlainApplication(Application[Any]):
    name = "plainbench"


def library_env(database: str, schema: str) -> dict[str, str]:
    settings = database_settings(database)
    env = dict(settings.env)
    return {
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        "POSTGRES_DBNAME": env["POSTGRES_DBNAME"],
        "POSTGRES_HOST": env["POSTGRES_HOST"],
        "POSTGRES_PORT": env["POSTGRES_PORT"],
        "POSTGRES_USER": env["POSTGRES_USER"],
        "POSTGRES_PASSWORD": env["POSTGRES_PASSWORD"],
        "POSTGRES_SCHEMA": schema,
        "CREATE_TABLE": "y",
    }


class PlainEventsourcing(Variant):
    key = "b"
    label = "eventsourcing save(new Aggregate)"
    description = (
        "eventsourcing.application.Application on eventsourcing.postgres (POSTGRES_* env, "
        "POSTGRES_PASSWORD='', POSTGRES_SCHEMA): save() of a new Aggregate with one "
        f"{PAYLOAD_BYTES}-char field, i.e. one Created event per transaction"
    )

    def setup(self) -> None:
        self.app = PlainApplication(env=library_env(self.database, self.schema))

    def operations(self) -> Iterator[Callable[[], None]]:
        app = self.app
        text = "x" * PAYLOAD_BYTES

        def op() -> None:
            app.save(BenchNote(text))

        while True:
            yield op

    def close(self) -> None:
        self.app.close()


class AtomicJsonFile(Variant):
    key = "d"
    label = "atomic plan.json write (fsync+rename)"
    description = (
        "the no-database baseline: the same strict plan JSON written to plan.json.tmp, "
        "fsync, os.replace onto plan.json, fsync of the directory (a temp dir on local disk)"
    )

    def setup(self) -> None:
        import tempfile

        self.dir = Path(tempfile.mkdtemp(prefix="bench_plan_json_"))

    def operations(self) -> Iterator[Callable[[], None]]:
        target, tmp = self.dir / "plan.json", self.dir / "plan.json.tmp"
        dir_fd = os.open(self.dir, os.O_RDONLY)
        self._dir_fd = dir_fd
        n = 0
        while True:
            data = json.dumps({"revision": n, **STRICT_SCRIPT[n % len(STRICT_SCRIPT)]}).encode()
            n += 1

            def op(data: bytes = data) -> None:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                try:
                    os.write(fd, data)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(tmp, target)
                os.fsync(dir_fd)

            yield op

    def close(self) -> None:
        import shutil

        with contextlib.suppress(Exception):
            os.close(self._dir_fd)
        shutil.rmtree(self.dir, ignore_errors=True)

    def info(self) -> dict[str, Any]:
        return {"payload_json_bytes": json_size({"revision": 0, **STRICT_SCRIPT[0]})}


class LedgerVariant(Variant):
    key = "c"
    label = "ledger submit (strict, rotating sessions)"
    description = (
        "planledger.ledger.Ledger(url?schema=...): open_session (untimed) then 6 x submit() of "
        "a 5-step strict-form plan advancing one step per revision, expected_revision set; "
        "then the next session"
    )
    ledger_class: type[Ledger] = Ledger
    extra_env: dict[str, str] = {}  # noqa: RUF012

    def setup(self) -> None:
        url = f"{conninfo(self.database)}?schema={self.schema}"
        base = database_settings(url)
        self.app = self.ledger_class(DatabaseSettings(url, {**base.env, **self.extra_env}))
        self.sessions = 0
        self.submits = 0

    def check(self, decision: Any) -> None:
        if decision.status != "committed":
            raise SystemExit(f"{self.key}: a submit was not committed: {decision!r}")
        self.submits += 1

    def operations(self) -> Iterator[Callable[[], None]]:
        app = self.app
        prefix = f"b{uuid.uuid4().hex[:8]}"
        while True:
            session_id = f"{prefix}-{self.sessions}"
            app.open_session(session_id)
            self.sessions += 1
            for payload in STRICT_SCRIPT:

                def op(session_id: str = session_id, payload: dict[str, Any] = payload) -> None:
                    self.check(app.submit(session_id, payload))

                yield op

    def close(self) -> None:
        self.app.close()

    def info(self) -> dict[str, Any]:
        return {
            "form": "strict (plan_update)",
            "payload_json_bytes": [json_size(p) for p in STRICT_SCRIPT],
            "revisions_per_session": REVISIONS_PER_SESSION,
            "sessions_used": self.sessions,
            "submits_total": self.submits,
            "ledger_class": self.ledger_class.__name__,
            "extra_env": self.extra_env,
        }


class LedgerCodexVariant(LedgerVariant):
    key = "c_codex"
    label = "ledger submit (codex, ONE long session)"
    description = (
        "one session for the whole run; update_plan form {'plan': [{step, status}] x5}, the "
        "in_progress step cycling; exercises snapshots (every 100 events = 50 submits) and a "
        "history that keeps growing"
    )

    def operations(self) -> Iterator[Callable[[], None]]:
        app = self.app
        session_id = f"codex-{uuid.uuid4().hex[:8]}"
        app.open_session(session_id)
        self.sessions = 1
        n = 0
        while True:
            payload = codex_payload(n)
            n += 1

            def op(payload: dict[str, Any] = payload) -> None:
                self.check(app.submit(session_id, payload))

            yield op

    def info(self) -> dict[str, Any]:
        info = super().info()
        info.update(form="codex (update_plan)", payload_json_bytes=[json_size(codex_payload(0))],
                    revisions_per_session=None)
        return info


def ledger_variant(
    key: str,
    label: str,
    description: str,
    *,
    env: dict[str, str] | None = None,
    ledger_class: type[Ledger] = Ledger,
    base: type[LedgerVariant] = LedgerVariant,
) -> type[LedgerVariant]:
    return type(
        f"Variant_{key}",
        (base,),
        {"key": key, "label": label, "description": description,
         "extra_env": dict(env or {}), "ledger_class": ledger_class},
    )


VARIANTS: dict[str, type[Variant]] = {
    v.key: v for v in (RawPsycopg, PlainEventsourcing, LedgerVariant, AtomicJsonFile)
}
NEEDS_SCHEMA = {"d": False}
EXPERIMENTS: dict[str, type[Variant]] = {
    v.key: v
    for v in (
        ledger_variant("c_cache", "c + AGGREGATE_CACHE_MAXSIZE=1000",
                       "library repository LRU cache with fast-forward (reads only newer "
                       "events; no snapshot read)", env=CACHE),
        ledger_variant("c_dbfn", "c + POSTGRES_ENABLE_DB_FUNCTIONS=y",
                       "insert through the library's plpgsql function: one autocommit "
                       "statement, but WITHOUT the LOCK TABLE of the stock recorder",
                       env=DB_FUNCTIONS),
        ledger_variant("c_1trip", "c + one-round-trip locked insert",
                       "bench-only recorder (APPLICATION_RECORDER_TOPIC): the same BEGIN/LOCK/"
                       "NOTIFY/INSERT/COMMIT in one pipeline sync", env=ONE_TRIP),
        ledger_variant("c_nosnap", "c without snapshot store",
                       "subclass: IS_SNAPSHOTTING_ENABLED=n, so get() skips the snapshot "
                       "table read (fine for short histories only)",
                       ledger_class=NoSnapshotStoreLedger),
        ledger_variant("c_fastwrite", "c + one-trip insert, binary VALUES",
                       "bench-only recorder: one pipeline sync, rows as plain parameters "
                       "(bytea binary) instead of a text composite array; same lock",
                       env=FAST_WRITE),
        ledger_variant("c_lockfn", "c + locked insert function",
                       "bench-only recorder: one autocommit SELECT of a plpgsql function "
                       "(SET LOCAL, LOCK TABLE, NOTIFY, INSERT) with binary array params",
                       env=LOCKED_FN),
        ledger_variant("c_writecache", "c + write-side plan cache",
                       "subclass: submit() reuses the Plan it saved last (no SELECTs); a "
                       "conflict evicts it and re-reads", ledger_class=WriteCacheLedger),
        ledger_variant("c_fast_both", "c + fastwrite + write-side cache",
                       "c_fastwrite and c_writecache together", env=FAST_WRITE,
                       ledger_class=WriteCacheLedger),
        ledger_variant("c_lockfn_wcache", "c + locked function + write-side cache",
                       "c_lockfn and c_writecache together", env=LOCKED_FN,
                       ledger_class=WriteCacheLedger),
        LedgerCodexVariant,
        ledger_variant("c_codex_cache", "c_codex + AGGREGATE_CACHE_MAXSIZE=1000",
                       "long single session with the repository cache (fast-forward)",
                       env=CACHE, base=LedgerCodexVariant),
        ledger_variant("c_codex_snap20", "c_codex + snapshot every 20 events",
                       "long single session, snapshotting_intervals 20 instead of 100",
                       ledger_class=snapshot_interval_ledger(20), base=LedgerCodexVariant),
        ledger_variant("c_codex_lockfn_wcache", "c_codex + locked function + write cache",
                       "long single session, c_lockfn_wcache's two bench-only changes",
                       env=LOCKED_FN, ledger_class=WriteCacheLedger, base=LedgerCodexVariant),
    )
}
ALL_VARIANTS = {**VARIANTS, **EXPERIMENTS}


# -- schemas, machine info ------------------------------------------------------------------


def admin(database: str) -> psycopg.Connection[Any]:
    return psycopg.connect(conninfo(database), autocommit=True)


def create_schema(database: str, name: str) -> None:
    with admin(database) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))


def drop_schema(database: str, name: str) -> None:
    with admin(database) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


def version_of(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def machine_info(database: str) -> dict[str, Any]:
    cpu = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    server: dict[str, Any] = {}
    with admin(database) as conn:
        for setting in ("server_version", "synchronous_commit", "fsync", "wal_sync_method",
                        "shared_buffers", "max_connections"):
            row = conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(setting))).fetchone()
            server[setting] = row[0] if row else None
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = "
                           "'client backend'").fetchone()
        server["client_backends_at_start"] = row[0] if row else None
    return {
        "nproc": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": cpu,
        "platform": platform.platform(),
        "loadavg_at_start": list(os.getloadavg()),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "psycopg": psycopg.__version__,
        "psycopg_impl": psycopg.pq.__impl__,
        "libpq": psycopg.pq.version(),
        "psycopg_pool": version_of("psycopg-pool"),
        "eventsourcing": version_of("eventsourcing"),
        "pydantic": version_of("pydantic"),
        "postgres": server,
    }


# -- the run --------------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0


def run(args: argparse.Namespace) -> dict[str, Any]:
    keys = args.variants
    tag = f"{os.getpid()}_{uuid.uuid4().hex[:6]}"
    machine = machine_info(args.database)
    variants: list[Variant] = []
    schemas: list[str] = []
    rounds: dict[str, list[RoundResult]] = {k: [] for k in keys}
    started = dt.datetime.now(dt.UTC)
    try:
        for key in keys:
            schema = ""
            if NEEDS_SCHEMA.get(key, True):
                schema = f"bench_cr_{key}_{tag}".lower()
                create_schema(args.database, schema)
                schemas.append(schema)
            variant = ALL_VARIANTS[key](args.database, schema)
            variants.append(variant)
            variant.start()
            variant.run(WARMUP_SECONDS)
        for r in range(args.rounds):
            shift = r % len(variants)
            order = variants[shift:] + variants[:shift]
            for variant in order:
                rounds[variant.key].append(variant.run(args.seconds))
            line = "  ".join(f"{v.key}={rounds[v.key][-1].rate:8.1f}/s" for v in variants)
            print(f"round {r + 1}/{args.rounds}: {line}", flush=True)
    finally:
        for variant in variants:
            with contextlib.suppress(Exception):
                variant.close()
        for schema in schemas:
            drop_schema(args.database, schema)

    medians = {k: median([x.rate for x in rounds[k]]) for k in keys}
    base = medians.get("a") or 0.0
    ledger = medians.get("c") or 0.0
    machine["loadavg_at_end"] = list(os.getloadavg())
    return {
        "benchmark": "commit_rate",
        "command": " ".join(["python", *sys.argv]),
        "started_at": started.isoformat(timespec="seconds"),
        "config": {"rounds": args.rounds, "seconds_per_variant_per_round": args.seconds,
                   "warmup_seconds": WARMUP_SECONDS, "database": conninfo(args.database),
                   "clients": 1, "order": "rotated each round",
                   "rate": "commits / sum of per-call wall time (untimed set-up excluded)",
                   "target": "c >= 0.5 x a"},
        "machine": machine,
        "variants": {
            v.key: {
                "label": v.label,
                "description": v.description,
                "workload": v.info(),
                "rounds": [x.as_json() for x in rounds[v.key]],
                "median_rate_per_s": round(medians[v.key], 2),
                "median_latency_p50_ms": round(
                    median([x.as_json()["latency_ms"]["p50"] for x in rounds[v.key]]), 4),
                "ratio_vs_a": round(medians[v.key] / base, 4) if base else None,
                "ratio_vs_c": round(medians[v.key] / ledger, 4) if ledger else None,
            }
            for v in variants
        },
    }


def print_table(result: dict[str, Any]) -> None:
    rows = result["variants"]
    print()
    print(f"{'variant':<15} {'description':<42} {'median/s':>9} {'p50 ms':>7} {'x a':>6} "
          f"{'x c':>6}  rounds")
    for key, v in rows.items():
        per_round = " ".join(f"{x['rate_per_s']:.0f}" for x in v["rounds"])
        ratio_a = f"{v['ratio_vs_a']:.3f}" if v["ratio_vs_a"] is not None else "-"
        ratio_c = f"{v['ratio_vs_c']:.2f}" if v["ratio_vs_c"] is not None else "-"
        print(f"{key:<15} {v['label'][:42]:<42} {v['median_rate_per_s']:>9.1f} "
              f"{v['median_latency_p50_ms']:>7.3f} {ratio_a:>6} {ratio_c:>6}  {per_round}")
    if "c" in rows and rows["c"]["ratio_vs_a"] is not None:
        ok = rows["c"]["ratio_vs_a"] >= 0.5
        print(f"\ntarget c >= 0.5 x a: {'met' if ok else 'NOT met'} "
              f"({rows['c']['ratio_vs_a']:.3f})")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=None,
                        help="seconds per variant per round (default: ~60 s in total)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--database", default=os.environ.get("BENCH_DATABASE_URL",
                                                             DEFAULT_DATABASE))
    parser.add_argument("--variants", default="a,b,c,d",
                        help=f"comma list from: {', '.join(ALL_VARIANTS)}")
    parser.add_argument("--experiments", action="store_true",
                        help="run a, b, c, d and every experimental variant of c")
    args = parser.parse_args(argv)
    keys = list(ALL_VARIANTS) if args.experiments else [
        k.strip() for k in args.variants.split(",") if k.strip()
    ]
    unknown = [k for k in keys if k not in ALL_VARIANTS]
    if unknown:
        parser.error(f"unknown variants {unknown}; choose from {', '.join(ALL_VARIANTS)}")
    args.variants = list(dict.fromkeys(keys))
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    if args.seconds is None:
        args.seconds = max(0.5, 60.0 / (args.rounds * len(args.variants)))
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    total = args.rounds * args.seconds * len(args.variants)
    print(f"commit_rate: variants {','.join(args.variants)}; {args.rounds} rounds x "
          f"{args.seconds:g} s each (~{total:.0f} s measured)", flush=True)
    result = run(args)
    print_table(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
