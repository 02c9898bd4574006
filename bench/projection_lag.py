"""Commit-to-follower lag: how long after `submit()` returns another process's follower has the
commit in its views, against baselines measured in the same run.

    python bench/projection_lag.py [--database postgres|sqlite|URL] [--commits 400]
        [--rate 100] [--rounds 5] [--output bench/results/projection_lag.json]

Writers store a decision's view rows in the events' own transaction, so a reader sees a
commit as soon as it is committed; what a live client waits for is the wake-up. The follower
here is what the live feed does: a second service on the same database (its own
connections), woken by LISTEN/NOTIFY on PostgreSQL or the file's data_version on SQLite,
then reading the feed after its position. Lag = when the follower has the commit's store
position minus when `submit()` returned.

Baselines, each round, in a fresh store: `raw_commit` is one raw INSERT+COMMIT of a 500-byte
row (psycopg or sqlite3; its latency, the floor of any durable write); on PostgreSQL,
`raw_notify` is the lag of a bare listener woken by an INSERT+NOTIFY+COMMIT (the floor of any
NOTIFY-driven follower). The writer commits `--commits` plans at `--rate` per second.
Reported: per-round p50/p99 in ms, medians over rounds, and lag / baseline ratios.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: I001  (puts the repository on sys.path first)
from planledger.service import open_planledger
from planledger.storage.views import open_store

STEPS = 5
ROW = b"x" * 500


def payload(step: int) -> dict[str, Any]:
    """Step `step` of a 5-step plan in progress, the ones before completed."""
    rows = []
    for n in range(STEPS):
        status = "completed" if n < step else "in_progress" if n == step else "pending"
        rows.append({"id": f"s{n}", "title": f"Step {n} of the plan", "status": status})
    return {"title": "Benchmark plan", "steps": rows}


def paced(count: int, rate: float, act: Callable[[int], None]) -> None:
    """`act(i)` for i in range(count), started `rate` times per second."""
    next_at = time.perf_counter()
    for index in range(count):
        next_at += 1.0 / rate
        delay = next_at - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        act(index)


def raw_commit(url: str, count: int, rate: float) -> list[float]:
    """Latency (s) of one raw INSERT+COMMIT."""
    latencies: list[float] = []
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        conn.execute("CREATE TABLE IF NOT EXISTS bench_raw (id INTEGER PRIMARY KEY, v BLOB)")

        def insert(_: int) -> None:
            started = time.perf_counter()
            conn.execute("BEGIN")
            conn.execute("INSERT INTO bench_raw (v) VALUES (?)", (ROW,))
            conn.execute("COMMIT")
            latencies.append(time.perf_counter() - started)

        paced(count, rate, insert)
        conn.close()
        return latencies
    import psycopg

    base, schema = url.split("?schema=")
    with psycopg.connect(base, options=f"-c search_path={schema}") as pg:
        pg.execute("CREATE TABLE IF NOT EXISTS bench_raw (id BIGSERIAL PRIMARY KEY, v BYTEA)")
        pg.commit()

        def insert_pg(_: int) -> None:
            started = time.perf_counter()
            pg.execute("INSERT INTO bench_raw (v) VALUES (%s)", (ROW,), prepare=True)
            pg.commit()
            latencies.append(time.perf_counter() - started)

        paced(count, rate, insert_pg)
    return latencies


def raw_notify(url: str, count: int, rate: float) -> list[float]:
    """Lag (s) of a bare LISTEN connection behind an INSERT+NOTIFY+COMMIT."""
    import psycopg

    base, schema = url.split("?schema=")
    channel = f"bench_{schema}"
    seen: dict[int, float] = {}
    with (
        psycopg.connect(base, autocommit=True) as listener,
        psycopg.connect(base, options=f"-c search_path={schema}") as writer,
    ):
        listener.execute(f"LISTEN {channel}")
        writer.execute("CREATE TABLE IF NOT EXISTS bench_raw (id BIGSERIAL PRIMARY KEY, v BYTEA)")
        writer.commit()

        def listen() -> None:
            for note in listener.notifies(timeout=5 + count / rate):
                seen[int(note.payload)] = time.perf_counter()
                if len(seen) == count:
                    return

        thread = threading.Thread(target=listen)
        thread.start()
        sent: dict[int, float] = {}

        def insert(index: int) -> None:
            writer.execute("INSERT INTO bench_raw (v) VALUES (%s)", (ROW,), prepare=True)
            writer.execute(f"NOTIFY {channel}, '{index}'")
            writer.commit()
            sent[index] = time.perf_counter()

        paced(count, rate, insert)
        thread.join()
    return [max(0.0, seen[i] - sent[i]) for i in sent if i in seen]


def ledger_lag(url: str, count: int, rate: float) -> list[float]:
    """Lag (s) of a second service's follower behind `submit()`."""
    writer = open_planledger(url, home=None)
    follower = open_planledger(url, home=None)
    wake = open_store(follower.database)
    seen: list[tuple[int, float]] = []
    stop = threading.Event()

    def follow() -> None:
        last = follower.views.max_notification_id()
        wake.wait_for_events(0)  # listening before the first commit
        while not stop.is_set():
            wake.wait_for_events(0.2)
            for event in follower.events_after(last):
                seen.append((event.store_position, time.perf_counter()))
                last = event.store_position

    thread = threading.Thread(target=follow)
    thread.start()
    time.sleep(0.3)
    committed: list[tuple[int, float]] = []
    sessions = [f"lag-{n}" for n in range(count // STEPS + 1)]

    def submit(index: int) -> None:
        session_id = sessions[index // STEPS]
        if index % STEPS == 0:
            writer.open_session(session_id)
        decision = writer.submit(session_id, payload(index % STEPS))
        assert decision.status == "committed" and decision.store_position is not None
        committed.append((decision.store_position, time.perf_counter()))

    try:
        paced(count, rate, submit)
        deadline = time.monotonic() + 10
        while (not seen or seen[-1][0] < committed[-1][0]) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        stop.set()
        thread.join(5)
        wake.close()
        follower.close()
        writer.close()
    lags: list[float] = []
    cursor = 0
    for position, at in committed:
        while cursor < len(seen) and seen[cursor][0] < position:
            cursor += 1
        if cursor == len(seen):
            raise RuntimeError(f"store position {position} never reached the follower")
        lags.append(max(0.0, seen[cursor][1] - at))
    return lags


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(1000 * common.percentile(values, 0.5), 3),
        "p99_ms": round(1000 * common.percentile(values, 0.99), 3),
    }


def main(argv: list[str] | None = None) -> None:
    p = common.parser("projection_lag", __doc__ or "")
    p.add_argument("--commits", type=int, default=400)
    p.add_argument("--rate", type=float, default=100.0, help="commits per second")
    args = common.parse(p, argv)
    measures: dict[str, Callable[[str, int, float], list[float]]] = {
        "raw_commit": raw_commit,
        "ledger_lag": ledger_lag,
    }
    if common.kind_of(args.database) == "postgres":
        measures["raw_notify"] = raw_notify
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in measures}
    names = list(measures)
    for r in range(args.rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            with common.fresh_store(args.database, "bench_lag") as url:
                rounds[name].append(summary(measures[name](url, args.commits, args.rate)))
        line = "  ".join(
            f"{name} p50 {rounds[name][-1]['p50_ms']:.2f} p99 {rounds[name][-1]['p99_ms']:.2f}"
            for name in names
        )
        print(f"round {r + 1}/{args.rounds}: {line} (ms)", flush=True)
    medians = {
        name: {key: common.median([x[key] for x in values]) for key in ("p50_ms", "p99_ms")}
        for name, values in rounds.items()
    }
    lag = medians["ledger_lag"]
    ratios = {
        f"ledger_lag_p50_vs_{name}_p50": common.ratio(lag["p50_ms"], medians[name]["p50_ms"])
        for name in names
        if name != "ledger_lag"
    }
    print(f"\n{'measure':<12} {'p50 ms':>8} {'p99 ms':>8}")
    for name, m in medians.items():
        print(f"{name:<12} {m['p50_ms']:>8.3f} {m['p99_ms']:>8.3f}")
    for key, value in ratios.items():
        print(f"{key}: {value}")
    config = {"commits": args.commits, "rate_per_s": args.rate}
    document = common.result(args, config=config, rounds=rounds, medians=medians, ratios=ratios)
    common.write_result(args.output, document)


if __name__ == "__main__":
    main()
