"""`planledger acp -- AGENT_CMD ...`: a real ACP agent behind the ledger.

Every JSON-RPC line is relayed both ways byte for byte (requests, responses, notifications,
permission requests, fs and terminal calls, cancellation, extension methods), except the agent's
`plan` updates: each is recorded in ledger session `acp-<sessionId>`, and the editor receives the
committed plan instead, or nothing when the ledger rejected it. The plan updates an agent sends
while it answers a `session/load` replay what it sent before: they are relayed as they are and
not recorded again. An agent that sends no `plan` updates has its plan read from its chat recording
(Gemini CLI, `gemini_fallback`) or from the todo lists its tool calls stored (OpenCode,
`relayed_todos`). If the ledger cannot be used
(database down), plan updates pass through unchanged and the reason goes to stderr: a broken
ledger never stops the agent's work. The proxy exits with the agent's status.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from planledger.clients.acp.gemini_fallback import (
    TOOL_CALL_PREFIX,
    RecordingFollower,
    finished_todo_call,
)
from planledger.clients.acp.recording import PlanRecorder, is_plan_update, open_recorder
from planledger.clients.acp.relayed_todos import record_todos, stored_todos
from planledger.clients.acp.stdio import LINE_LIMIT, stdio_streams
from planledger.importers.gemini import gemini_config
from planledger.service import PlanLedger

EXIT_GRACE_SECONDS = 5.0
PLAN_MARK = b"plan"
LOAD_MARK = b"session/load"
PROMPT_MARK = b"session/prompt"
TODO_MARK = TOOL_CALL_PREFIX.encode()
STORED_MARK = b'"todos"'  # a tool call's stored todo list (OpenCode's todowrite)
RECORDING_WAIT, RECORDING_POLL = 2.0, 0.02  # seconds: how long a finished call may take to show


def exit_status(returncode: int) -> int:
    """The agent's exit status, the shell's way for a signal (128 + its number)."""
    return returncode if returncode >= 0 else 128 - returncode


class Proxy:
    def __init__(self, open_service: Callable[[], PlanLedger]) -> None:
        self._open_service = open_service
        self._recorder: asyncio.Task[PlanRecorder] | None = None
        # `session/load` requests the agent has not answered: request id -> ACP session id
        self._loading: dict[str, str] = {}
        # `session/prompt` requests of sessions with todo calls and no plan updates (the
        # recording fallback's): request id -> ACP session id
        self._prompts: dict[str, str] = {}
        self._todo_sessions: set[str] = set()  # a write_todos call seen
        self._planned: set[str] = set()  # sent `plan` updates: no fallback needed
        self._follower: RecordingFollower | None = None
        self._following: dict[str, list[asyncio.Task[None]]] = {}  # calls awaited, by session
        self._catching = asyncio.Lock()

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
                elif PROMPT_MARK in line:
                    self._note_prompt(line)
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
            answered = self._answered_prompt(line) if self._prompts else None
            if answered is not None:  # the turn's plan, before the turn's end
                await asyncio.gather(*self._following.pop(answered, []))
                await self._catch_up(answered, editor_out)
            if PLAN_MARK in line:
                relayed = await self._plan_line(line)
                if relayed is None:
                    continue
                line = relayed
            elif TODO_MARK in line:
                self._follow_todo_call(line, editor_out)
            stored = stored_todos(_json(line)) if STORED_MARK in line else None
            try:
                editor_out.write(line)
                await editor_out.drain()
                if stored is not None:
                    await self._record_stored(stored, editor_out)
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

    def _note_prompt(self, line: bytes) -> None:
        message = _json(line)
        if not isinstance(message, dict) or message.get("method") != "session/prompt":
            return
        params = message.get("params")
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if "id" in message and isinstance(session_id, str):
            self._prompts[json.dumps(message["id"])] = session_id

    def _answered_prompt(self, line: bytes) -> str | None:
        """The session of the prompt `line` answers, when the fallback follows it."""
        message = _json(line)
        if not isinstance(message, dict) or "id" not in message or "method" in message:
            return None
        session_id = self._prompts.pop(json.dumps(message["id"]), None)
        return session_id if session_id in self._todo_sessions else None

    def _follow_todo_call(self, line: bytes, editor_out: asyncio.StreamWriter) -> None:
        """A finished write_todos call of a session without plan updates: read it from the
        recording once the recording holds it (in the background: the relay goes on)."""
        finished = finished_todo_call(_json(line))
        if finished is None:
            return
        session_id, call_id = finished
        if session_id in self._planned or session_id in self._loading.values():
            return  # the agent sends plans itself, or replays calls already read
        self._todo_sessions.add(session_id)
        task = asyncio.create_task(self._catch_up(session_id, editor_out, call_id))
        self._following.setdefault(session_id, []).append(task)
        task.add_done_callback(lambda done: _discard(self._following, session_id, done))

    async def _catch_up(
        self, session_id: str, editor_out: asyncio.StreamWriter, call_id: str | None = None
    ) -> None:
        """Read the agent's recording of `session_id` (once it holds `call_id`, or after
        `RECORDING_WAIT` seconds); send the editor its plan if it moved."""
        assert self._recorder is not None
        try:
            recorder = await self._recorder
            if self._follower is None:
                config = gemini_config(os.environ, Path.home())
                self._follower = RecordingFollower(recorder.service, config)
            follower = self._follower
            if call_id is not None:
                deadline = asyncio.get_running_loop().time() + RECORDING_WAIT
                while not await asyncio.to_thread(follower.holds, session_id, call_id):
                    if asyncio.get_running_loop().time() > deadline:
                        break
                    await asyncio.sleep(RECORDING_POLL)
            async with self._catching:
                update = await asyncio.to_thread(follower.catch_up, session_id)
        except Exception as error:
            first = (str(error).strip().splitlines() or [""])[0][:300]
            print(
                f"planledger acp: cannot read the agent's recording ({type(error).__name__}: "
                f"{first}); its plan goes unrecorded",
                file=sys.stderr,
            )
            return
        if update is not None:
            with contextlib.suppress(ConnectionError, OSError):  # the relay sees the editor gone
                editor_out.write(_line(update))
                await editor_out.drain()

    async def _record_stored(
        self, stored: tuple[str, str, list[Any]], editor_out: asyncio.StreamWriter
    ) -> None:
        """A todo list the agent's tool call stored (OpenCode): recorded, the plan sent on."""
        session_id, call_id, todos = stored
        if session_id in self._planned or session_id in self._loading.values():
            return
        assert self._recorder is not None
        try:
            recorder = await self._recorder
            update = await asyncio.to_thread(
                record_todos, recorder.service, session_id, call_id, todos
            )
        except Exception as error:
            first = (str(error).strip().splitlines() or [""])[0][:300]
            print(
                f"planledger acp: cannot record the todo list ({type(error).__name__}: {first})",
                file=sys.stderr,
            )
            return
        if update is not None:
            editor_out.write(_line(update))
            await editor_out.drain()

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
        self._planned.add(message["params"].get("sessionId"))
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
        return _line(relayed)


def _json(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _discard(tasks: dict[str, list[asyncio.Task[None]]], key: str, task: Any) -> None:
    with contextlib.suppress(KeyError, ValueError):
        tasks[key].remove(task)


def _line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


async def serve_proxy(command: Sequence[str], open_service: Callable[[], PlanLedger]) -> int:
    """Run `command` as the agent between this process's stdio and it; its exit status."""
    return await Proxy(open_service).run(command)
