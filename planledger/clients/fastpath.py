"""The commands an agent runs on every tool call, without the full command line.

`plan show` reads the stored view with sqlite3 alone (the views are written with their events,
so the stored row is the plan; a corrupt session is refused as on the full path); `plan update`
and `hook` open the service without typer, and without rich when they print JSON. Anything
else (another command, `--help`, an option this parser does not know, a PostgreSQL URL for
`plan show`, views that are behind) returns None and goes to the full command line, which
gives the same answers.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planledger.clients.exits import (
    EXIT_CONFLICT,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_REJECTED,
    fail,
    guarded,
    warn,
)


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
    """The exit code of a command handled here, or None to use the full command line. The
    commands that need the domain go to a warm process when one answers."""
    database, rest = split_database(args)
    reads = warm_stdin(rest)
    if reads is not None:
        from planledger.clients import warm

        if warm.enabled(database):
            stdin = warm.read_stdin() if reads else b""
            code = warm.call(args, database, stdin)
            if code is not None:
                return code
            sys.stdin = warm.text_stream(stdin)  # read already: the command runs here after all
    return run_local(args)


def warm_stdin(rest: list[str]) -> bool | None:
    """For a command a warm process may run: whether it reads standard input; else None."""
    if len(rest) == 2 and rest[0] == "hook" and not rest[1].startswith("-"):
        return True
    if rest[:2] == ["plan", "update"]:
        parsed = parse(rest[2:], {"--json"}, {"--expected-revision", "--proposal-id"})
        if parsed is not None and 1 <= len(parsed.positional) <= 2:
            return parsed.positional[1:] in ([], ["-"])
    return None


def run_local(args: list[str]) -> int | None:
    """The fast path in this process (a one-shot command, or the warm process's)."""
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
        return guarded(lambda: plan_update(database, parsed), lambda: database or "default")
    return None


def natural(text: str | None) -> int | None:
    """A count given on the command line; None when absent; -1 when not a natural number."""
    if text is None:
        return None
    return int(text) if text.isdigit() and len(text) < 19 else -1


def plan_show(database: str | None, parsed: Parsed) -> int | None:
    """The stored view, straight from SQLite; None when the full path must answer."""
    from planledger.storage.file_paths import (
        files_root,
        position_file,
        read_position,
        spawn_back_fill,
    )
    from planledger.storage.schema import SCHEMA_VERSION
    from planledger.storage.settings import SettingsError, database_settings, home_dir

    revision = natural(parsed.options.get("--revision"))
    if revision == -1:
        return None  # the full path explains the usage error
    try:
        settings = database_settings(database)
    except SettingsError:
        return None
    path = settings.env.get("SQLITE_DBNAME")
    if path is None or not Path(path).is_file():
        return None
    session_id = parsed.positional[0]
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2)
        try:
            if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                return None
            reached, last = conn.execute(
                "SELECT (SELECT position FROM planledger_tracking WHERE projection = 'views'), "
                "(SELECT COALESCE(MAX(rowid), 0) FROM stored_events)"
            ).fetchone()
            if reached != last:
                return None  # the views are behind: the full path catches them up
            row = conn.execute(
                "SELECT view, corrupt, revision FROM planledger_plan_views WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            view_json = row[0] if row else None
            if row is not None and row[1] is None and revision not in (None, row[2]):
                found = conn.execute(
                    "SELECT view FROM planledger_plan_history WHERE session_id = ? "
                    "AND revision = ? AND kind = 'committed'",
                    (session_id, revision),
                ).fetchone()
                view_json = found[0] if found else None
        finally:
            conn.close()
    except sqlite3.Error:
        return None  # locked, unreadable: the full path reports it properly
    root = files_root(home_dir(), settings)
    if read_position(position_file(root)) < reached:
        spawn_back_fill(root, settings)  # a home that is behind: its files follow meanwhile
    if row is None:
        return None  # unknown or invalid session: the full path says which
    if row[1] is not None or view_json is None:
        return None  # corrupt, or no such revision: the full path reports it
    view: dict[str, Any] = json.loads(view_json)
    if "--json" in parsed.flags:
        sys.stdout.write(json.dumps(view, indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK
    from rich.console import Console

    from planledger.clients.plan_panel import plan_panel_of

    Console(highlight=False, soft_wrap=True).print(plan_panel_of(view))
    return EXIT_OK


def plan_update(database: str | None, parsed: Parsed) -> int:
    """Propose and decide one plan; the exit code says what became of it."""
    from planledger.clients import services
    from planledger.clients.payload import read_payload

    expected = natural(parsed.options.get("--expected-revision"))
    if expected == -1:
        fail("--expected-revision must be a whole number >= 0", EXIT_INVALID)
    session_id = parsed.positional[0]
    source = parsed.positional[1] if len(parsed.positional) > 1 else "-"
    payload = read_payload(source)
    if isinstance(payload, dict) and expected is not None:
        payload = {**payload, "expected_revision": expected}
    service = services.acquire(database)
    try:
        decision = service.submit(
            session_id, payload, client="cli", proposal_id=parsed.options.get("--proposal-id")
        )
    finally:
        for warning in services.release(service):
            warn(warning)
    if "--json" in parsed.flags:
        data = decision.model_dump(mode="json")
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        from rich.console import Console

        from planledger.clients import render

        explanation = payload.get("explanation") if isinstance(payload, dict) else None
        Console(highlight=False, soft_wrap=True).print(render.decision_text(decision, explanation))
    if decision.status == "conflict":
        return EXIT_CONFLICT
    return EXIT_REJECTED if decision.status == "rejected" else EXIT_OK
