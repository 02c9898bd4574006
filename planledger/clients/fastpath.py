"""The commands an agent runs on every tool call (`plan show`, `plan update`, `hook`), without
the full command line: no typer, and no rich when they print JSON. Anything else (another
command, `--help`, an option this parser does not know or a value it would refuse) returns
None and goes to the full command line, which runs the same implementation
(planledger.clients.plan_commands) and explains usage errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from planledger.clients import plan_commands
from planledger.clients.exits import guarded


@dataclass
class Parsed:
    positional: list[str] = field(default_factory=list)
    flags: set[str] = field(default_factory=set)
    options: dict[str, str] = field(default_factory=dict)


def parse(args: list[str], flags: set[str], options: set[str]) -> Parsed | None:
    """Positionals, known flags and known options; None for anything else."""
    parsed = Parsed()
    index = 0
    while index < len(args):
        arg = args[index]
        name, equals, value = arg.partition("=")
        if arg in flags:
            parsed.flags.add(arg)
        elif name in options and equals:
            parsed.options[name] = value
        elif arg in options and index + 1 < len(args):
            parsed.options[arg] = args[index + 1]
            index += 1
        elif arg.startswith("-") and arg != "-":
            return None
        else:
            parsed.positional.append(arg)
        index += 1
    return parsed


def split_database(args: list[str]) -> tuple[str | None, list[str]]:
    """A leading `--database URL` (the entry point moved it to the front)."""
    if args[:1] == ["--database"] and len(args) >= 2:
        return args[1], args[2:]
    if args[:1] and args[0].startswith("--database="):
        return args[0].partition("=")[2], args[1:]
    return None, args


def run_fast(args: list[str]) -> int | None:
    """The exit code of a command handled here, or None to use the full command line."""
    database, args = split_database(args)
    if len(args) == 2 and args[0] == "hook" and not args[1].startswith("-"):
        from planledger.clients.hooks.runner import run_hook

        return run_hook(args[1], database)
    if args[:2] == ["plan", "show"]:
        parsed = parse(args[2:], {"--json"}, {"--revision"})
        if parsed is None or len(parsed.positional) != 1:
            return None
        return plan_show(database, parsed)
    if args[:2] == ["plan", "update"]:
        parsed = parse(args[2:], {"--json"}, {"--expected-revision", "--proposal-id"})
        if parsed is None or not 1 <= len(parsed.positional) <= 2:
            return None
        return plan_update(database, parsed)
    return None


def plan_show(database: str | None, parsed: Parsed) -> int | None:
    revision = natural(parsed.options.get("--revision"))
    if revision == -1:
        return None  # the full command line explains the usage error
    session_id, as_json = parsed.positional[0], "--json" in parsed.flags
    return guarded(
        lambda: plan_commands.show(database, session_id, revision, as_json=as_json),
        lambda: where(database),
    )


def plan_update(database: str | None, parsed: Parsed) -> int | None:
    expected = natural(parsed.options.get("--expected-revision"))
    if expected == -1:
        return None  # the full command line explains the usage error
    positional = parsed.positional
    return guarded(
        lambda: plan_commands.update(
            database,
            positional[0],
            positional[1] if len(positional) > 1 else "-",
            expected_revision=expected,
            proposal_id=parsed.options.get("--proposal-id"),
            as_json="--json" in parsed.flags,
        ),
        lambda: where(database),
    )


def natural(text: str | None) -> int | None:
    """A count given on the command line; None when absent; -1 when not a natural number."""
    if text is None:
        return None
    return int(text) if text.isdigit() and len(text) < 19 else -1


def where(database: str | None) -> str:
    """The database, as an "unavailable" message names it."""
    from planledger.storage.settings import database_settings

    return database_settings(database).display_url
