"""Worker processes forked from this one, each applying one function to the messages it is
sent, in order: bulk passes spread over the machine's cores without a process start-up (a
fork shares this process's loaded modules and objects; nothing is imported or pickled but the
messages and the answers).

A forked worker must not touch what it shares with its parent beyond reading it (connections,
locks held by other threads): the function it runs is pure work on its messages.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

STOP_WAIT = 1.0  # seconds an idle worker is given to end before it is terminated
# Workers yield the CPU to their parent: it reads and writes for all of them, so a batch that
# waits for it waits for every worker (on 2 cores, 3 processes would share them evenly).
WORKER_NICENESS = 10


class WorkerFailed(Exception):
    """A worker raised (its error, as text) or died."""


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class ForkedWorkers:
    """`count` forked processes, each running `work(state, message)` on its messages; `state`
    (made by `make_state` in the worker) lives as long as the worker. Workers run without the
    cyclic garbage collector unless `collect` (work whose objects may form cycles)."""

    def __init__(
        self,
        count: int,
        make_state: Callable[[], Any],
        work: Callable[[Any, Any], Any],
        collect: bool = False,
    ) -> None:
        context = multiprocessing.get_context("fork")
        self.pipes: list[Connection] = []
        self.processes: list[Any] = []
        for _ in range(count):
            here, there = context.Pipe()
            parents = [*self.pipes, here]  # ends a worker must close: its pipe ends at EOF
            process = context.Process(
                target=_serve,
                args=(there, parents, make_state, work, collect),
                daemon=True,
                name="planledger-fold",
            )
            process.start()
            there.close()
            self.pipes.append(here)
            self.processes.append(process)

    def send(self, messages: Sequence[Any]) -> None:
        """One message to each worker, in the workers' order."""
        for pipe, message in zip(self.pipes, messages, strict=True):
            try:
                pipe.send(message)
            except OSError as error:
                raise WorkerFailed(f"a worker process died: {error!r}") from None

    def receive(self) -> list[Any]:
        """Each worker's answer to its last message, in the workers' order."""
        answers = []
        for pipe in self.pipes:
            try:
                kind, answer = pipe.recv()
            except (EOFError, OSError) as error:
                raise WorkerFailed(f"a worker process died: {error!r}") from None
            if kind == "error":
                raise WorkerFailed(answer)
            answers.append(answer)
        return answers

    def close(self) -> None:
        """Stop every worker: an idle one ends when its pipe closes, a busy one is ended (what
        it was doing is no longer wanted)."""
        for pipe in self.pipes:
            pipe.close()
        for process in self.processes:
            process.join(STOP_WAIT)
            if process.is_alive():
                process.terminate()
                process.join()


def _serve(
    pipe: Connection,
    parents: list[Connection],
    make_state: Callable[[], Any],
    work: Callable[[Any, Any], Any],
    collect: bool,
) -> None:
    for end in parents:  # the parent's ends, copied by the fork
        end.close()
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICENESS)
    gc.freeze()  # the parent's objects: never scanned here, so never copied by the collector
    if not collect:  # what the work keeps holds no cycles: no collection at all
        gc.disable()
    state = make_state()
    while True:
        try:
            message = pipe.recv()
        except (EOFError, OSError):  # the parent closed its end: done
            return
        try:
            answer = ("done", work(state, message))
        except Exception as error:  # said to the parent, which decides what follows
            answer = ("error", f"{type(error).__name__}: {error}")
        try:
            pipe.send(answer)
        except OSError:  # the parent stopped listening: done
            return
