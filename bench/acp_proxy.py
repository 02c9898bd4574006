"""The ACP proxy's added latency, beside a direct connection to the same agent in the same run.

    python bench/acp_proxy.py [--rounds 5] [--relay 500] [--plans 100] [--database URL]
                              [--out bench/results/acp_proxy.json]

Two editor connections (the SDK's client side) run side by side, each to its own process of the
scripted SDK agent of the tests (`tests/e2e/acp_agent.py`): one directly, one through
`planledger acp -- AGENT`. Rounds are interleaved (the side that goes first alternates).

- relay: an extension request `_scripted/echo` and its response, timed at the editor: two
  messages relayed unchanged by the proxy per round trip. Added latency per relayed message is
  estimated as (proxy - direct) / 2 at p50 and at p99.
- plan: a prompt whose turn sends one plan update before its answer: through the proxy, the
  update is recorded in the ledger (a commit on the database, SQLite in a temporary home by
  default) and re-rendered from the view before it is forwarded.

Per round: p50 and p99 of each side; reported: medians over rounds, p99 also over every sample,
and the ratios proxy / direct. JSON is written to --out.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.acp_editor import (  # noqa: E402
    connect,
    initialize,
    planledger_env,
    prompt,
    scripted_agent_command,
)

PAD = "x" * 200


def planledger() -> str:
    found = Path(sys.executable).parent / "planledger"
    return str(found) if found.exists() else (shutil.which("planledger") or "planledger")


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


async def timed(count: int, call: Callable[[int], Awaitable[Any]]) -> list[float]:
    samples = []
    for i in range(count):
        started = time.perf_counter()
        await call(i)
        samples.append((time.perf_counter() - started) * 1e6)
    return samples


async def measure(args: argparse.Namespace, home: Path, database: str) -> dict[str, Any]:
    env = planledger_env(home, database)
    agent = scripted_agent_command()
    sides = {
        "direct": connect(*agent, env=env),
        "proxy": connect(planledger(), "acp", "--", *agent, env=env),
    }
    conns: dict[str, Any] = {}
    sessions: dict[str, str] = {}
    samples: dict[str, dict[str, list[list[float]]]] = {
        name: {"relay": [], "plan": []} for name in sides
    }
    entered = []
    try:
        for name, context in sides.items():
            conn, _, _ = await context.__aenter__()
            entered.append(context)
            await initialize(conn)
            conns[name] = conn
            sessions[name] = (await conn.new_session(cwd=str(ROOT))).session_id
            await timed(50, lambda i, c=conn: c.ext_method("scripted/echo", {"n": i}))  # warm up
            await timed(5, lambda i, c=conn, s=sessions[name]: prompt(c, s, "plan"))
        for round_number in range(args.rounds):
            order = list(sides) if round_number % 2 == 0 else list(reversed(sides))
            for name in order:
                conn, session = conns[name], sessions[name]
                samples[name]["relay"].append(
                    await timed(
                        args.relay,
                        lambda i, c=conn: c.ext_method("scripted/echo", {"pad": PAD, "n": i}),
                    )
                )
                samples[name]["plan"].append(
                    await timed(args.plans, lambda i, c=conn, s=session: prompt(c, s, "plan"))
                )
    finally:
        for context in reversed(entered):
            await context.__aexit__(None, None, None)
    return summarise(samples)


def summarise(samples: dict[str, dict[str, list[list[float]]]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for kind in ("relay", "plan"):
        figures: dict[str, Any] = {}
        for side in ("direct", "proxy"):
            rounds = samples[side][kind]
            pooled = [s for r in rounds for s in r]
            figures[side] = {
                "p50_us": round(statistics.median(percentile(r, 0.5) for r in rounds), 1),
                "p99_us": round(statistics.median(percentile(r, 0.99) for r in rounds), 1),
                "p99_pooled_us": round(percentile(pooled, 0.99), 1),
                "samples": len(pooled),
            }
        direct, proxy = figures["direct"], figures["proxy"]
        figures["ratio_p50"] = round(proxy["p50_us"] / direct["p50_us"], 2)
        figures["ratio_p99"] = round(proxy["p99_us"] / direct["p99_us"], 2)
        per = 2 if kind == "relay" else 1
        figures["added_per_message_p50_us" if per == 2 else "added_p50_us"] = round(
            (proxy["p50_us"] - direct["p50_us"]) / per, 1
        )
        figures["added_per_message_p99_us" if per == 2 else "added_p99_us"] = round(
            (proxy["p99_us"] - direct["p99_us"]) / per, 1
        )
        result[kind] = figures
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--relay", type=int, default=500, help="echo round trips per round")
    parser.add_argument("--plans", type=int, default=100, help="plan prompts per round")
    parser.add_argument("--database", default=None, help="default: SQLite in a temporary home")
    parser.add_argument("--out", default=str(ROOT / "bench/results/acp_proxy.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        database = args.database or f"sqlite:///{home / 'ledger.sqlite3'}"
        figures = asyncio.run(measure(args, home, database))
    results = {
        "benchmark": "acp_proxy",
        "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "database": "sqlite (temporary)" if args.database is None else "given",
        "rounds": args.rounds,
        **figures,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    for kind in ("relay", "plan"):
        f = figures[kind]
        print(
            f"{kind}: direct p50 {f['direct']['p50_us']} us p99 {f['direct']['p99_us']} us | "
            f"proxy p50 {f['proxy']['p50_us']} us p99 {f['proxy']['p99_us']} us | "
            f"ratio p50 {f['ratio_p50']} p99 {f['ratio_p99']}"
        )
    relay = figures["relay"]
    print(
        f"added per relayed message: p50 {relay['added_per_message_p50_us']} us, "
        f"p99 {relay['added_per_message_p99_us']} us; written to {out}"
    )


if __name__ == "__main__":
    main()
