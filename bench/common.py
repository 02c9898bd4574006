"""What every benchmark shares: arguments, percentiles, machine information, a fresh store
(a PostgreSQL schema or a SQLite file, removed afterwards) and the JSON result.

A benchmark script puts the repository on `sys.path` by importing this module first:

    import common  # noqa: E402  (bench/ is the script's directory)
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
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


# -- arguments --------------------------------------------------------------------------------


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


# -- statistics -------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) by the nearest-rank rule; 0.0 for no values."""
    if not 0 <= q <= 1:
        raise ValueError(f"a quantile is between 0 and 1, not {q}")
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


def version_of(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def server_seconds() -> float | None:
    """CPU seconds of every `postgres` process on this machine so far, those it has reaped
    included (None where /proc tells none: not Linux, or no server here)."""
    ticks, found = 0, False
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # ended meanwhile
            continue
        name, fields = text[text.index("(") + 1 : text.rindex(")")], text.rsplit(")", 1)[1].split()
        if name != "postgres":
            continue
        found = True
        utime, stime, child_utime, child_stime = (int(v) for v in fields[11:15])
        ticks += utime + stime + child_utime + child_stime
    return ticks / os.sysconf("SC_CLK_TCK") if found else None


def cpu_model() -> str | None:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return None


def machine_info(database: str | None = None) -> dict[str, Any]:
    """Cores, CPU, Python, package versions and the load average now (a shared machine), and
    the PostgreSQL server's settings when `database` is one."""
    info = {
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "packages": {name: version_of(name) for name in PACKAGES},
        "loadavg": list(os.getloadavg()),
    }
    if database is not None and kind_of(database) == "postgres":
        info["postgres"] = postgres_info(admin_url(database))
    return info


# -- stores -----------------------------------------------------------------------------------


def kind_of(database: str) -> str:
    return "sqlite" if database.startswith("sqlite") else "postgres"


def admin_url(database: str) -> str:
    return DEFAULT_POSTGRES if database == "postgres" else database.split("?", 1)[0]


def create_schema(base: str, name: str) -> None:
    import psycopg

    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')


def drop_schema(base: str, name: str) -> None:
    import psycopg

    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@contextlib.contextmanager
def fresh_store(database: str, tag: str = "bench") -> Iterator[str]:
    """A ledger URL on an empty store, removed afterwards: a new schema on the PostgreSQL
    server (`postgres` or a URL), or a new SQLite file (`sqlite`) in a temporary folder."""
    if kind_of(database) == "sqlite":
        with tempfile.TemporaryDirectory(prefix=f"{tag}_") as folder:
            yield f"sqlite:///{Path(folder) / 'ledger.sqlite3'}"
        return
    base = admin_url(database)
    schema = f"{tag}_{uuid.uuid4().hex[:10]}".lower()
    create_schema(base, schema)
    try:
        yield f"{base}?schema={schema}"
    finally:
        drop_schema(base, schema)


def postgres_info(base: str) -> dict[str, Any]:
    """The PostgreSQL server's version and durability settings, and how many clients it has."""
    import psycopg

    info: dict[str, Any] = {}
    with psycopg.connect(base, autocommit=True) as conn:
        for setting in ("server_version", "synchronous_commit", "fsync", "shared_buffers"):
            row = conn.execute(f"SHOW {setting}").fetchone()
            info[setting] = row[0] if row else None
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
        ).fetchone()
        info["client_backends_at_start"] = row[0] if row else None
    return info


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
    document.setdefault("machine", machine_info())
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


# -- instruction counts -----------------------------------------------------------------------

COLLECTED = re.compile(r"Collected : (\d+)")


def callgrind(script: str, arguments: Sequence[str], out: str = "/dev/null") -> int:
    """The instructions valgrind's callgrind counts in `python script arguments...`, run in a
    process of its own (its profile written to `out`); SystemExit with its errors if it fails."""
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        sys.executable,
        script,
        *arguments,
    ]
    run = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    found = COLLECTED.search(run.stderr)
    if run.returncode != 0 or found is None:
        raise SystemExit(
            f"{script} {' '.join(arguments)} under callgrind failed:\n{run.stderr[-3000:]}"
        )
    return int(found.group(1))


def require_valgrind(*tools: str) -> None:
    """SystemExit naming the first of valgrind and `tools` (its companions, such as
    `callgrind_annotate`) that is not on PATH."""
    for tool in ("valgrind", *tools):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed (apt-get install valgrind)")


def callgrind_apart(script: str, arguments: Sequence[str], out: str) -> tuple[int, int]:
    """`callgrind(script, arguments, out)`, and the part of it spent in libcrypto."""
    return callgrind(script, arguments, out), libcrypto_instructions(out)


def per_unit(first: tuple[int, int], second: tuple[int, int], units: int) -> dict[str, int]:
    """The instructions per unit of what the second of two `callgrind_apart` counts did beyond
    the first: all of them, those outside libcrypto, and those in it."""
    hashing = (second[1] - first[1]) / units
    all_of_it = (second[0] - first[0]) / units
    return {
        "instructions": round(all_of_it),
        "outside_libcrypto": round(all_of_it - hashing),
        "libcrypto": round(hashing),
    }


def per_unit_line(case: str, figures: dict[str, int], unit: str) -> str:
    """One line of a `per_unit` result: all instructions, and those outside libcrypto."""
    return (
        f"{case:>12}: {figures['instructions'] / 1e3:7.1f}k instructions per {unit}, "
        f"{figures['outside_libcrypto'] / 1e3:.1f}k outside libcrypto"
    )


def libcrypto_instructions(profile: str) -> int:
    """The instructions of a callgrind profile spent in libcrypto: OpenSSL's SHA-256 runs
    without the SHA extensions under valgrind (its CPU has none), so they count several times
    what they cost on a machine that has them; benches give them apart. Needs
    `callgrind_annotate`."""
    annotated = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--threshold=100", profile],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sum(
        int(line.split()[0].replace(",", ""))
        for line in annotated.splitlines()
        if "libcrypto" in line and line.strip()[:1].isdigit()
    )
