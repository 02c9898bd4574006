"""The `planledger` console script: one command line (planledger.clients.cli), cold in every
process; the commands an agent calls on every tool call import only what they need."""

from __future__ import annotations

import gc
import os
import sys
import time

STARTED = time.monotonic()  # the process's start, near enough: a hook's deadline counts from it
# pydantic looks for plugins among every installed distribution's entry points on its first model
# (~7 ms a process); we use none.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def main(argv: list[str] | None = None) -> None:
    args = hoist_global_options(list(sys.argv[1:] if argv is None else argv))
    from planledger.clients.hooks import guard

    guard.call_started = STARTED
    from planledger.clients.cli import PER_CALL, first_word, run

    console = argv is None  # the console script: the process ends with the command
    if console and first_word(args) in PER_CALL:
        # A command an agent runs on every tool call makes few objects, none in cycles worth
        # freeing before it ends, while the cyclic collector would walk every imported
        # module's objects again and again: a seventh of a cold `plan update`'s instructions.
        gc.disable()
    try:
        code = run(args)
    finally:
        if console:
            # The interpreter's last collections would walk every object the command made to
            # find cycles the exit frees anyway (~25 ms of a cold `plan update` here): frozen
            # objects are left to the exit's own clean-up.
            gc.freeze()
    raise SystemExit(code)


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
