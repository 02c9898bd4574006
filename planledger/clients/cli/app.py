"""The command line's parser (the standard library's argparse: a cold process pays ~1 ms for
it), its global options and the state its commands share (the service, opened on first use).
Errors are one line on stderr."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import textwrap
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from domain.errors import InvalidInput
from planledger.clients.exits import EXIT_INVALID, EXIT_OK, guarded, warn
from planledger.clients.lazy import lazy_console
from planledger.storage.settings import database_settings

if TYPE_CHECKING:
    from pydantic import BaseModel

    from planledger.service import PlanLedger

out = lazy_console(highlight=False, soft_wrap=True)
err = lazy_console(stderr=True, highlight=False, soft_wrap=True)

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
AGENTS = ("codex", "claude", "gemini", "opencode")
MODES = ("work", "plan")

Args = argparse.Namespace
Number = TypeVar("Number", int, float)
Run = Callable[[Args], "int | None"]


class Parser(argparse.ArgumentParser):
    """A parser whose usage errors are one line (exit 2) naming the help to read."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        kwargs.setdefault("allow_abbrev", False)  # --rev is no --revision
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise InvalidInput(f"{message} (see `{self.prog} --help`)")


class Group:
    """A command with subcommands; called alone, it prints its help and exits 2."""

    def __init__(self, parser: Parser) -> None:
        self.parser = parser
        self.commands = parser.add_subparsers(title="commands", metavar="COMMAND")
        parser.set_defaults(run=self.missing)

    def missing(self, args: Args) -> int:
        self.parser.print_help()
        sys.stderr.write(f"planledger: error: missing command (see `{self.parser.prog} --help`)\n")
        return EXIT_INVALID

    def command(self, name: str, run: Run, doc: str | None = None) -> Parser:
        """The subcommand `name` running `run`; its help is `doc` (default: run's docstring),
        whose first paragraph is its line in this group's list."""
        text = " ".join((doc or run.__doc__ or "").split("\n\n")[0].split())
        first, _, rest = (doc or run.__doc__ or "").partition("\n")
        description = f"{first}\n{textwrap.dedent(rest)}".strip()
        parser = self.commands.add_parser(name, help=text, description=description)
        parser.set_defaults(run=run, command=parser)
        return parser

    def group(self, name: str, doc: str) -> Group:
        return Group(self.commands.add_parser(name, help=doc, description=doc))


def at_least(
    low: Number, high: Number | None = None, number: Callable[[str], Number] = int
) -> Callable[[str], Number]:
    """A number argument (an int unless `number` says) within [low, high]."""

    def checked(text: str) -> Number:
        try:
            value = number(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not low <= value or (high is not None and not value <= high):  # (NaN is neither)
            bound = f"from {low} to {high}" if high is not None else f">= {low}"
            raise argparse.ArgumentTypeError(f"{value} is not {bound}")
        return value

    return checked


def add_json(parser: Parser) -> None:
    parser.add_argument(
        "--json", dest="as_json", action="store_true", help="Print machine-readable JSON."
    )


def add_session(parser: Parser) -> None:
    parser.add_argument("session_id", metavar="ID", help="The session id.")


root = Group(
    Parser(
        prog="planledger",
        description="A durable, event-sourced ledger for the execution plans of AI coding "
        "agents.\n\nEvery proposal, commit and rejection is an event; the plan rules are enforced "
        "when a proposal is decided and re-checked on every replay.",
    )
)
root.parser.add_argument(
    "--database",
    metavar="URL",
    help="sqlite:///relative/path, sqlite:////absolute/path or "
    "postgresql://user[:password]@host:port/db. Default: $PLANLEDGER_DATABASE_URL, "
    "else SQLite at $PLANLEDGER_HOME/ledger.sqlite3.",
)
root.parser.add_argument("--version", action="store_true", help="Print the version and exit.")
session_group = root.group("session", "Open sessions and switch the user-controlled mode.")
goal_group = root.group("goal", "Durable goals: the only thing that may ask for another turn.")
plan_group = root.group("plan", "Propose, show and audit a session's plan.")


class _State:
    database: str | None = None
    service: PlanLedger | None = None


state = _State()


def service() -> PlanLedger:
    """The service, opened on first use (so `--help` never touches a database)."""
    if state.service is None:
        from planledger.service import open_planledger

        state.service = open_planledger(state.database)
    return state.service


def emit(as_json: bool, model: BaseModel | dict[str, Any], human: object) -> None:
    if as_json:
        data = model if isinstance(model, dict) else model.model_dump(mode="json", by_alias=True)
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    elif isinstance(human, str):  # plain text (a plan's titles): never read as markup
        out.print(human, markup=False, highlight=False)
    else:
        out.print(human)


def parsed(argv: list[str]) -> Args:
    """`argv` parsed; a command's options may stand between its arguments (`plan update ID
    --json FILE`), and its errors name its own help."""
    args, rest = root.parser.parse_known_args(argv)
    command: Parser | None = getattr(args, "command", None)
    if command is None:
        if rest:
            root.parser.error(f"unrecognized arguments: {' '.join(rest)}")
        return args
    words, start = command.prog.split()[1:], 0
    for index, arg in enumerate(argv):  # the command's own arguments start after its words
        if words and arg == words[0]:
            words, start = words[1:], index + 1
    own = argv[start:]  # (after `--`, all is arguments: intermixed parsing would not know it)
    parse = command.parse_args if "--" in own else command.parse_intermixed_args
    return parse(own, namespace=Args(database=args.database, version=args.version))


def run(argv: list[str]) -> int:
    """The full command line on `argv` (global options first); returns the exit code."""

    def body() -> int:
        args = parsed(argv)
        state.database = args.database
        if args.version:
            from importlib.metadata import version

            sys.stdout.write(f"planledger {version('plan-ledger')}\n")
            return EXIT_OK
        code: int | None = args.run(args)
        return code or EXIT_OK

    try:
        return guarded(body, lambda: database_settings(state.database).display_url)
    finally:
        if state.service is not None:
            closing, state.service = state.service, None
            with contextlib.suppress(Exception):
                closing.close()
            for warning in closing.warnings:
                warn(warning)
