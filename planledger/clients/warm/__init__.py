"""A warm process: a `planledger` interpreter with the domain imported and its validators built,
that forks once per command (as Mercurial's chg server or the Android zygote do).

A one-shot `planledger` process spends most of its time importing pydantic, eventsourcing and
the domain before ~10 ms of work. So a command (other than the long-running ones) first asks
the warm process of its installed code to run it. The client sends its arguments, working
folder, whole environment and its standard input, output and error *descriptors*; the warm
process forks, and the child runs exactly the code a cold process runs (it opens the store the
caller's environment names, acts, closes it, writes straight to the caller's terminal or pipes)
and reports the exit code. Nothing is kept between commands but imported code: no open store,
no cached setting. When no warm process answers, the command runs in its own process (and
starts one for next time); PLANLEDGER_NO_WARM=1 turns it off; `planledger warm status|stop`.

One warm process per user, Python installation and content hash of the installed code: an
upgrade in place gets a new one, the old one leaves when idle (PLANLEDGER_WARM_IDLE seconds,
default 600). It is started under a lock (one per key), listens on an owner-only UNIX socket
under the temporary folder, and removes only the socket it made.
"""

from __future__ import annotations

import os

OFF_ENV = "PLANLEDGER_NO_WARM"
IDLE_ENV = "PLANLEDGER_WARM_IDLE"
IDLE_SECONDS = 600.0

# Commands that run for long or hold a terminal or a port: always in their own process.
OWN_PROCESS_COMMANDS = frozenset({"serve", "tui", "mcp", "acp", "warm"})


def enabled() -> bool:
    """Whether this caller may use a warm process (PLANLEDGER_NO_WARM unset or empty)."""
    return not os.environ.get(OFF_ENV)


def eligible(args: list[str]) -> bool:
    """Whether a warm process may run `args` (global options first, as the entry point puts
    them): every command but the long-running ones."""
    index = 0
    while index < len(args) and args[index].startswith("--database"):
        index += 1 if "=" in args[index] else 2
    rest = args[index:]
    return bool(rest) and rest[0] not in OWN_PROCESS_COMMANDS
