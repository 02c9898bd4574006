"""Commit rate of the plan ledger on PostgreSQL, against baselines measured in the same run.

    python bench/commit_rate.py [--rounds N] [--seconds S] [--output bench/results/commit_rate.json]
                                [--variants a,b,c,c_stock,d,c_codex] [--database postgres|URL]

Single client, one connection at a time. Every variant gets its own fresh schema (created at
the start, dropped at the end). Variants are interleaved: each round runs every variant for S
seconds, in a rotated order, and the reported figure is the median over rounds of
commits / (time spent inside the measured call).

  a        raw psycopg 3 (binary): one single-row INSERT (bigserial id, 300-byte bytea) + COMMIT.
  b        plain `eventsourcing`: Application.save() of a new Aggregate (one Created event).
  c        the ledger as shipped: Ledger.submit() of a strict-form (plan_update) proposal that
           commits (storage.postgres_recorder.ViewsPostgresRecorder, write-side plan cache).
  c_stock  c with the library's stock PostgresApplicationRecorder (APPLICATION_RECORDER_TOPIC
           removed from the ledger's env), so the gain of our recorder shows in the same run.
  d        no database: the same plan JSON written atomically to plan.json (write, fsync,
           rename, fsync of the directory), the baseline the ledger replaces.
  c_codex  c on ONE long session in the Codex form (update_plan) for the whole run: snapshots
           every 100 events and a growing history; its per-round rates show whether the rate
           holds as the session grows.

Workload of (c): strict form on many sessions, rotating. Each session is opened outside the
timed calls and then receives the 6 revisions of one 5-step plan: step 1 in_progress, then
step k completed and step k+1 in_progress, ..., then every step completed; each payload
carries `expected_revision` (so the revision rule is exercised) and is ~515 bytes of JSON.
Every decision must come back "committed" or the run stops.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import psycopg
from eventsourcing.application import Application
from eventsourcing.domain import Aggregate as LibAggregate
from eventsourcing.postgres import PostgresApplicationRecorder
from eventsourcing.utils import get_topic
from psycopg import sql

from planledger.service.ledger import Ledger
from planledger.storage.postgres_recorder import ViewsPostgresRecorder
from planledger.storage.settings import DatabaseSettings, database_settings

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


# -- variants -------------------------------------------------------------------------------


@dataclass
class RoundResult:
    commits: int
    seconds: float
    latencies: list[float] = field(repr=False)
    # c_codex: the session's submit count before and after this round
    session_submits: tuple[int, int] | None = None

    @property
    def rate(self) -> float:
        return self.commits / self.seconds if self.seconds else 0.0

    def as_json(self) -> dict[str, Any]:
        def pct(p: float) -> float:
            return round(1000 * common.percentile(self.latencies, p), 4)

        result: dict[str, Any] = {
            "commits": self.commits,
            "timed_seconds": round(self.seconds, 4),
            "rate_per_s": round(self.rate, 2),
            "latency_ms": {"p50": pct(0.50), "p90": pct(0.90), "p99": pct(0.99), "max": pct(1.0)},
        }
        if self.session_submits is not None:
            result["session_submits_before"], result["session_submits_after"] = self.session_submits
        return result


class Variant:
    key = ""
    label = ""
    description = ""
    needs_schema = True

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
    return common.admin_url(database)


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
    needs_schema = False
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
        "planledger.service.ledger.Ledger(url?schema=...) as shipped: open_session (untimed) then "
        "6 x submit() of a 5-step strict-form plan advancing one step per revision, "
        "expected_revision set; then the next session"
    )
    recorder_class: type[PostgresApplicationRecorder] = ViewsPostgresRecorder

    def ledger_env(self, env: dict[str, str]) -> dict[str, str]:
        return env

    def setup(self) -> None:
        url = f"{conninfo(self.database)}?schema={self.schema}"
        self.app = Ledger(DatabaseSettings(url, self.ledger_env(database_settings(url).env)))
        if type(self.app.recorder) is not self.recorder_class:
            self.app.close()
            raise SystemExit(
                f"{self.key}: expected recorder {self.recorder_class.__name__}, "
                f"got {type(self.app.recorder).__name__}"
            )
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
            "recorder": get_topic(type(self.app.recorder)),
        }


class StockRecorderLedgerVariant(LedgerVariant):
    key = "c_stock"
    label = "c with the library's stock recorder"
    description = (
        "c, but APPLICATION_RECORDER_TOPIC removed from the ledger's env, so the library's "
        "PostgresApplicationRecorder (BEGIN | LOCK, NOTIFY, INSERT of a composite array | "
        "COMMIT) writes the events"
    )
    recorder_class = PostgresApplicationRecorder

    def ledger_env(self, env: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in env.items() if k != "APPLICATION_RECORDER_TOPIC"}


class LedgerCodexVariant(LedgerVariant):
    key = "c_codex"
    label = "ledger submit (codex, ONE long session)"
    description = (
        "c on one session for the whole run; update_plan form {'plan': [{step, status}] x5}, "
        "the in_progress step cycling; exercises snapshots (every 100 events = 50 submits) "
        "and a history that keeps growing"
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

    def run(self, seconds: float) -> RoundResult:
        before = self.submits
        result = super().run(seconds)
        result.session_submits = (before, self.submits)
        return result

    def info(self) -> dict[str, Any]:
        info = super().info()
        info.update(
            form="codex (update_plan)",
            payload_json_bytes=[json_size(codex_payload(0))],
            revisions_per_session=None,
        )
        return info


VARIANTS: dict[str, type[Variant]] = {
    v.key: v
    for v in (
        RawPsycopg,
        PlainEventsourcing,
        LedgerVariant,
        StockRecorderLedgerVariant,
        AtomicJsonFile,
        LedgerCodexVariant,
    )
}


# -- the run --------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    keys = args.variants
    tag = f"{os.getpid()}_{uuid.uuid4().hex[:6]}"
    machine = common.machine_info(args.database)
    variants: list[Variant] = []
    schemas: list[str] = []
    rounds: dict[str, list[RoundResult]] = {k: [] for k in keys}
    started = dt.datetime.now(dt.UTC)
    try:
        for key in keys:
            schema = ""
            if VARIANTS[key].needs_schema:
                schema = f"bench_cr_{key}_{tag}".lower()
                common.create_schema(conninfo(args.database), schema)
                schemas.append(schema)
            variant = VARIANTS[key](args.database, schema)
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
            common.drop_schema(conninfo(args.database), schema)

    medians = {k: common.median([x.rate for x in rounds[k]]) for k in keys}
    base = medians.get("a") or 0.0
    ledger = medians.get("c") or 0.0
    machine["loadavg_at_end"] = list(os.getloadavg())
    summary: dict[str, Any] = {}
    if base and ledger:
        summary["c_vs_a"] = round(ledger / base, 4)
        summary["target_met"] = ledger / base >= 0.5
    if ledger and medians.get("c_stock"):
        summary["recorder_gain_c_vs_c_stock"] = round(ledger / medians["c_stock"], 4)
    codex = rounds.get("c_codex")
    if codex:
        first, last = codex[0], codex[-1]
        summary["c_codex_long_session"] = {
            "first_round_rate_per_s": round(first.rate, 2),
            "first_round_session_submits": first.session_submits,
            "last_round_rate_per_s": round(last.rate, 2),
            "last_round_session_submits": last.session_submits,
            "last_vs_first": round(last.rate / first.rate, 4) if first.rate else None,
        }
    return {
        "benchmark": "commit_rate",
        "command": " ".join(["python", *sys.argv]),
        "started_at": started.isoformat(timespec="seconds"),
        "config": {
            "rounds": args.rounds,
            "seconds_per_variant_per_round": args.seconds,
            "warmup_seconds": WARMUP_SECONDS,
            "database": conninfo(args.database),
            "clients": 1,
            "order": "rotated each round",
            "rate": "commits / sum of per-call wall time (untimed set-up excluded)",
            "target": "c >= 0.5 x a",
        },
        "summary": summary,
        "machine": machine,
        "variants": {
            v.key: {
                "label": v.label,
                "description": v.description,
                "workload": v.info(),
                "rounds": [x.as_json() for x in rounds[v.key]],
                "median_rate_per_s": round(medians[v.key], 2),
                "median_latency_p50_ms": round(
                    common.median([x.as_json()["latency_ms"]["p50"] for x in rounds[v.key]]), 4
                ),
                "ratio_vs_a": round(medians[v.key] / base, 4) if base else None,
                "ratio_vs_c": round(medians[v.key] / ledger, 4) if ledger else None,
            }
            for v in variants
        },
    }


def print_table(result: dict[str, Any]) -> None:
    rows = result["variants"]
    print()
    print(
        f"{'variant':<8} {'description':<42} {'median/s':>9} {'p50 ms':>7} {'x a':>6} "
        f"{'x c':>6}  rounds"
    )
    for key, v in rows.items():
        per_round = " ".join(f"{x['rate_per_s']:.0f}" for x in v["rounds"])
        ratio_a = f"{v['ratio_vs_a']:.3f}" if v["ratio_vs_a"] is not None else "-"
        ratio_c = f"{v['ratio_vs_c']:.2f}" if v["ratio_vs_c"] is not None else "-"
        print(
            f"{key:<8} {v['label'][:42]:<42} {v['median_rate_per_s']:>9.1f} "
            f"{v['median_latency_p50_ms']:>7.3f} {ratio_a:>6} {ratio_c:>6}  {per_round}"
        )
    summary = result["summary"]
    print()
    if "c_vs_a" in summary:
        met = "met" if summary["target_met"] else "NOT met"
        print(f"target c >= 0.5 x a: {met} ({summary['c_vs_a']:.3f})")
    if "recorder_gain_c_vs_c_stock" in summary:
        print(
            f"our recorder vs the stock one: c / c_stock = "
            f"{summary['recorder_gain_c_vs_c_stock']:.3f}"
        )
    codex = summary.get("c_codex_long_session")
    if codex:
        first_start, first_end = codex["first_round_session_submits"]
        last_start, last_end = codex["last_round_session_submits"]
        print(
            f"c_codex, one long session: {codex['first_round_rate_per_s']:.0f}/s in round 1 "
            f"(submits {first_start + 1}..{first_end}), {codex['last_round_rate_per_s']:.0f}/s "
            f"in the last round (submits {last_start + 1}..{last_end}); last/first = "
            f"{codex['last_vs_first']:.3f}"
        )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = common.parser("commit_rate", __doc__ or "", rounds=10)
    parser.add_argument(
        "--seconds",
        type=float,
        default=None,
        help="seconds per variant per round (default: ~60 s in total)",
    )
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help=f"comma list from: {', '.join(VARIANTS)}"
    )
    args = common.parse(parser, argv)
    if common.kind_of(args.database) != "postgres":
        parser.error("commit_rate measures PostgreSQL: --database postgres or a postgresql:// URL")
    args.database = common.admin_url(args.database)
    keys = [k.strip() for k in args.variants.split(",") if k.strip()]
    unknown = [k for k in keys if k not in VARIANTS]
    if unknown or not keys:
        parser.error(f"unknown variants {unknown}; choose from {', '.join(VARIANTS)}")
    args.variants = list(dict.fromkeys(keys))
    if args.seconds is None:
        args.seconds = max(0.5, 60.0 / (args.rounds * len(args.variants)))
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    total = args.rounds * args.seconds * len(args.variants)
    print(
        f"commit_rate: variants {','.join(args.variants)}; {args.rounds} rounds x "
        f"{args.seconds:g} s each (~{total:.0f} s measured)",
        flush=True,
    )
    result = run(args)
    print_table(result)
    common.write_result(args.output, result)


if __name__ == "__main__":
    main()
