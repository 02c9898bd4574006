"""What every benchmark shares: arguments, statistics, machine information, a fresh store
(a PostgreSQL schema or a SQLite file, removed afterwards), the JSON result, and the plan a
writer submits.

A benchmark script puts the repository on `sys.path` by importing this module first:

    import common  # (bench/ is the script's directory)
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import resource
import shutil
import statistics
import sys
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "bench" / "results"
DEFAULT_POSTGRES = os.environ.get(
    "PLANLEDGER_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
PACKAGES = ("eventsourcing", "pydantic", "pydantic-core", "psycopg", "psycopg-binary", "fastapi")


def parser(
    name: str, description: str, *, rounds: int = 5, database: str = "postgres"
) -> argparse.ArgumentParser:
    """`--database` (`postgres`, `sqlite`, or a URL), `--rounds` and `--output`, for `name`."""
    p = argparse.ArgumentParser(description=description.strip().split("\n\n")[0])
    p.add_argument(
        "--database",
        default=os.environ.get("BENCH_DATABASE_URL", database),
        help="postgres (a fresh schema at $PLANLEDGER_BENCH_POSTGRES_URL), sqlite (a fresh "
        "file), or a postgresql:// URL whose server gets a fresh schema",
    )
    p.add_argument("--rounds", type=int, default=rounds, help="rounds; medians are reported")
    p.add_argument("--output", type=Path, default=None, help=f"default: {RESULTS}/{name}.json")
    p.set_defaults(benchmark=name)
    return p


def parse(p: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> argparse.Namespace:
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error("--rounds must be >= 1")
    if args.output is None:
        suffix = "" if args.database == "postgres" else f"_{kind_of(args.database)}"
        args.output = RESULTS / f"{args.benchmark}{suffix}.json"
    return args


def require_postgres(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if kind_of(args.database) != "postgres":
        p.error(f"{args.benchmark} measures PostgreSQL: --database postgres or a URL")


# -- statistics -------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) by the nearest-rank rule; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0


def spread(values: Sequence[float]) -> dict[str, float]:
    """Median, min, max and the relative spread ((max - min) / median) of per-round figures."""
    mid = median(values)
    low, high = (min(values), max(values)) if values else (0.0, 0.0)
    return {
        "median": mid,
        "min": low,
        "max": high,
        "spread": round((high - low) / mid, 3) if mid else 0.0,
    }


def ratio(a: float, b: float) -> float | None:
    return round(a / b, 4) if b else None


# -- machine ----------------------------------------------------------------------------------


def client_cpu() -> float:
    """CPU seconds of this process and of its finished child processes (not the database's)."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def server_seconds() -> float | None:
    """CPU seconds of every `postgres` process on this machine so far, those it has reaped
    included (None where /proc tells none: not Linux, or no server here)."""
    ticks, found = 0, False
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # ended meanwhile
            continue
        if text[text.index("(") + 1 : text.rindex(")")] != "postgres":
            continue
        found = True
        ticks += sum(int(v) for v in text.rsplit(")", 1)[1].split()[11:15])
    return ticks / os.sysconf("SC_CLK_TCK") if found else None


def machine_info(database: str | None = None) -> dict[str, Any]:
    """Cores, CPU, Python, package versions and the load average now (a shared machine), and
    the PostgreSQL server's settings when `database` is one."""
    cpu = None
    with contextlib.suppress(OSError):
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        cpu = next((x.split(":", 1)[1].strip() for x in lines if x.startswith("model name")), None)
    info: dict[str, Any] = {
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "cpu_model": cpu,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "packages": {name: version_of(name) for name in PACKAGES},
        "loadavg": list(os.getloadavg()),
    }
    if database is not None and kind_of(database) == "postgres":
        import psycopg

        with psycopg.connect(admin_url(database), autocommit=True) as conn:
            settings = ("server_version", "synchronous_commit", "fsync", "shared_buffers")
            info["postgres"] = {
                s: (conn.execute(f"SHOW {s}").fetchone() or (None,))[0] for s in settings
            }
    return info


def version_of(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


# -- stores -----------------------------------------------------------------------------------


def kind_of(database: str) -> str:
    return "sqlite" if database.startswith("sqlite") else "postgres"


def admin_url(database: str) -> str:
    return DEFAULT_POSTGRES if database == "postgres" else database.split("?", 1)[0]


@contextlib.contextmanager
def fresh_store(database: str, tag: str = "bench") -> Iterator[str]:
    """A ledger URL on an empty store, removed afterwards: a new schema on the PostgreSQL
    server (`postgres` or a URL), or a new SQLite file (`sqlite`) in a temporary folder."""
    if kind_of(database) == "sqlite":
        with tempfile.TemporaryDirectory(prefix=f"{tag}_") as folder:
            yield f"sqlite:///{Path(folder) / 'ledger.sqlite3'}"
        return
    import psycopg

    base, schema = admin_url(database), f"{tag}_{uuid.uuid4().hex[:10]}".lower()
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield f"{base}?schema={schema}"
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def search_path(url: str) -> str:
    """A psycopg conninfo of a `fresh_store` URL, its schema first on the search path."""
    base, _, query = url.partition("?")
    return f"{base}?options=-csearch_path%3D{query.removeprefix('schema=')}"


# -- results ----------------------------------------------------------------------------------


def result(args: argparse.Namespace, **parts: Any) -> dict[str, Any]:
    """The JSON document of a run: what ran, where, on which machine, and `parts`."""
    return {
        "benchmark": args.benchmark,
        "command": " ".join(["python", *sys.argv]),
        "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "database": kind_of(args.database),
        "rounds": args.rounds,
        "machine": machine_info(args.database),
        **parts,
    }


def write_result(path: Path, document: dict[str, Any]) -> None:
    document["machine"]["loadavg_at_end"] = list(os.getloadavg())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, default=str) + "\n")
    print(f"wrote {path}")


def planledger() -> str:
    """The installed `planledger` command (beside this interpreter, else on PATH)."""
    beside = Path(sys.executable).parent / "planledger"
    found = str(beside) if beside.exists() else shutil.which("planledger")
    if not found:
        raise SystemExit("the `planledger` command is not installed (pip install -e .)")
    return found


# -- the workload -----------------------------------------------------------------------------


def plan(revision: int, steps_in_plan: int = 5) -> dict[str, Any]:
    """Revision `revision` (1-6) of a strict-form plan of `steps_in_plan` steps: steps before
    it completed, it in progress, `expected_revision` set."""
    steps = []
    for k in range(1, steps_in_plan + 1):
        status = "completed" if k < revision else "in_progress" if k == revision else "pending"
        steps.append({"id": f"s{k}", "title": f"Step {k} of the work", "status": status})
    return {"title": "Bench plan", "expected_revision": revision - 1, "steps": steps}
