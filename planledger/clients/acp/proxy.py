"""`planledger acp -- AGENT_CMD ...`: a real ACP agent behind the ledger.

Every JSON-RPC line is relayed both ways byte for byte (requests, responses, notifications,
permission requests, fs and terminal calls, cancellation, extension methods), except the agent's
`plan` updates: each is recorded in ledger session `acp-<sessionId>`, and the editor receives the
committed plan instead, or nothing when the ledger rejected it. The plan updates an agent sends
while it answers a `session/load` replay what it sent before: they are relayed as they are and
not recorded again. If the ledger cannot be used
(database down), plan updates pass through unchanged and the reason goes to stderr: a broken
ledger never stops the agent's work. The proxy exits with the agent's status.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Callable, Sequence

from planledger.clients.acp.recording import PlanRecorder, is_plan_update, open_recorder
from planledger.clients.acp.stdio import LINE_LIMIT, stdio_streams
from planledger.service import PlanLedger

EXIT_GRACE_SECONDS = 5.0
PLAN_MARK = b"plan"
LOAD_MARK = b"session/load"


def exit_status(returncode: int) -> int:
    """The agent's exit status, the shell's way for a signal (128 + its number)."""
    return returncode if returncode >= 0 else 128 - returncode


class Proxy:
    def __init__(self, open_service: Callable[[], PlanLedger]) -> None:
        self._open_service = open_service
        self._recorder: asyncio.Task[PlanRecorder] | None = None
        # `session/load` requests the agent has not answered: request id -> ACP session id
        self._loading: dict[str, str] = {}

    async def run(self, command: Sequence[str]) -> int:
        try:
            process = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                limit=LINE_LIMIT,
            )
        except OSError as error:
            print(f"planledger: error: cannot start {command[0]!r}: {error}", file=sys.stderr)
            return 2
        assert process.stdin is not None and process.stdout is not None
        self._recorder = asyncio.create_task(asyncio.to_thread(open_recorder, self._open_service))
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, self._forward_signal, process, signum)
        editor_in, editor_out = await stdio_streams(limit=LINE_LIMIT)
        to_agent = asyncio.create_task(self._editor_to_agent(editor_in, process))
        try:
            await self._agent_to_editor(process.stdout, editor_out, process)
            return exit_status(await process.wait())
        finally:
            to_agent.cancel()
            if process.returncode is None:
                process.kill()
                await process.wait()

    @staticmethod
    def _forward_signal(process: asyncio.subprocess.Process, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signum)

    async def _editor_to_agent(
        self, editor_in: asyncio.StreamReader, process: asyncio.subprocess.Process
    ) -> None:
        agent_in = process.stdin
        assert agent_in is not None
        try:
            while line := await editor_in.readline():
                if LOAD_MARK in line:
                    self._note_load(line)
                agent_in.write(line)
                await agent_in.drain()
        except (ConnectionError, OSError):
            return  # the agent is gone: its exit ends the proxy
        with contextlib.suppress(ConnectionError, OSError):
            agent_in.write_eof()
        # The editor hung up: give the agent a moment to finish, then stop it.
        try:
            await asyncio.wait_for(process.wait(), EXIT_GRACE_SECONDS)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()

    async def _agent_to_editor(
        self,
        agent_out: asyncio.StreamReader,
        editor_out: asyncio.StreamWriter,
        process: asyncio.subprocess.Process,
    ) -> None:
        while line := await agent_out.readline():
            if self._loading:
                self._note_answer(line)
            if PLAN_MARK in line:
                relayed = await self._plan_line(line)
                if relayed is None:
                    continue
                line = relayed
            try:
                editor_out.write(line)
                await editor_out.drain()
            except (ConnectionError, OSError):  # the editor is gone: stop the agent
                with contextlib.suppress(ProcessLookupError):
                    process.terminate()
                return

    def _note_load(self, line: bytes) -> None:
        """The editor asks the agent to load a session: its replay is coming."""
        with contextlib.suppress(ValueError):
            message = json.loads(line)
            if not isinstance(message, dict) or message.get("method") != "session/load":
                return
            params = message.get("params")
            session_id = params.get("sessionId") if isinstance(params, dict) else None
            if "id" in message and isinstance(session_id, str):
                self._loading[json.dumps(message["id"])] = session_id

    def _note_answer(self, line: bytes) -> None:
        """The agent answered a `session/load`: what it sends next is new again."""
        with contextlib.suppress(ValueError):
            message = json.loads(line)
            if isinstance(message, dict) and "id" in message and "method" not in message:
                self._loading.pop(json.dumps(message["id"]), None)

    async def _plan_line(self, line: bytes) -> bytes | None:
        """The line to forward in place of `line` (itself unless it is a plan update)."""
        try:
            message = json.loads(line)
        except ValueError:
            return line
        if not is_plan_update(message):
            return line
        if message["params"].get("sessionId") in self._loading.values():
            return line  # a replay of what was recorded when the agent first sent it
        assert self._recorder is not None
        try:
            recorder = await self._recorder
            relayed = await asyncio.to_thread(recorder.relay, message)
        except Exception as error:
            first = (str(error).strip().splitlines() or [""])[0][:300]
            print(
                f"planledger acp: cannot record the plan ({type(error).__name__}: {first}); "
                "forwarding it unrecorded",
                file=sys.stderr,
            )
            return line
        if relayed is None:
            return None
        return (json.dumps(relayed, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


async def serve_proxy(command: Sequence[str], open_service: Callable[[], PlanLedger]) -> int:
    """Run `command` as the agent between this process's stdio and it; its exit status."""
    return await Proxy(open_service).run(command)
