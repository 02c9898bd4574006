"""The terminal UI's widgets: the history table (the panes are `Static`s fed by `texts`)."""

from __future__ import annotations

from collections.abc import Iterable

from textual.widgets import DataTable

from planledger.clients.tui.texts import history_row
from projections.shapes import HistoryEntry

COLUMNS = ("pos", "time (UTC)", "kind", "rev", "proposal", "details")


class HistoryTable(DataTable[object]):
    """Every proposal, commit and rejection, one row each, appended as they arrive."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self.add_columns(*COLUMNS)

    def append(self, entries: Iterable[HistoryEntry]) -> None:
        self.add_rows(history_row(entry) for entry in entries)
        self.border_title = f"history · {self.row_count} entries"

    def show_row(self, row: int) -> None:
        """Put the cursor on `row` and scroll it into view."""
        if 0 <= row < self.row_count and row != self.cursor_row:
            self.move_cursor(row=row, animate=False)
