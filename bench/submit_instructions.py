"""Client instructions per write (issue 24), counted by valgrind's callgrind: a ledger submit
through `open_planledger().submit` beside a raw single-row INSERT + COMMIT, in the same run.

    python bench/submit_instructions.py [--submits 300] [--warmup 60]
        [--database postgres|URL] [--output bench/results/submit_instructions.json]

Wall-clock rates on a shared machine swing by more than the changes worth measuring (see
bench/writers.py); an instruction count swings far less, since it does not count the time the
process waits or is kept from a core. It is not exact: how often psycopg's loops poll depends on
when the server's answers arrive (a raw write's count has moved by a tenth between runs), so
compare runs of a few percent apart with care. Each case runs twice under callgrind in
a process of its own, on the same fresh store, with `--warmup` writes and then 0 or `--submits`
more; the difference of the two totals over `--submits` is the instructions per write, free of
start-up and imports. The ledger writes strict-form revisions 1-6 of 5-step plans
(bench/writers.py's `plan`), opening a session every 6, as bench/writers.py does; raw inserts
300 bytes and commits. Only this process is counted: the database server's work is not (on
PostgreSQL, bench/writers.py reports its CPU). Needs `valgrind` on PATH; each run takes about a
minute.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import common
from writers import RAW_TABLE, plan

CASES = ("raw", "ledger")


def child(case: str, url: str, warmup: int, count: int) -> None:
    """`warmup` writes, then `count` more (in a process callgrind counts)."""
    if case == "raw":
        import psycopg

        conninfo = url.split("?", 1)[0]
        table = f'"{url.split("schema=", 1)[1]}".{RAW_TABLE}'
        with psycopg.connect(conninfo) as conn:
            for _ in range(warmup + count):
                conn.execute(f"INSERT INTO {table} (payload) VALUES (%s)", (b"x" * 300,))
                conn.commit()
        return
    from planledger.service import open_planledger

    service = open_planledger(url, home=None)
    prefix = uuid.uuid4().hex[:8]
    done = 0
    while done < warmup + count:
        sid = f"i{prefix}-{done}"
        service.open_session(sid)
        for revision in range(1, 7):
            decision = service.submit(sid, plan(revision))
            assert decision.status == "committed", decision
            done += 1
            if done == warmup + count:
                break
    service.close()


def counted(case: str, url: str, warmup: int, count: int) -> int:
    """The instructions callgrind counted in a child that made `warmup` + `count` writes."""
    return common.callgrind(__file__, ["--child", case, url, str(warmup), str(count)])


def main(argv: list[str] | None = None) -> int:
    p = common.parser("submit_instructions", __doc__ or "", rounds=1)
    p.add_argument("--submits", type=int, default=300, help="writes counted per case")
    p.add_argument("--warmup", type=int, default=60, help="writes before them (also counted)")
    args = common.parse(p, argv)
    if common.kind_of(args.database) != "postgres":
        p.error("raw INSERT + COMMIT is measured on PostgreSQL: use --database postgres or a URL")
    if args.submits < 6 or args.warmup < 6:
        p.error("--submits and --warmup must be at least 6 (one session's revisions)")
    common.require_valgrind()
    per_write: dict[str, float] = {}
    with common.fresh_store(args.database, "bench_ir") as url:
        import psycopg

        schema = url.split("schema=", 1)[1]
        with psycopg.connect(url.split("?", 1)[0], autocommit=True) as conn:
            conn.execute(
                f'CREATE TABLE "{schema}".{RAW_TABLE} (id bigserial PRIMARY KEY, payload bytea)'
            )
        for case in CASES:
            base = counted(case, url, args.warmup, 0)
            total = counted(case, url, args.warmup, args.submits)
            per_write[case] = (total - base) / args.submits
            print(f"{case:>6}: {per_write[case] / 1e6:.3f}M instructions per write")
    ratio = common.ratio(per_write["raw"], per_write["ledger"])
    print(f"raw / ledger: {ratio} (the share of a submit's client instructions a raw write takes)")
    common.write_result(
        args.output,
        common.result(
            args,
            submits=args.submits,
            warmup=args.warmup,
            instructions_per_write=per_write,
            raw_to_ledger=ratio,
        ),
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(main())
