"""`planledger import codex|claude PATH...`: a progress bar while reading, then a summary."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console, Group
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TimeElapsedColumn,
    TransferSpeedColumn,
)
from rich.table import Table
from rich.text import Text

from planledger.importers.parallel import shares_wanted
from planledger.importers.report import ImportReport
from planledger.importers.run import Agent, import_paths
from planledger.service import PlanLedger

EXIT_UNREADABLE = 2
PROGRESS_MIN_BYTES = 8 << 20  # a shorter import is over before a bar would help


def run_import(
    service: PlanLedger,
    agent: Agent,
    paths: Sequence[Path],
    *,
    as_json: bool,
    out: Console,
    err: Console,
) -> int:
    """Import (a large run spread over the machine's cores), print the report (JSON or a table;
    the first errors of each file listed, the rest counted) and return the exit code: 2 when
    some file or line could not be read, else 0."""
    with _progress(err) as on_progress:
        shares = shares_wanted(service.database)
        report = import_paths(service, agent, paths, on_progress=on_progress, shares=shares)
    if as_json:
        print_json(out, report.model_dump(mode="json"))
    else:
        out.print(summary(report))
        for error in report.errors:
            err.print(f"{error.path}:{error.line}: {error.message}", markup=False)
    return EXIT_UNREADABLE if report.errors else 0


def print_json(out: Console, data: object) -> None:
    """`out.print_json` of `data`: highlighted on a terminal, else written as it writes it
    (indented, not ASCII-escaped) without its highlighter's pass (half a second for the report
    of a few hundred sessions)."""
    if out.is_terminal:
        out.print_json(json.dumps(data))
    else:
        out.file.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        out.file.flush()


@contextmanager
def _progress(err: Console) -> Iterator[_Bar | None]:
    if not err.is_terminal:
        yield None
        return
    progress = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )
    with progress:
        yield _Bar(progress)


class _Bar:
    """Shows the bar once an import is long enough to need one."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.task = progress.add_task("reading", total=None, visible=False)

    def __call__(self, done: int, total: int) -> None:
        description = "recording" if done >= total else "reading"
        self.progress.update(
            self.task,
            completed=done,
            total=total,
            description=description,
            visible=total >= PROGRESS_MIN_BYTES,
        )


def summary(report: ImportReport) -> Group:
    """One row per session, then the totals."""
    parts: list[Table | Text] = []
    if report.sessions:
        table = Table(box=None, pad_edge=False)
        widest = max(len(s.session_id) for s in report.sessions)
        table.add_column("session", no_wrap=True, min_width=widest)
        for column in _COUNTS:
            table.add_column(column, justify="right", no_wrap=True, min_width=len(column))
        table.add_column("source", overflow="ellipsis", no_wrap=True, min_width=12)
        for s in report.sessions:
            source = Path(s.source).name + (f" +{len(s.files) - 1}" if len(s.files) > 1 else "")
            table.add_row(
                s.session_id,
                str(s.calls),
                Text(str(s.committed), style="green" if s.committed else ""),
                Text(str(s.rejected), style="red" if s.rejected else ""),
                str(s.skipped),
                source,
            )
        parts.append(table)
    totals = {name: sum(getattr(s, name) for s in report.sessions) for name in _COUNTS}
    parts.append(
        Text(
            f"{len(report.sessions)} session(s), {totals['calls']} plan call(s): "
            f"{totals['committed']} committed, {totals['rejected']} rejected, "
            f"{totals['skipped']} already recorded",
            style="bold",
        )
    )
    if report.errors:
        count = max(report.error_count, len(report.errors))
        lines = f"{count:,} unreadable line{'s' if count > 1 else ''}"
        listed = "listed" if count == len(report.errors) else "the first of each file listed"
        parts.append(Text(f"{lines}, {listed} on stderr", style="red"))
    return Group(*parts)


_COUNTS = ("calls", "committed", "rejected", "skipped")
