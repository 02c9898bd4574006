"""The ACP agent (`planledger acp`): the viewer of ledger sessions, or, with an agent command
after `--`, the proxy that records a real agent's plans."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from planledger.service import PlanLedger


def run_acp(open_service: Callable[[], PlanLedger], agent_command: Sequence[str]) -> int:
    """Serve ACP on stdin/stdout until the editor (or the agent) is done; the exit status."""
    if agent_command:
        from planledger.clients.acp.proxy import serve_proxy

        return asyncio.run(serve_proxy(agent_command, open_service))
    from planledger.clients.acp.viewer import serve_viewer

    asyncio.run(serve_viewer(open_service()))
    return 0
