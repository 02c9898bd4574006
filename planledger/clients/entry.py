"""The `planledger` console script: a command goes to the warm process when one answers
(planledger.clients.warm), else runs here: the commands an agent calls on every tool call take
a fast path (no typer, no rich for JSON); every other command, and anything the fast path does
not recognise, goes to the full command line."""

from __future__ import annotations

import sys
import time

STARTED = time.monotonic()  # the process's start, near enough: a hook's deadline counts from it


def main(argv: list[str] | None = None) -> None:
    args = hoist_global_options(list(sys.argv[1:] if argv is None else argv))
    from planledger.clients import warm

    if warm.enabled() and warm.eligible(args):
        from planledger.clients.warm.client import call

        code = call(args, STARTED)
        if code is not None:
            raise SystemExit(code)
    raise SystemExit(run_here(args, started=STARTED))


def run_here(args: list[str], started: float | None = None) -> int:
    """Run the command in this process (a one-shot process, or a warm process's child);
    `started`, when given, is when the call began (a hook's deadline counts from it)."""
    from planledger.clients.fastpath import run_fast, split_database

    if started is not None and split_database(args)[1][:1] == ["hook"]:
        from planledger.clients.hooks import guard

        guard.call_started = started

    code = run_fast(args)
    if code is None:
        from planledger.clients.cli import run

        code = run(args)
    return code


def hoist_global_options(args: list[str]) -> list[str]:
    """`--database URL` is global: accepted after the command too (never after `--`)."""
    hoisted: list[str] = []
    rest: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            rest += args[index:]
            break
        if arg == "--database" and index + 1 < len(args):
            hoisted += args[index : index + 2]
            index += 2
            continue
        if arg.startswith("--database="):
            hoisted.append(arg)
        else:
            rest.append(arg)
        index += 1
    return hoisted + rest


if __name__ == "__main__":
    main()
