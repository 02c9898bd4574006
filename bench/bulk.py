"""The bulk bench of issue 22: import a corpus of agent transcripts, then verify and rebuild
the store it made, each beside a bare baseline of the same run.

    python bench/bulk.py [--database postgres|sqlite|URL] [--kind codex|claude] [--files 600]
        [--calls 30] [--corpus DIR] [--rounds 3] [--pairs 10]
        [--output bench/results/bulk_KIND.json]

One database a run (default postgres): run it twice, `--database postgres` then `--database
sqlite` (written to bulk_KIND.json and bulk_KIND_sqlite.json). The corpus (bench/shapes.py,
seeded: the defaults are the issue's 600 Codex rollouts of 30 `update_plan` calls of an 8-step
plan, about 100 MB) is written once into --corpus, and reused when its marker file names the
same parameters (default: a temporary folder). On a fresh store, then:

  json_loads       baseline A: every line of every file read and `json.loads`-ed (MB/s);
  import           `import_paths`, the function `planledger import` calls (in as many
                   processes as it uses),
                   plan.json files written under a temporary home (MB/s; calls/s, calls =
                   committed + rejected + skipped);
  import_cli       the installed `planledger --database URL import KIND DIR --json` (no warm
                   process) into a second fresh store: the same plus interpreter start-up;
  bare_decode      baseline B: every stored event row in stream order, `json.loads` of its state;
  pydantic_decode  the same with `pydantic_core.from_json`;
  verify           `ledger.verify()`: every session replayed, every rule and hash chain
                   re-checked;
  verify_unchained the same without the hash chains (the chain's cost: issue 23's bar is
                   verify at most 1.10x this; the ratio of their client CPU, and their
                   difference in microseconds per event, are reported beside it);
  chain_check      the chains alone, checked as verify checks them (domain.chain.first_break
                   over each stream, timed right after the stream is read, the reading not
                   counted): the chain's CPU per event measured directly, and its ratio to
                   verify_unchained's client CPU in the same round, which the difference of
                   two whole passes of two processes each (above) measures with the machine's
                   noise on both; on PostgreSQL also its ratio to verify_unchained's client
                   and server CPU together (the server does part of the reading there);
  rebuild          `ProjectionRunner.rebuild()` of the views, as `projections rebuild` does.

The imports run once; json_loads before them and every round; the passes over the store
--rounds times, in rotated order (verify_unchained always beside verify, before it in every
other round), then --pairs more pairs of verify and verify_unchained, in turn first: the
chain's cost is the median of the ratios of every pair (the machine's speed moves by more than
the chain costs between two passes, so one pair a round says little). Medians are
reported, with ratios to the baselines of the same run (import to json_loads MB/s, the store
passes to bare_decode events/s), the client CPU (this process and its finished workers) per
call or event, on PostgreSQL the server's beside it (every `postgres` process on this
machine, from /proc, with whatever else it did meanwhile), and the bars of the issue: import
>= 20 MB/s and >= 2,000 calls/s, verify and rebuild >= 40k events/s, with the CPU each bar
allows a call or event on this machine's cores (client and server together, every core busy)
beside what it used: whether the work fits depends on how fast the machine runs it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import pydantic_core
from shapes import write_corpus
from verify_rebuild import client_cpu, rebuild

from domain.chain import first_break
from planledger.importers import import_paths
from planledger.importers.parallel import shares_wanted
from planledger.service import PlanLedger, open_planledger
from planledger.service.verify import verify_store
from planledger.storage.scan import ChainedEvent, scan_events
from projections.forked import cores

SEED = 22
MARKER = ".bulk-corpus.json"
BARS = {"import_mb_s": 20.0, "import_calls_s": 2_000.0, "verify": 40_000.0, "rebuild": 40_000.0}


def corpus(folder: Path, kind: str, files: int, calls: int) -> tuple[list[Path], int, float]:
    """The corpus's files and bytes, and the seconds spent writing it (0 when reused)."""
    shape = hashlib.sha256((Path(__file__).parent / "shapes.py").read_bytes()).hexdigest()[:12]
    wanted = {"kind": kind, "files": files, "calls": calls, "seed": SEED, "shapes": shape}
    marker = folder / MARKER
    seconds = 0.0
    if not marker.exists() or json.loads(marker.read_text()) != wanted:
        if marker.exists():
            shutil.rmtree(folder)  # a corpus of this bench, of other parameters
        elif folder.exists() and any(folder.iterdir()):
            raise SystemExit(f"{folder} is neither empty nor a corpus of this bench")
        started = time.perf_counter()
        write_corpus(folder, kind, files, calls, SEED)
        marker.write_text(json.dumps(wanted) + "\n")
        seconds = time.perf_counter() - started
    paths = sorted(folder.rglob("*.jsonl"))
    return paths, sum(path.stat().st_size for path in paths), seconds


