"""Which context texts a hook already gave an agent's session, kept beside the ledger
(`$PLANLEDGER_HOME/hooks/<agent>/<session>`, one digest a line): an agent may hold a text that
its transcript does not show yet (Claude Code writes a SessionStart context to the transcript
only with the next message, after a `/compact` in the same process has fired SessionStart
again)."""

from __future__ import annotations

import hashlib
import re

from planledger.storage.settings import home_dir

NOT_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def first_time(agent: str, session: str, text: str) -> bool:
    """True the first time `text` is given to `session` (and remembered as given)."""
    folder = home_dir() / "hooks" / agent
    path = folder / NOT_NAME.sub("-", session)[:200]
    digest = hashlib.sha256(text.encode()).hexdigest()
    try:
        if digest in path.read_text().split():
            return False
    except OSError:
        pass
    folder.mkdir(parents=True, exist_ok=True)
    with path.open("a") as file:
        file.write(digest + "\n")
    return True
