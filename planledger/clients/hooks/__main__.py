"""`python -m planledger.clients.hooks [--database URL] AGENT`: the hook without the CLI around it.

The same runner as `planledger hook AGENT`; it lets a benchmark tell the hook's own cost from
the command line's start-up.
"""

from __future__ import annotations

import sys

from planledger.clients.hooks.runner import AGENT_MODULES, run_hook

USAGE = "usage: python -m planledger.clients.hooks [--database URL] claude-code|gemini|codex\n"


def main(argv: list[str]) -> int:
    database = None
    if len(argv) >= 2 and argv[0] == "--database":
        database, argv = argv[1], argv[2:]
    if len(argv) != 1 or argv[0] not in AGENT_MODULES:
        sys.stderr.write(USAGE)
        return 2
    return run_hook(argv[0], database)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
