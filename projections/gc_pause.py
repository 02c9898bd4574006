"""Bulk passes (rebuild, verify) allocate many short-lived objects while holding a batch of
events alive: the cyclic collector would re-scan that batch again and again (about a fifth of
a rebuild's time). It is paused for one batch at a time; reference counting still frees
everything that is not in a cycle, and the collector runs as usual after the batch."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection inside the block (unless it was already off)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
