"""Instructions per plan call of `planledger import codex` (issue 22), counted by valgrind's
callgrind, beside a bare `json.loads` of every line of the same files, in the same run.

    python bench/import_instructions.py [--files 100] [--calls 30]
        [--database sqlite|postgres|URL] [--output bench/results/import_instructions.json]

An import's speed on this 2-core machine swings by more than a quarter within minutes
(bench/bulk.py), more than most changes to it are worth; an instruction count does not swing
with the machine.
A corpus of the bulk bench's shape (bench/shapes.py: Codex rollouts of `--calls` update_plan
calls of an 8-step plan) is written once, with its first half in a folder of its own. Each case
then runs under callgrind, in a process of its own, on the half and on the whole: the import
(`import_paths`, in one process: what each of `planledger import`'s shares does) into an empty
store, and the bare read. The difference of the two totals, over the other half's calls, is the
instructions per call, free of start-up, imports, the schema's set-up and what the first time
builds once. On PostgreSQL this is the client's work only (the server's is not counted).

The hash's instructions are given apart: valgrind's CPU has no SHA extensions, so OpenSSL's
SHA-256 runs without them and counts several times what it costs on a machine that has them.
Needs `valgrind` and `callgrind_annotate` on PATH; takes a few minutes.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import common
from shapes import write_corpus

CASES = ("json_loads", "import")


def child(case: str, url: str, folder: Path, expected: int) -> None:
    """`case`'s work on every rollout under `folder` (in a process callgrind counts)."""
    if case == "json_loads":
        for path in sorted(folder.rglob("*.jsonl")):
            for line in path.read_bytes().splitlines():
                json.loads(line)
        return
    from planledger.importers import import_paths
    from planledger.service import open_planledger

    with open_planledger(url, home=None) as service:
        report = import_paths(service, "codex", [folder], shares=1)
    calls = sum(s.committed + s.rejected for s in report.sessions)
    if report.errors or calls != expected:
        raise SystemExit(f"imported {calls} calls of {expected}: {report.errors[:3]}")


def counted(case: str, database: str, folder: Path, expected: int) -> tuple[int, int]:
    """All the instructions callgrind counted in a child, and those in libcrypto."""
    out = folder.with_name(f"{folder.name}.{case}.callgrind")
    with common.fresh_store(database, "bench_import_ir") as url:
        arguments = ["--child", case, url, str(folder), str(expected)]
        return common.callgrind_apart(__file__, arguments, str(out))


def main(argv: list[str] | None = None) -> int:
    p = common.parser("import_instructions", __doc__ or "", rounds=1, database="sqlite")
    p.add_argument("--files", type=int, default=100, help="Codex rollouts in the corpus")
    p.add_argument("--calls", type=int, default=30, help="update_plan calls per rollout")
    args = common.parse(p, argv)
    if args.files < 2:
        raise SystemExit("--files must be at least 2 (the count is the whole less its half)")
    common.require_valgrind("callgrind_annotate")
    per_call: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_import_ir_") as scratch:
        whole, half = Path(scratch) / "whole", Path(scratch) / "half"
        write_corpus(whole, "codex", args.files, args.calls)
        files = sorted(whole.rglob("*.jsonl"))
        for path in files[: args.files // 2]:
            copy = half / path.relative_to(whole)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy)
        in_half = args.files // 2 * args.calls
        in_whole = args.files * args.calls
        print(f"corpus: {args.files} rollouts of {args.calls} calls (and the first half apart)")
        for case in CASES:
            first = counted(case, args.database, half, in_half)
            second = counted(case, args.database, whole, in_whole)
            per_call[case] = common.per_unit(first, second, in_whole - in_half)
            print(common.per_unit_line(case, per_call[case], "call"))
    ratio = common.ratio(
        per_call["import"]["outside_libcrypto"], per_call["json_loads"]["outside_libcrypto"]
    )
    print(f"import / json.loads of the same lines, outside libcrypto: {ratio}")
    common.write_result(
        args.output,
        common.result(
            args,
            files=args.files,
            calls=args.calls,
            instructions_per_call=per_call,
            import_to_json_loads=ratio,
        ),
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        child(sys.argv[2], sys.argv[3], Path(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(main())
