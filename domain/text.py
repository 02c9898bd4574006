"""Plain text: what a proposal's strings may hold, and their repair before it is recorded.

A string that cannot be stored as JSON text (a NUL, a lone surrogate) is `invalid_text`; a string
holding a control character a terminal acts on is `control_character`: every view prints the
plan's texts as they are, so an escape sequence would clear a screen or retitle a window. Tab and
newline are text, and so is a carriage return that ends a line (CRLF). Both problems are shape
violations: found when a new proposal is read, never re-checked on replay, so a history recorded
before the rule still replays. The recorded texts are repaired (each bad character becomes
U+FFFD), so nothing recorded holds one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from domain.limits import MAX_REPORTED
from domain.models import Violation

REPLACEMENT = "\ufffd"
# C0 but NUL (invalid_text), tab and newline; a CR not ending a line; DEL; C1.
CONTROL = re.compile(r"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)")


def clean_text(text: str) -> str:
    """`text` as plain text: each NUL, lone surrogate and control character replaced."""
    return CONTROL.sub(REPLACEMENT, _storable_text(text))


def is_plain(text: str) -> bool:
    """Whether `text` is plain text as it is (`clean_text` leaves it unchanged)."""
    return text.isprintable() or clean_text(text) == text  # printable: the common case


def _storable_text(text: str) -> str:
    """`text` without NUL characters or lone surrogates (neither can be stored as JSON text)."""
    if "\x00" in text:
        text = text.replace("\x00", REPLACEMENT)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def plain_payload(payload: Mapping[str, Any], problems: list[Violation]) -> Any:
    """The payload with every string (keys too) made plain text; the repairs are violations
    (the first MAX_REPORTED places of each kind named, the rest counted). Recursion is bounded
    by `limits.MAX_DEPTH`, checked before."""
    if _all_plain(payload):
        return payload
    unstorable: list[str] = []
    controls: list[tuple[str, str]] = []  # (where, the first control character)

    def clean(value: Any, where: str) -> Any:
        if isinstance(value, str):
            storable = _storable_text(value)
            if storable != value:
                unstorable.append(where or "the top level")
            found = CONTROL.search(storable)
            if found is None:
                return storable
            controls.append((where or "the top level", found.group()[0]))
            return CONTROL.sub(REPLACEMENT, storable)
        if isinstance(value, Mapping):
            repaired = {}
            for key, item in value.items():
                name = clean_text(key)[:40]
                path = f"{where}.{name}" if where else name
                repaired[clean(key, f"{where}.{name}" if where else "a field name")] = clean(
                    item, path
                )
            return repaired
        if isinstance(value, list | tuple):
            return [clean(item, f"{where}[{index}]") for index, item in enumerate(value)]
        return value

    repaired = clean(payload, "")
    problems += _reported(
        "invalid_text",
        [
            f"The text at {where} contains a NUL character or invalid Unicode"
            for where in unstorable
        ],
        "texts contain a NUL character or invalid Unicode",
        "send plain text.",
    )
    problems += _reported(
        "control_character",
        [
            f"The text at {where} contains the control character U+{ord(char):04X}"
            for where, char in controls
        ],
        "texts contain control characters",
        "send plain text (tab and newline are the only control characters a text may hold).",
    )
    return repaired


def _reported(code: str, found: list[str], counted: str, advice: str) -> list[Violation]:
    """One violation a place, the first MAX_REPORTED of them; the rest counted in one more."""
    problems = [Violation(code=code, message=f"{what}; {advice}") for what in found[:MAX_REPORTED]]
    if len(found) > MAX_REPORTED:
        more = len(found) - MAX_REPORTED
        problems.append(Violation(code=code, message=f"{more} more {counted}; {advice}"))
    return problems


def _all_plain(payload: Mapping[str, Any]) -> bool:
    """Whether every string of the payload (keys too) is plain text as it is: the common case,
    checked without building the repaired copy and the place names `plain_payload` needs."""
    stack: list[Any] = [payload]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is str:
            if not is_plain(value):
                return False
        elif kind is dict:
            for key in value:
                if not is_plain(key):
                    return False
            stack.extend(value.values())
        elif kind is list:
            stack.extend(value)
        elif isinstance(value, Mapping | tuple | list | str):
            return False  # copied into plain dicts, lists and strings by the repair
    return True