def json_loads(paths: list[Path]) -> None:
    for path in paths:
        with path.open("rb") as handle:
            for line in handle:
                json.loads(line)


def decode(service: PlanLedger, loads: Callable[[bytes], Any]) -> int:
    count = 0
    for stored in scan_events(service.database):
        loads(stored.state)
        count += 1
    return count


def check_chains(service: PlanLedger) -> float:
    """CPU seconds to check every stream's chains, each stream timed alone right after it is
    read, as verify checks it (its rows fresh in the caches; the reading is not counted)."""
    took = 0.0
    stream: list[ChainedEvent] = []

    def check() -> float:
        cpu = time.process_time()
        broken = first_break(stream)
        spent = time.process_time() - cpu
        assert broken is None, stream[0].originator_id
        return spent

    for event in scan_events(service.database):
        if stream and event.originator_id != stream[0].originator_id:
            took += check()
            stream = []
        stream.append(event)
    return took + (check() if stream else 0.0)


def verify(service: PlanLedger) -> None:
    report = service.ledger.verify()
    assert report.ok, report.problems[:3]


def verify_unchained(service: PlanLedger) -> None:
    """verify's pass without checking the events' hash chains: what the chain costs."""
    ledger = service.ledger
    ids = ledger.session_ids()
    workers = ledger.verify_workers
    problems = verify_store(
        service.database, ledger.mapper, ids, every=True, workers=workers, chained=False
    )
    assert not problems, problems[:3]


def timed(work: Callable[[], Any]) -> tuple[Any, float, float]:
    """What `work` returns, its wall-clock seconds and the client CPU seconds it took."""
    cpu, started = client_cpu(), time.perf_counter()
    value = work()
    return value, time.perf_counter() - started, client_cpu() - cpu


def server_cpu(postgres: bool) -> float:
    """The CPU seconds of this machine's PostgreSQL server so far (0.0 on SQLite, or when it
    runs elsewhere)."""
    return (common.server_seconds() or 0.0) if postgres else 0.0


def calls_of(sessions: list[dict[str, Any]]) -> int:
    return sum(s["committed"] + s["rejected"] + s["skipped"] for s in sessions)


def import_cli(url: str, home: Path, kind: str, folder: Path) -> tuple[int, float, float]:
    env = {**os.environ, "PLANLEDGER_HOME": str(home), "PLANLEDGER_NO_WARM": "1"}
    env.pop("PLANLEDGER_DATABASE_URL", None)
    command = [common.planledger(), "--database", url, "import", kind, str(folder), "--json"]
    run = functools.partial(subprocess.run, command, env=env, capture_output=True, text=True)
    done, seconds, cpu = timed(run)
    if done.returncode:
        raise SystemExit(f"planledger import exited {done.returncode}: {done.stderr[-2000:]}")
    return calls_of(json.loads(done.stdout)["sessions"]), seconds, cpu


def row(
    unit: str,
    values: list[float],
    base: float | None = None,
    cpu: list[float] | None = None,
    bar: float | None = None,
    server: list[float] | None = None,
) -> dict[str, Any]:
    mid = common.median(values)
    # What the bar allows a call or an event on this machine's cores, all of them busy (client
    # and server together): the machine's speed decides whether the work fits in it.
    budget = cores() / bar * 1e6 if bar and cpu else None
    return {
        "unit": unit,
        **common.spread(values),
        "rounds": [round(v, 1) for v in values],
        "ratio_to_baseline": common.ratio(mid, base) if base else None,
        "client_cpu_us": round(common.median(cpu), 2) if cpu else None,
        "server_cpu_us": round(common.median(server), 2) if server else None,
        "bar": bar,
        "cpu_budget_us_at_bar": round(budget, 1) if budget else None,
        "passed": None if bar is None else mid >= bar,
    }


