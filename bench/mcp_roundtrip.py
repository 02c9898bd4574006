"""Round trip of one MCP tool call through the SDK's stdio client, beside the same work done
directly on the service in the same run.

    python bench/mcp_roundtrip.py [--rounds N] [--calls K] [--out bench/results/mcp_roundtrip.json]

A real `planledger mcp` is started as a subprocess (its own SQLite file and PLANLEDGER_HOME in a
temporary directory) and driven by `mcp.ClientSession` over `stdio_client`, as an agent would.
The direct side opens the service in this process on another SQLite file (so neither side's
writes wake the other's feed), with plan.json files under its own home, like the server.

Variants (each call commits: every call moves a 5-step Codex plan one step on; a session is
replaced after 50 commits; sessions are opened untimed):

  mcp_update_plan   ClientSession.call_tool("update_plan", ...): JSON-RPC over the pipes, the
                    server's thread hop, submit + the plan view, the result and its text, and
                    the client's check of the structured result against the output schema.
  mcp_read_plan     ClientSession.call_tool("read_plan", {}): the same path for a read.
  direct_submit     service.submit(session, payload): the baseline.
  direct_tool_work  service.submit + service.plan: what the tool does in-process, so
                    mcp_update_plan - direct_tool_work is what MCP (SDK, pipes, threads) adds.

Variants are interleaved: each round runs every variant for K calls (after 10 warm-up calls),
in a rotated order. Reported: per variant the medians over rounds of p50 and p99 (ms), p99
pooled over every call, and the ratios of the MCP variants to direct_submit.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402
import anyio.to_thread  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from planledger.service import PlanLedger, open_planledger  # noqa: E402

DEFAULT_OUT = ROOT / "bench" / "results" / "mcp_roundtrip.json"
WARMUP_CALLS = 10
STEPS = 5
COMMITS_PER_SESSION = 50
VARIANTS = ("mcp_update_plan", "mcp_read_plan", "direct_submit", "direct_tool_work")


def payload(call: int) -> dict[str, Any]:
    """The plan after `call` moves: steps before the current one completed, the rest pending."""
    current = call % (STEPS + 1)
    return {
        "plan": [
            {
                "step": f"Step {i + 1} of the task",
                "status": "completed"
                if i < current
                else ("in_progress" if i == current else "pending"),
            }
            for i in range(STEPS)
        ]
    }


def pct(sorted_seconds: Sequence[float], p: float) -> float:
    """Nearest-rank percentile, in ms."""
    index = min(len(sorted_seconds) - 1, max(0, math.ceil(p * len(sorted_seconds)) - 1))
    return 1000 * sorted_seconds[index]


def planledger_command() -> str:
    beside = Path(sys.executable).parent / "planledger"
    return str(beside) if beside.exists() else "planledger"


class Sessions:
    """Fresh sessions on demand (opened untimed), each used for COMMITS_PER_SESSION calls."""

    def __init__(self, prefix: str, open_session: Callable[[str], Awaitable[None]]) -> None:
        self.prefix = prefix
        self.open_session = open_session
        self.count = 0
        self.calls = COMMITS_PER_SESSION

    async def next(self) -> tuple[str, int]:
        if self.calls >= COMMITS_PER_SESSION:
            self.count += 1
            self.calls = 0
            await self.open_session(f"{self.prefix}-{self.count}")
        self.calls += 1
        return f"{self.prefix}-{self.count}", self.calls


async def measure(
    variant: str, calls: int, client: ClientSession, service: PlanLedger, sessions: Sessions
) -> list[float]:
    """Latencies of `calls` calls (after warm-up), in seconds; each result is checked."""
    latencies: list[float] = []
    for index in range(WARMUP_CALLS + calls):
        session_id, call = await sessions.next()
        body = payload(call)
        started = time.perf_counter()
        if variant == "mcp_update_plan":
            result = await client.call_tool("update_plan", {**body, "session_id": session_id})
            ok = not result.is_error
        elif variant == "mcp_read_plan":
            result = await client.call_tool("read_plan", {"session_id": session_id})
            ok = not result.is_error
        elif variant == "direct_submit":
            decision = service.submit(session_id, body, client="bench")
            ok = decision.status == "committed"
        else:
            decision = service.submit(session_id, body, client="bench")
            ok = decision.status == "committed" and service.plan(session_id).revision > 0
        elapsed = time.perf_counter() - started
        if not ok:
            raise SystemExit(f"{variant}: a call did not succeed")
        if index >= WARMUP_CALLS:
            latencies.append(elapsed)
    return latencies


async def run(rounds: int, calls: int, workdir: Path) -> dict[str, Any]:
    server_db = f"sqlite:///{workdir / 'server.sqlite3'}"
    service = open_planledger(f"sqlite:///{workdir / 'direct.sqlite3'}", home=workdir / "direct")
    params = StdioServerParameters(
        command=planledger_command(),
        args=["--database", server_db, "mcp"],
        env={"PLANLEDGER_HOME": str(workdir / "server"), "PATH": os.environ.get("PATH", "")},
    )
    samples: dict[str, list[list[float]]] = {variant: [] for variant in VARIANTS}
    with (workdir / "server-stderr.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            await client.list_tools()  # the client caches the output schemas it validates

            async def open_direct(session_id: str) -> None:
                service.open_session(session_id)

            opened = open_planledger(server_db, home=None)  # opens the server's sessions

            async def open_served(session_id: str) -> None:
                opened.open_session(session_id)

            sessions = {
                "mcp_update_plan": Sessions("mcp-write", open_served),
                "mcp_read_plan": Sessions("mcp-read", open_served),
                "direct_submit": Sessions("direct", open_direct),
                "direct_tool_work": Sessions("direct-tool", open_direct),
            }
            for round_number in range(rounds):
                shift = round_number % len(VARIANTS)
                order = VARIANTS[shift:] + VARIANTS[:shift]
                for variant in order:
                    latencies = await measure(variant, calls, client, service, sessions[variant])
                    samples[variant].append(latencies)
                print(f"round {round_number + 1}/{rounds} done", file=sys.stderr)
            opened.close()
    service.close()
    return summarise(samples)


def summarise(samples: dict[str, list[list[float]]]) -> dict[str, Any]:
    variants: dict[str, Any] = {}
    for variant, per_round in samples.items():
        pooled = sorted(x for latencies in per_round for x in latencies)
        rounds = [sorted(latencies) for latencies in per_round]
        variants[variant] = {
            "calls": len(pooled),
            "p50_ms": statistics.median(pct(r, 0.50) for r in rounds),
            "p99_ms": statistics.median(pct(r, 0.99) for r in rounds),
            "p99_pooled_ms": pct(pooled, 0.99),
            "p50_per_round_ms": [round(pct(r, 0.50), 3) for r in rounds],
        }
    base = variants["direct_submit"]
    ratios = {
        f"{variant}/direct_submit": {
            "p50": variants[variant]["p50_ms"] / base["p50_ms"],
            "p99": variants[variant]["p99_ms"] / base["p99_ms"],
        }
        for variant in ("mcp_update_plan", "mcp_read_plan", "direct_tool_work")
    }
    added = variants["mcp_update_plan"]["p50_ms"] - variants["direct_tool_work"]["p50_ms"]
    return {"variants": variants, "ratios": ratios, "mcp_added_p50_ms": added}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200, help="timed calls per variant and round")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as tmp:
        started = time.time()
        results = anyio.run(run, args.rounds, args.calls, Path(tmp))
    report = {
        "benchmark": "mcp_roundtrip",
        "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "database": "sqlite (default store), one file per side",
        "rounds": args.rounds,
        "calls_per_round": args.calls,
        "wall_seconds": round(time.time() - started, 1),
        "machine": {
            "nproc": os.cpu_count(),
            "loadavg_at_end": os.getloadavg(),
            "python": platform.python_version(),
            "mcp": metadata.version("mcp"),
        },
        **results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    for variant, figures in results["variants"].items():
        print(
            f"{variant:18} p50 {figures['p50_ms']:7.2f} ms   p99 {figures['p99_ms']:7.2f} ms   "
            f"(pooled p99 {figures['p99_pooled_ms']:.2f} ms, {figures['calls']} calls)"
        )
    for name, ratio in results["ratios"].items():
        print(f"{name:34} p50 x{ratio['p50']:.2f}   p99 x{ratio['p99']:.2f}")
    print(f"MCP adds {results['mcp_added_p50_ms']:.2f} ms (p50) to the tool's own work")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
