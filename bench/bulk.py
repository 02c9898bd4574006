"""The bulk bench: import a corpus of real-shaped Codex rollouts, then verify and rebuild the
store it made, each beside a bare baseline of the same run.

    python bench/bulk.py [--database postgres|sqlite|URL] [--files 600] [--calls 30]
        [--corpus DIR] [--rounds 3] [--output bench/results/bulk.json]

The corpus (bench/shapes.py, seeded; the defaults: 600 rollouts of 30 `update_plan` calls of an
8-step plan, about 100 MB) is written once into --corpus, and reused when its marker file names
the same parameters (default: a temporary folder). On a fresh store, then:

  json_loads   baseline of the import: every line of every file read and `json.loads`-ed;
  import       `import_paths`, what `planledger import` calls (in as many processes as it
               uses), plan.json files written under a temporary home: MB/s, and calls/s
               (calls = committed + rejected + skipped);
  bare_decode  baseline of the passes: every stored event row in stream order, `json.loads`
               of its state;
  verify       `ledger.verify()`: every session replayed, every rule and hash chain re-checked;
  rebuild      `ProjectionRunner.rebuild()` of the views, as `projections rebuild` does.

The import runs once, json_loads before it and every round, the passes over the store --rounds
times in a rotated order. Reported: medians, ratios to the baselines of the same run (MB/s to
json_loads, events/s to bare_decode), the client CPU (this process and its finished workers)
per call or event and, on PostgreSQL, the server's beside it (every `postgres` process on this
machine, from /proc), and the bars: import >= 20 MB/s and >= 2,000 calls/s, verify and rebuild
>= 40k events/s.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import common
from shapes import write_corpus
from verify_rebuild import bare_decode, rebuild, verify

from planledger.importers.parallel import shares_wanted
from planledger.importers.run import import_paths
from planledger.service import open_planledger

SEED = 22
MARKER = ".bulk-corpus.json"
BARS = {"import_mb_s": 20.0, "import_calls_s": 2_000.0, "verify": 40_000.0, "rebuild": 40_000.0}


def corpus(folder: Path, files: int, calls: int) -> tuple[list[Path], int, float]:
    """The corpus's files and bytes, and the seconds spent writing it (0 when reused)."""
    shape = hashlib.sha256((Path(__file__).parent / "shapes.py").read_bytes()).hexdigest()[:12]
    wanted = {"kind": "codex", "files": files, "calls": calls, "seed": SEED, "shapes": shape}
    marker = folder / MARKER
    seconds = 0.0
    if not marker.exists() or json.loads(marker.read_text()) != wanted:
        if marker.exists():
            shutil.rmtree(folder)  # a corpus of this bench, of other parameters
        elif folder.exists() and any(folder.iterdir()):
            raise SystemExit(f"{folder} is neither empty nor a corpus of this bench")
        started = time.perf_counter()
        write_corpus(folder, files, calls, SEED)
        marker.write_text(json.dumps(wanted) + "\n")
        seconds = time.perf_counter() - started
    paths = sorted(folder.rglob("*.jsonl"))
    return paths, sum(path.stat().st_size for path in paths), seconds


def json_loads(paths: list[Path]) -> None:
    for path in paths:
        with path.open("rb") as handle:
            for line in handle:
                json.loads(line)


def timed(work: Callable[[], Any], postgres: bool) -> tuple[Any, float, float, float]:
    """What `work` returns, its wall-clock seconds, and the client's and (on PostgreSQL) this
    machine's server's CPU seconds it took."""
    server = common.server_seconds() if postgres else None
    cpu, started = common.client_cpu(), time.perf_counter()
    value = work()
    seconds, cpu = time.perf_counter() - started, common.client_cpu() - cpu
    after = common.server_seconds() if postgres else None
    return value, seconds, cpu, after - server if after is not None and server is not None else 0.0


def row(
    unit: str,
    values: list[float],
    base: float | None = None,
    cpu: list[float] | None = None,
    server: list[float] | None = None,
    bar: float | None = None,
) -> dict[str, Any]:
    mid = common.median(values)
    return {
        "unit": unit,
        **common.spread(values),
        "ratio_to_baseline": common.ratio(mid, base) if base else None,
        "client_cpu_us": round(common.median(cpu), 2) if cpu else None,
        "server_cpu_us": round(common.median(server), 2) if server else None,
        "bar": bar,
        "passed": None if bar is None else mid >= bar,
    }


