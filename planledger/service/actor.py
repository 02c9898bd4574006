"""Who sends a proposal: the name of the HTTP token that sent it, or, for every local client
(the CLI, hooks, importers, MCP, ACP, the Python API), the operating-system user."""

from __future__ import annotations

import functools
import getpass
import os


@functools.cache
def local_actor() -> str:
    """The operating-system user of this process (`uid:N` where no name is known)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME/USER: a container's uid
        return f"uid:{os.getuid()}"


def actor_or_local(actor: str | None) -> str:
    return local_actor() if actor is None else actor