def main(argv: list[str] | None = None) -> None:
    p = common.parser("bulk", __doc__ or "", rounds=3)
    p.add_argument("--kind", choices=("codex", "claude"), default="codex")
    p.add_argument("--files", type=int, default=600, help="transcripts in the corpus")
    p.add_argument("--calls", type=int, default=30, help="plan calls per transcript")
    p.add_argument("--corpus", type=Path, default=None, help="default: a temporary folder")
    p.add_argument(
        "--pairs",
        type=int,
        default=10,
        help="more verify/verify_unchained pairs after the rounds, for the chain's cost",
    )
    p.set_defaults(benchmark=f"bulk_{p.parse_args(argv).kind}")
    args = common.parse(p, argv)
    with tempfile.TemporaryDirectory(prefix="bench_bulk_") as scratch:
        folder = args.corpus or Path(scratch) / "corpus"
        paths, size, written = corpus(folder, args.kind, args.files, args.calls)
        mb = size / 1e6
        print(f"corpus: {len(paths)} {args.kind} files, {mb:.1f} MB in {folder}", end="")
        print(f" (written in {written:.1f} s)" if written else " (reused)", flush=True)
        loads_mb_s = [mb / timed(lambda: json_loads(paths))[1]]
        with common.fresh_store(args.database, "bench_bulk") as url:
            service = open_planledger(url, home=Path(scratch) / "home")
            postgres = service.database.is_postgres
            shares = shares_wanted(service.database)  # as `planledger import` spreads it
            before = server_cpu(postgres)
            report, import_seconds, import_cpu = timed(
                functools.partial(import_paths, service, args.kind, [folder], shares=shares)
            )
            import_server = server_cpu(postgres) - before
            assert not report.errors, report.errors[:3]
            sessions = [s.model_dump() for s in report.sessions]
            calls = calls_of(sessions)
            print(f"import: {calls} calls of {len(sessions)} sessions in {import_seconds:.1f} s")
            with common.fresh_store(args.database, "bench_bulk_cli") as cli_url:
                cli_calls, cli_seconds, cli_cpu = import_cli(
                    cli_url, Path(scratch) / "home_cli", args.kind, folder
                )
            assert cli_calls == calls, (cli_calls, calls)
            print(f"import_cli: {cli_calls} calls in {cli_seconds:.1f} s", flush=True)
            events = decode(service, lambda state: None)
            print(f"store: {events} events", flush=True)
            chain_check_us: list[float] = []
            passes: dict[str, Callable[[], Any]] = {
                "json_loads": lambda: json_loads(paths),
                "bare_decode": lambda: decode(service, json.loads),
                "pydantic_decode": lambda: decode(service, pydantic_core.from_json),
                "verify": lambda: verify(service),
                "verify_unchained": lambda: verify_unchained(service),
                "rebuild": lambda: rebuild(service),
            }
            rates: dict[str, list[float]] = {name: [] for name in passes if name != "json_loads"}
            cpus: dict[str, list[float]] = {name: [] for name in rates}
            servers: dict[str, list[float]] = {name: [] for name in rates}
            # verify and verify_unchained run back to back, in turn first, so that each
            # round's pair sees the same machine: the chain's cost is the median of the pairs'
            # ratios, these and the --pairs below (the medians of each alone drift apart with
            # the load).
            names = [name for name in passes if name != "verify_unchained"]
            for r in range(args.rounds):
                rotated = names[r % len(names) :] + names[: r % len(names)]
                at = rotated.index("verify") + r % 2
                for name in [*rotated[:at], "verify_unchained", *rotated[at:]]:
                    before = server_cpu(postgres)
                    _, took, cpu = timed(passes[name])
                    spent = server_cpu(postgres) - before
                    if name == "verify_unchained":
                        chain_check_us.append(check_chains(service) / events * 1e6)
                    if name == "json_loads":
                        loads_mb_s.append(mb / took)
                        continue
                    rates[name].append(events / took)
                    cpus[name].append(cpu / events * 1e6)
                    servers[name].append(spent / events * 1e6)
                line = "  ".join(f"{name}={rates[name][-1]:,.0f}/s" for name in rates)
                print(f"round {r + 1}/{args.rounds}: {line}", flush=True)
            # The chain's cost is a tenth of a pass at most, and the machine's speed moves by
            # more than that between two passes: more pairs, in turn first, for its median.
            pairs = [(rates["verify_unchained"][r], rates["verify"][r]) for r in range(args.rounds)]
            cpu_pairs = list(zip(cpus["verify_unchained"], cpus["verify"], strict=True))
            for r in range(args.pairs):
                order = ["verify", "verify_unchained"][:: 1 if r % 2 else -1]
                timings = {name: timed(passes[name])[1:] for name in order}
                (bare_s, bare_cpu), (chained_s, chained_cpu) = (
                    timings["verify_unchained"],
                    timings["verify"],
                )
                pairs.append((events / bare_s, events / chained_s))
                cpu_pairs.append((bare_cpu / events * 1e6, chained_cpu / events * 1e6))
            print(f"chain pairs: {len(pairs)}", flush=True)
            service.close()
    loads, decoded = common.median(loads_mb_s), common.median(rates["bare_decode"])
    rows = {
        "json_loads_mb_s": row("MB/s", loads_mb_s),
        "import_mb_s": row("MB/s", [mb / import_seconds], loads, bar=BARS["import_mb_s"]),
        "import_calls_s": row(
            "calls/s",
            [calls / import_seconds],
            cpu=[import_cpu / calls * 1e6],
            bar=BARS["import_calls_s"],
            server=[import_server / calls * 1e6] if postgres else None,
        ),
        "import_cli_mb_s": row("MB/s", [mb / cli_seconds], loads),
        "import_cli_calls_s": row("calls/s", [calls / cli_seconds], cpu=[cli_cpu / calls * 1e6]),
        **{
            f"{name}_events_s": row(
                "events/s",
                values,
                decoded,
                cpus[name],
                BARS.get(name),
                servers[name] if postgres else None,
            )
            for name, values in rates.items()
        },
    }
    print(
        f"\n{'row':<25} {'median':>10} {'min':>10} {'max':>10} {'x base':>7} {'cpu us':>7} "
        f"{'srv us':>7} {'bar':>8}  result"
    )
    for name, f in rows.items():
        ratio = f"{f['ratio_to_baseline']:.3f}" if f["ratio_to_baseline"] else "-"
        cpu_us = f"{f['client_cpu_us']:.1f}" if f["client_cpu_us"] else "-"
        server_us = f"{f['server_cpu_us']:.1f}" if f["server_cpu_us"] else "-"
        bar = f"{f['bar']:,.0f}" if f["bar"] else "-"
        verdict = {None: "", True: "pass", False: "FAIL"}[f["passed"]]
        print(
            f"{name:<25} {f['median']:>10,.1f} {f['min']:>10,.1f} {f['max']:>10,.1f} "
            f"{ratio:>7} {cpu_us:>7} {server_us:>7} {bar:>8}  {verdict}"
        )
    print(f"\nCPU a call or event may use at its bar on {cores()} cores, and what it used:")
    for name, f in rows.items():
        if f["cpu_budget_us_at_bar"]:
            used = f["client_cpu_us"] + (f["server_cpu_us"] or 0.0)
            print(
                f"  {name:<23} {f['cpu_budget_us_at_bar']:>7.1f} us allowed, {used:>6.1f} used "
                f"({f['client_cpu_us']:.1f} + {f['server_cpu_us'] or 0.0:.1f})"
            )
    chain_cost = common.median([bare / chained for bare, chained in pairs])
    chain_cpu_cost = common.median([chained / bare for bare, chained in cpu_pairs])
    # The same in microseconds: a fixed cost per event, which a faster verify makes a larger
    # share of (the ratios above fall as verify slows, rise as it speeds up).
    chain_cpu_us = common.median([chained - bare for bare, chained in cpu_pairs])
    print(
        f"\nverify with the chain takes {chain_cost:.3f}x the time without it, and "
        f"{chain_cpu_cost:.3f}x its client CPU (medians over {len(pairs)} pairs of passes, "
        f"in turn first; bar: 1.10): the chain costs {chain_cpu_us:.1f} us of client CPU per "
        "event"
    )
    checks = zip(chain_check_us, cpus["verify_unchained"], strict=True)
    chain_check_cost = common.median([1 + check / bare for check, bare in checks])
    # On PostgreSQL the server does part of verify's reading (on SQLite it is in the client's
    # CPU): the chain adds nothing there, and verify's whole cost is both.
    whole = zip(chain_check_us, cpus["verify_unchained"], servers["verify_unchained"], strict=True)
    chain_check_whole = (
        common.median([1 + check / (bare + server) for check, bare, server in whole])
        if postgres
        else chain_check_cost
    )
    print(
        f"the chains checked alone: {common.median(chain_check_us):.2f} us of CPU per event, "
        f"which makes verify {chain_check_cost:.3f}x its client CPU without them"
        + (f" and {chain_check_whole:.3f}x its client and server CPU" if postgres else "")
        + " (median of the rounds; bar: 1.10)"
    )
    document = common.result(
        args,
        chain_cost=round(chain_cost, 3),
        chain_cpu_cost=round(chain_cpu_cost, 3),
        chain_cpu_us=round(chain_cpu_us, 2),
        chain_check_us=round(common.median(chain_check_us), 2),
        chain_check_cost=round(chain_check_cost, 3),
        chain_check_cost_with_server=round(chain_check_whole, 3),
        corpus={
            "kind": args.kind,
            "files": len(paths),
            "calls_per_file": args.calls,
            "bytes": size,
            "write_seconds": round(written, 2),
        },
        store={"sessions": len(sessions), "calls": calls, "events": events},
        rows=rows,
        bars_passed=all(r["passed"] for r in rows.values() if r["passed"] is not None),
    )
    common.write_result(args.output, document)


if __name__ == "__main__":
    main()
