"""CLI start-up: one `planledger` process per call, as an agent harness runs it, beside a bare
`python -c pass` measured in the same run (the interpreter's own start-up).

    python bench/cli_startup.py [--rounds 5] [--calls 10] [--database sqlite]

Each command runs `--calls` times a round, in a fresh PLANLEDGER_HOME on the SQLite default
(or `--database URL`); wall-clock and CPU (user + system) medians per round, then the median
over rounds, and the ratio to the bare interpreter. The spec's budget is 150 ms of wall clock
per `plan show` and `plan update` process on the SQLite default. "cold" runs with
PLANLEDGER_NO_WARM=1; "warm" is answered by the warm process; "first" is a session's first
update, a second after `session open` in a fresh home.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import common

PLAN = {"plan": [{"step": "Read the failing test", "status": "in_progress"}]}
TODO = {
    "session_id": "bench",
    "hook_event_name": "PreToolUse",
    "tool_name": "TodoWrite",
    "tool_input": {"todos": [{"content": "Fix it", "status": "in_progress", "activeForm": "x"}]},
}
IGNORED = {"session_id": "bench", "hook_event_name": "PreToolUse", "tool_name": "Bash"}


def planledger() -> str:
    found = shutil.which("planledger", path=str(Path(sys.executable).parent))
    if found is None:
        raise SystemExit("install the package first: pip install -e .")
    return found


def timed(argv: list[str], env: dict[str, str], stdin: str = "") -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the child, exit code) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def commands(database: str | None) -> dict[str, tuple[list[str], str, bool]]:
    """name: (argv, stdin, whether a warm process may answer)."""
    cli = planledger()
    db = ["--database", database] if database else []
    update = [cli, *db, "plan", "update", "bench", "--json"]
    hook = [cli, *db, "hook", "claude-code"]
    return {
        "python -c pass": ([sys.executable, "-c", "pass"], "", False),
        "plan show --json (cold)": ([cli, *db, "plan", "show", "bench", "--json"], "", False),
        "plan show --json (warm)": ([cli, *db, "plan", "show", "bench", "--json"], "", True),
        "plan show (warm)": ([cli, *db, "plan", "show", "bench"], "", True),
        "plan update --json (cold)": (update, "", False),
        "plan update --json (warm)": (update, "", True),
        FIRST_UPDATE: (update, "", True),
        "hook, ignored event (cold)": (hook, json.dumps(IGNORED), False),
        "hook, ignored event (warm)": (hook, json.dumps(IGNORED), True),
        "hook, TodoWrite (cold)": (hook, json.dumps(TODO), False),
        "hook, TodoWrite (warm)": (hook, json.dumps(TODO), True),
        "session list (warm)": ([cli, *db, "session", "list"], "", True),
    }


def start_warm_process(cli: str, db: list[str], env: dict[str, str]) -> None:
    """One command starts the warm process of this installation; wait until it answers."""
    for _ in range(100):
        probe = subprocess.run(
            [cli, *db, "hook", "claude-code"],
            input=json.dumps(IGNORED),
            text=True,
            env=env,
            capture_output=True,
        )
        assert probe.returncode == 0, probe.stderr
        status = subprocess.run([cli, "warm", "status", "--json"], capture_output=True, env=env)
        if any(found["current"] for found in json.loads(status.stdout)["warm_processes"]):
            return
        time.sleep(0.1)
    raise SystemExit("the warm process did not start")


THINK_SECONDS = 1.0  # between `session open` and the agent's first plan update
FIRST_UPDATE = "plan update --json (first)"


def first_update(cli: str, db: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """A session's first plan update in a fresh home: `session open` (untimed),
    THINK_SECONDS of the agent thinking, then the update (timed)."""
    with tempfile.TemporaryDirectory() as home:
        fresh = {**env, "PLANLEDGER_HOME": home}
        opened = [cli, *db, "session", "open", "bench"]
        subprocess.run(opened, env=fresh, check=True, capture_output=True)
        time.sleep(THINK_SECONDS)
        return timed([cli, *db, "plan", "update", "bench", "--json"], fresh, json.dumps(PLAN))


def run(args: Any) -> dict[str, Any]:
    database = None if args.database == "sqlite" else args.database
    rounds: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "PLANLEDGER_HOME": folder}
        env.pop("PLANLEDGER_DATABASE_URL", None)
        cli = planledger()
        db = ["--database", database] if database else []
        subprocess.run([cli, *db, "session", "open", "bench"], env=env, check=True)
        subprocess.run(
            [cli, *db, "plan", "update", "bench"],
            input=json.dumps(PLAN),
            text=True,
            env=env,
            check=True,
            capture_output=True,
        )
        cold = {**env, "PLANLEDGER_NO_WARM": "1"}
        warm = {key: value for key, value in env.items() if key != "PLANLEDGER_NO_WARM"}
        start_warm_process(cli, db, warm)
        for round_number in range(args.rounds):
            for name, (argv, stdin, may_be_warm) in commands(database).items():
                walls, cpus = [], []
                for call in range(args.calls):
                    if name.startswith("plan update"):
                        steps = [{"step": f"Step {name}{round_number}.{call}", "status": "pending"}]
                        stdin = json.dumps({"plan": steps})
                    if name.startswith("hook, TodoWrite"):
                        stdin = json.dumps({**TODO, "tool_use_id": f"{name}{round_number}.{call}"})
                    if name == FIRST_UPDATE:
                        wall, cpu, code = first_update(cli, db, warm)
                    else:
                        wall, cpu, code = timed(argv, warm if may_be_warm else cold, stdin)
                    if code != 0:
                        raise SystemExit(f"{name}: exit {code}")
                    walls.append(wall)
                    cpus.append(cpu)
                rounds.setdefault(name, []).append(
                    {"wall_ms": common.median(walls) * 1000, "cpu_ms": common.median(cpus) * 1000}
                )
            print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)
    table: dict[str, dict[str, Any]] = {}
    for name, measured in rounds.items():
        table[name] = {
            "wall_ms_median": common.median([m["wall_ms"] for m in measured]),
            "cpu_ms_median": common.median([m["cpu_ms"] for m in measured]),
            "rounds": measured,
        }
    base = table["python -c pass"]
    for row in table.values():
        row["wall_x_python"] = common.ratio(row["wall_ms_median"], base["wall_ms_median"])
        row["cpu_x_python"] = common.ratio(row["cpu_ms_median"], base["cpu_ms_median"])
    return table


def main() -> None:
    p = common.parser("cli_startup", __doc__ or "", rounds=5, database="sqlite")
    p.add_argument("--calls", type=int, default=10, help="processes per command and round")
    args = common.parse(p)
    table = run(args)
    print(f"{'command':24} {'wall ms':>9} {'cpu ms':>8} {'wall x':>7} {'cpu x':>7}")
    for name, row in table.items():
        print(
            f"{name:24} {row['wall_ms_median']:9.1f} {row['cpu_ms_median']:8.1f} "
            f"{row['wall_x_python'] or 0:7.2f} {row['cpu_x_python'] or 0:7.2f}"
        )
    common.write_result(args.output, common.result(args, commands=table))


if __name__ == "__main__":
    main()
