"""Modules and consoles made on first use, so that a command pays only for what it runs (a hook
or `plan update --json` never imports rich or the renderings)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from rich.console import Console


def lazy_module(name: str) -> ModuleType:
    """`name`, imported when one of its attributes is first read (the standard library's
    `importlib.util.LazyLoader` recipe)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}")
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


class _LazyConsole:
    def __init__(self, **options: Any) -> None:
        self.options = options
        self.console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if self.console is None:
            from rich.console import Console

            self.console = Console(**self.options)
        return getattr(self.console, name)


def lazy_console(**options: Any) -> Console:
    """A rich `Console(**options)`, made when first used."""
    return cast("Console", _LazyConsole(**options))
