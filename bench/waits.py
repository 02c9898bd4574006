"""What PostgreSQL's backends wait for: pg_stat_activity sampled every --every seconds, counted
by (state, wait event, the statement's first words).

    python bench/waits.py [--seconds 16] [--every 0.02] [--database URL]

run beside any workload (bench/writers.py --waits samples its ledger writers with it).
Backends of other databases and this sampler's own are left out.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import threading
import time
from typing import Any

import common
import psycopg

SAMPLE = (
    "SELECT state, wait_event_type, wait_event, query FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid() "
    "AND backend_type = 'client backend'"
)


def what(state: str | None, kind: str | None, event: str | None, query: str) -> str:
    """One backend's sample as a line: 'state | wait event | statement's first words' (an idle
    backend's as 'idle': its statement is its last, done)."""
    if state == "idle":
        return "idle"
    words = " ".join(re.sub(r"\s+", " ", query).split(" ")[:8])[:70]
    waiting = f"{kind}:{event}" if kind else "-"
    return f"{state or '-'} | {waiting} | {words}"


class Sampler:
    """Samples in a thread of its own from start() until stop(); `counts` says what it saw."""

    def __init__(self, conninfo: str, every: float = 0.02) -> None:
        self.conninfo, self.every = conninfo, every
        self.counts: collections.Counter[str] = collections.Counter()
        self.samples = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def start(self) -> Sampler:
        self.thread.start()
        return self

    def stop(self) -> collections.Counter[str]:
        self.done.set()
        self.thread.join()
        return self.counts

    def run(self) -> None:
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            while not self.done.wait(self.every):
                rows: list[Any] = conn.execute(SAMPLE).fetchall()
                self.samples += 1
                self.counts.update(what(*row) for row in rows)


def report(counts: collections.Counter[str], samples: int, most: int = 15) -> str:
    lines = [f"{samples} samples of pg_stat_activity; backends seen, most often first:"]
    lines += [f"{n:>7}  {line}" for line, n in counts.most_common(most)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").strip().split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=16.0)
    p.add_argument("--every", type=float, default=0.02)
    p.add_argument("--database", default=common.DEFAULT_POSTGRES, help="a postgresql:// URL")
    args = p.parse_args(argv)
    sampler = Sampler(args.database, args.every).start()
    time.sleep(args.seconds)
    print(report(sampler.stop(), sampler.samples))
    return 0


if __name__ == "__main__":
    sys.exit(main())