def main(argv: list[str] | None = None) -> None:
    p = common.parser("bulk", __doc__ or "", rounds=3)
    p.add_argument("--files", type=int, default=600, help="rollouts in the corpus")
    p.add_argument("--calls", type=int, default=30, help="plan calls per rollout")
    p.add_argument("--corpus", type=Path, default=None, help="default: a temporary folder")
    args = common.parse(p, argv)
    postgres = common.kind_of(args.database) == "postgres"
    with tempfile.TemporaryDirectory(prefix="bench_bulk_") as scratch:
        folder = args.corpus or Path(scratch) / "corpus"
        paths, size, written = corpus(folder, args.files, args.calls)
        mb = size / 1e6
        print(f"corpus: {len(paths)} files, {mb:.1f} MB in {folder}", end="")
        print(f" (written in {written:.1f} s)" if written else " (reused)", flush=True)
        loads_mb_s = [mb / timed(lambda: json_loads(paths), False)[1]]
        with (
            common.fresh_store(args.database, "bench_bulk") as url,
            open_planledger(url, home=Path(scratch) / "home") as service,
        ):
            shares = shares_wanted(service.database)  # as `planledger import` spreads it
            work = functools.partial(import_paths, service, "codex", [folder], shares=shares)
            report, import_seconds, import_cpu, import_server = timed(work, postgres)
            assert not report.errors, report.errors[:3]
            calls = sum(s.committed + s.rejected + s.skipped for s in report.sessions)
            sessions = len(report.sessions)
            print(f"import: {calls} calls of {sessions} sessions in {import_seconds:.1f} s")
            events = bare_decode(service)
            print(f"store: {events} events", flush=True)
            passes: dict[str, Callable[[], Any]] = {
                "json_loads": lambda: json_loads(paths),
                "bare_decode": lambda: bare_decode(service),
                "verify": lambda: verify(service, None),
                "rebuild": lambda: rebuild(service),
            }
            names = list(passes)
            rates: dict[str, list[float]] = {name: [] for name in names[1:]}
            cpus: dict[str, list[float]] = {name: [] for name in rates}
            servers: dict[str, list[float]] = {name: [] for name in rates}
            for r in range(args.rounds):
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    _, took, cpu, spent = timed(passes[name], postgres and name != "json_loads")
                    if name == "json_loads":
                        loads_mb_s.append(mb / took)
                        continue
                    rates[name].append(events / took)
                    cpus[name].append(cpu / events * 1e6)
                    servers[name].append(spent / events * 1e6)
                line = "  ".join(f"{name}={rates[name][-1]:,.0f}/s" for name in rates)
                print(f"round {r + 1}/{args.rounds}: {line}", flush=True)
    loads, decoded = common.median(loads_mb_s), common.median(rates["bare_decode"])
    rows = {
        "json_loads_mb_s": row("MB/s", loads_mb_s),
        "import_mb_s": row("MB/s", [mb / import_seconds], loads, bar=BARS["import_mb_s"]),
        "import_calls_s": row(
            "calls/s",
            [calls / import_seconds],
            cpu=[import_cpu / calls * 1e6],
            server=[import_server / calls * 1e6] if postgres else None,
            bar=BARS["import_calls_s"],
        ),
        **{
            f"{name}_events_s": row(
                "events/s",
                values,
                decoded,
                cpus[name],
                servers[name] if postgres else None,
                BARS.get(name),
            )
            for name, values in rates.items()
        },
    }
    print(
        f"\n{'row':<19} {'median':>10} {'min':>10} {'max':>10} {'x base':>7} {'cpu us':>7} "
        f"{'srv us':>7} {'bar':>8}  result"
    )
    for name, f in rows.items():
        ratio = f"{f['ratio_to_baseline']:.3f}" if f["ratio_to_baseline"] else "-"
        cpu_us = f"{f['client_cpu_us']:.1f}" if f["client_cpu_us"] else "-"
        server_us = f"{f['server_cpu_us']:.1f}" if f["server_cpu_us"] else "-"
        bar = f"{f['bar']:,.0f}" if f["bar"] else "-"
        verdict = {None: "", True: "pass", False: "FAIL"}[f["passed"]]
        print(
            f"{name:<19} {f['median']:>10,.1f} {f['min']:>10,.1f} {f['max']:>10,.1f} "
            f"{ratio:>7} {cpu_us:>7} {server_us:>7} {bar:>8}  {verdict}"
        )
    document = common.result(
        args,
        corpus={"files": len(paths), "calls_per_file": args.calls, "bytes": size},
        store={"sessions": sessions, "calls": calls, "events": events},
        rows=rows,
        bars_passed=all(r["passed"] for r in rows.values() if r["passed"] is not None),
    )
    common.write_result(args.output, document)


if __name__ == "__main__":
    main()
