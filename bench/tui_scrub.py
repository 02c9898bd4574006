"""Terminal UI benchmark: a 1,000-revision session of 100-step plans, scrubbed headless.

    python bench/tui_scrub.py [--revisions 1000] [--steps 100] [--presses 100]
                              [--out bench/results/tui_scrub.json]

Builds the session on a fresh SQLite file, then measures: the one load of its history, the
app's first screen, and the median time of a key press (←/→ alternating runs, Home, End) driven
by Textual's pilot, each press waited on until the screen is idle. The baseline is the same
pilot pressing a key in a one-`Static` app in the same run: the ratio is what the plan ledger's
screens add to a press.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from planledger.clients.tui.app import PlanLedgerTui
from planledger.clients.tui.direct import DirectSource
from planledger.service import PlanLedger, open_planledger
from planledger.service.ledger import Call

SIZE = (120, 40)


def payload(revision: int, steps: int) -> dict[str, Any]:
    active = revision % steps
    return {
        "plan": [
            {
                "step": f"Step {i:03d} of the plan",
                "status": "in_progress" if i == active else "pending",
            }
            for i in range(steps)
        ]
    }


def build(service: PlanLedger, revisions: int, steps: int) -> float:
    started = time.perf_counter()
    service.open_session("bench")
    calls = [Call(payload(r, steps), proposal_id=f"r{r}") for r in range(1, revisions + 1)]
    for start in range(0, revisions, 250):
        service.submit_batch("bench", calls[start : start + 250])
    return time.perf_counter() - started


class Baseline(App[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(key, "bump", priority=True) for key in ("left", "right", "home", "end")
    ]

    def compose(self) -> ComposeResult:
        yield Static("0", id="n")

    def action_bump(self) -> None:
        widget = self.query_one("#n", Static)
        widget.update(str(int(str(widget.content)) + 1))


def keys(presses: int) -> list[str]:
    pattern = ["left"] * 20 + ["home"] + ["right"] * 20 + ["end"]
    return [pattern[i % len(pattern)] for i in range(presses)]


async def time_presses(app: App[None], presses: int) -> list[float]:
    times: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        for key in keys(presses):
            started = time.perf_counter()
            await pilot.press(key)
            times.append(time.perf_counter() - started)
    return times


async def first_screen(make: Callable[[], App[None]]) -> float:
    started = time.perf_counter()
    async with make().run_test(size=SIZE) as pilot:
        await pilot.pause()
        return time.perf_counter() - started


def run(args: argparse.Namespace) -> dict[str, Any]:
    folder = tempfile.mkdtemp(prefix="tui-bench-")
    with open_planledger(f"sqlite:///{folder}/ledger.sqlite3", home=None) as service:
        build_s = build(service, args.revisions, args.steps)
        source = DirectSource(service, "bench")
        started = time.perf_counter()
        loaded = source.load()
        load_s = time.perf_counter() - started
        app_press = asyncio.run(time_presses(PlanLedgerTui(source, loaded), args.presses))
        mount_s = asyncio.run(first_screen(lambda: PlanLedgerTui(source, loaded)))
    base_press = asyncio.run(time_presses(Baseline(), args.presses))
    median_app, median_base = statistics.median(app_press), statistics.median(base_press)
    return {
        "revisions": args.revisions,
        "steps": args.steps,
        "history_entries": len(loaded.entries),
        "build_s": round(build_s, 3),
        "load_s": round(load_s, 3),
        "first_screen_s": round(mount_s, 3),
        "press_median_ms": round(median_app * 1000, 2),
        "press_p90_ms": round(statistics.quantiles(app_press, n=10)[-1] * 1000, 2),
        "baseline_press_median_ms": round(median_base * 1000, 2),
        "press_ratio_to_baseline": round(median_app / median_base, 2),
        "python": platform.python_version(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--revisions", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--presses", type=int, default=100)
    parser.add_argument("--out", type=Path, default=Path("bench/results/tui_scrub.json"))
    args = parser.parse_args()
    result = run(args)
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
