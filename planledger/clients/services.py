"""The service a one-shot command opens, or the one a warm process keeps open across commands
(planledger.clients.warm): the commands themselves do not know which."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from planledger.service import PlanLedger

_kept: dict[str | None, PlanLedger] | None = None


def keep_open() -> None:
    """From now on, services stay open between commands (a warm process)."""
    global _kept
    _kept = {}


def acquire(database: str | None) -> PlanLedger:
    from planledger.service import open_planledger

    if _kept is None:
        return open_planledger(database)
    if database not in _kept:
        _kept[database] = open_planledger(database)
    return _kept[database]


def release(service: PlanLedger) -> list[str]:
    """Done with the service for this command; returns the warnings the command should print
    (plan.json files that could not be written)."""
    if _kept is None:
        service.close()
        return service.warnings
    if service.files is not None:
        service.files.settle()
        warnings = service.warnings
        service.files.warnings.clear()
        return warnings
    return []


def close_all() -> None:
    if _kept is not None:
        for service in _kept.values():
            service.close()
        _kept.clear()
