"""Step ids of the Codex form, derived deterministically from the step text."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from domain.models import MAX_STEP_ID_CHARS

_SLUG_JUNK = re.compile(r"[^a-z0-9]+")
_SUFFIX_ROOM = 6


def slug(text: str) -> str:
    """The id a step text asks for: lowercase words joined by `-`, `step` if none."""
    base = _SLUG_JUNK.sub("-", text.lower()).strip("-")[: MAX_STEP_ID_CHARS - _SUFFIX_ROOM]
    return base.strip("-") or "step"


def derive_step_ids(texts: Sequence[str]) -> list[str]:
    """A slug per text, `-2`, `-3`... for repeats: each id is its slug with the smallest suffix
    not taken before it. Linear: each slug resumes from the suffix it reached last (every
    smaller one is taken, and taken ids are never freed)."""
    return list(_derive(tuple(texts)))


@functools.lru_cache(maxsize=256)
def _derive(texts: tuple[str, ...]) -> tuple[str, ...]:
    # Cached: one proposal's ids are derived when it is read, decided, applied and re-checked
    # by the views, from the same texts.
    used: set[str] = set()
    reached: dict[str, int] = {}
    ids = []
    for text in texts:
        base = slug(text)
        n = reached.get(base, 1)
        candidate = base if n == 1 else f"{base}-{n}"
        while candidate in used:
            n += 1
            candidate = f"{base}-{n}"
        reached[base] = n
        used.add(candidate)
        ids.append(candidate)
    return tuple(ids)
