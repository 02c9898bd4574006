"""Instructions per event of a rebuild's fold (issue 22), counted by valgrind's callgrind: what a
forked worker does with its share of a batch once read (chains checked, events decoded and
folded, rows made: `ProjectionRunner._fold_part`), beside a bare `json.loads` of the same
states, in the same run.

    python bench/fold_instructions.py [--kind codex|claude] [--files 100] [--calls 30]
        [--database sqlite|postgres|URL] [--output bench/results/fold_instructions.json]

A rebuild's speed on this 2-core machine swings by a third within minutes (bench/bulk.py), more
than most changes to the fold are worth; an instruction count does not swing with the machine.
A store of the bulk bench's shape (bench/shapes.py: Codex rollouts of `--calls` update_plan
calls of an 8-step plan, or Claude Code sessions of as many task-tool calls) is imported once;
each case then runs twice under callgrind, in a process of its own that reads every event
first, in the rebuild's batches (one share: the whole store), then works on them once or twice
(each time with fresh fold state). The difference of the two totals, over the events, is the
instructions per event, free of start-up, imports, reading and what the first time builds once
(pydantic makes its validators on first use).

The hash's instructions are given apart: valgrind's CPU has no SHA extensions, so OpenSSL's
SHA-256 runs without them and counts several times what it costs on a machine that has them
(this one does). Needs `valgrind` and `callgrind_annotate` on PATH; takes a few minutes.
"""

from __future__ import annotations

import gc
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import common
from shapes import write_corpus

CASES = ("bare_decode", "fold")


class Replayed:
    """A share reader that gives back parts read before (projections.runner.ShareReader)."""

    def __init__(self, parts: list[list[tuple[Any, ...]]]) -> None:
        self.parts = list(parts)

    def connect(self) -> None:
        pass

    def read(self, after: int, upto: int, share: int) -> list[tuple[Any, ...]]:
        return self.parts.pop(0)


def child(case: str, url: str, times: int) -> None:
    """Read every event in the rebuild's batches, then do `case`'s work on them `times` times
    (in a process callgrind counts)."""
    from planledger.service import open_planledger
    from projections.runner import FORKED_BATCH, FoldState

    service = open_planledger(url, home=None)
    runner, store = service.runner, service.runner.store
    reader = store.share_reader(1)
    parts, after = [], 0
    while True:
        count, upto = store.batch_bounds(after, FORKED_BATCH)
        if not count:
            break
        parts.append(reader.read(after, upto, 0))
        after = upto
    gc.disable()  # as in a fold worker
    for _ in range(times):
        if case == "bare_decode":
            for part in parts:
                for row in part:
                    json.loads(row[4])
        else:
            state = FoldState(Replayed(parts))
            for _ in parts:
                runner._fold_part(state, (0, 0, 0))
    service.close()


def counted(case: str, url: str, times: int, folder: Path) -> tuple[int, int]:
    """All the instructions callgrind counted in a child, and those in libcrypto."""
    out = folder / f"{case}.{times}.callgrind"
    return common.callgrind_apart(__file__, ["--child", case, url, str(times)], str(out))


def main(argv: list[str] | None = None) -> int:
    p = common.parser("fold_instructions", __doc__ or "", rounds=1, database="sqlite")
    p.add_argument("--kind", choices=("codex", "claude"), default="codex")
    p.add_argument("--files", type=int, default=100, help="transcripts in the store")
    p.add_argument("--calls", type=int, default=30, help="plan calls per transcript")
    args = common.parse(p, argv)
    common.require_valgrind("callgrind_annotate")
    from planledger.importers import import_paths
    from planledger.service import open_planledger

    per_event: dict[str, dict[str, int]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="bench_fold_ir_") as scratch,
        common.fresh_store(args.database, "bench_fold_ir") as url,
    ):
        folder = Path(scratch)
        write_corpus(folder / "corpus", args.kind, args.files, args.calls)
        service = open_planledger(url, home=folder / "home")
        report = import_paths(service, args.kind, [folder / "corpus"])
        assert not report.errors, report.errors[:3]
        service.close()
        events = count_events(url)
        shape = f"{args.files} {args.kind} transcripts of {args.calls} calls"
        print(f"store: {events} events ({shape})")
        for case in CASES:
            once, twice = counted(case, url, 1, folder), counted(case, url, 2, folder)
            per_event[case] = common.per_unit(once, twice, events)
            print(common.per_unit_line(case, per_event[case], "event"))
    ratio = common.ratio(
        per_event["fold"]["outside_libcrypto"], per_event["bare_decode"]["outside_libcrypto"]
    )
    print(f"fold / bare decode, outside libcrypto: {ratio}")
    common.write_result(
        args.output,
        common.result(
            args,
            kind=args.kind,
            files=args.files,
            calls=args.calls,
            events=events,
            instructions_per_event=per_event,
            fold_to_bare_decode=ratio,
        ),
    )
    return 0


def count_events(url: str) -> int:
    from planledger.service import open_planledger
    from planledger.storage.scan import scan_events

    service = open_planledger(url, home=None)
    try:
        return sum(1 for _ in scan_events(service.database))
    finally:
        service.close()


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        sys.exit(main())
