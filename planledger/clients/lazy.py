"""Consoles made on first use, so that a command pays only for what it runs (a hook
or `plan update --json` never imports rich or the renderings)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from rich.console import Console


class _LazyConsole:
    def __init__(self, **options: Any) -> None:
        self.options = options
        self.console: Console | None = None

    def made(self) -> Console:
        if self.console is None:
            from rich.console import Console

            self.console = Console(**self.options)
        return self.console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.made(), name)

    # Special methods are looked up on the type, never through __getattr__.
    def __enter__(self) -> Console:
        return self.made().__enter__()

    def __exit__(self, *exc_info: Any) -> None:
        self.made().__exit__(*exc_info)


def lazy_console(**options: Any) -> Console:
    """A rich `Console(**options)`, made when first used."""
    return cast("Console", _LazyConsole(**options))
