"""Worker processes forked from this one, each applying one function to the messages it is
sent, in order: bulk passes spread over the machine's cores without a process start-up (a
fork shares this process's loaded modules and objects; nothing is imported or pickled but the
messages and the answers).

A forked worker must not touch what it shares with its parent beyond reading it (connections,
locks held by other threads): a worker that writes opens connections of its own. It ends without
running its parent's exit handlers.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

# multiprocessing is imported where workers are made: a command that makes none (a hook, a
# plan update) never pays for it.
if TYPE_CHECKING:
    from multiprocessing.connection import Connection

STOP_WAIT = 1.0  # seconds an idle worker is given to end before it is terminated
# Workers run at their parent's priority. (Lowered, they lost the CPU to the database server's
# processes, which serve their reads, and to the parent, always to the same worker: a rebuild
# of the bulk bench's store on PostgreSQL, 2 cores, ran about 13% slower at niceness 10.)


class WorkerFailed(Exception):
    """A worker died, or raised: `error` is its error rebuilt here, where it can be (its type,
    message and attributes), else None (the message says what it was)."""

    def __init__(self, message: str, error: BaseException | None = None) -> None:
        super().__init__(message)
        self.error = error


def can_fork() -> bool:
    import multiprocessing

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
        import multiprocessing

        context = multiprocessing.get_context("fork")
        self.pipes: list[Connection] = []
        self.processes: list[Any] = []
        self.outstanding: list[int] = []  # each worker's messages not answered yet
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
            self.outstanding.append(0)

    def send(self, messages: Sequence[Any]) -> None:
        """One message to each worker, in the workers' order. A worker may be sent its next
        message before it answers the last: it takes them in order."""
        for index, (pipe, message) in enumerate(zip(self.pipes, messages, strict=True)):
            try:
                pipe.send(message)
            except OSError as error:
                raise WorkerFailed(f"a worker process died: {error!r}") from None
            self.outstanding[index] += 1

    def receive(self) -> list[Any]:
        """Each worker's answer to its oldest message not answered yet, in the workers' order.
        Answers are taken as they come: a worker that finishes first is not held up sending
        its answer (through a pipe smaller than it) until the others have sent theirs."""
        answers: list[Any] = [None] * len(self.pipes)
        waiting = {pipe: index for index, pipe in enumerate(self.pipes)}
        from multiprocessing.connection import wait

        while waiting:
            for pipe in cast("list[Connection]", wait(list(waiting))):
                index = waiting.pop(pipe)
                try:
                    kind, answer = pipe.recv()
                except (EOFError, OSError) as error:
                    raise WorkerFailed(f"a worker process died: {error!r}") from None
                self.outstanding[index] -= 1
                if kind == "error":
                    raise failure(answer)
                answers[index] = answer
        return answers

    def stop(self) -> None:
        """Tell every worker to end, without waiting for it: an idle one ends when its pipe
        closes, a busy one is ended (what it was doing is no longer wanted). `close` then
        waits for them; in between, this process can go on while they exit."""
        for pipe, process, outstanding in zip(
            self.pipes, self.processes, self.outstanding, strict=True
        ):
            pipe.close()
            if outstanding and process.is_alive():
                process.terminate()

    def close(self) -> None:
        """Stop every worker (see `stop`) and wait until each has ended."""
        self.stop()
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
    gc.freeze()  # the parent's objects: never scanned here, so never copied by the collector
    if not collect:  # what the work keeps holds no cycles: no collection at all
        gc.disable()
    import pickle

    try:
        state = make_state()
        while True:
            try:
                message = pipe.recv()
            except (EOFError, OSError):  # the parent closed its end: done
                break
            try:
                answer: tuple[str, Any] = ("done", work(state, message))
            except Exception as error:  # said to the parent, which decides what follows
                answer = ("error", portable(error))
            try:
                pipe.send(answer)
            except (pickle.PicklingError, TypeError, AttributeError) as error:
                pipe.send(("error", portable(error)))
    finally:  # nothing of the parent's runs here (exit handlers, flushes of shared streams)
        os._exit(0)


Portable = tuple[str, type[BaseException] | None, dict[str, Any]]


def portable(error: BaseException) -> Portable:
    """An error as its text, type and attributes (an error's constructor may take other
    arguments than its message, so it is not pickled as it is); no type where it won't pickle."""
    import pickle

    attributes = dict(vars(error))
    try:
        pickle.dumps((type(error), attributes))
    except Exception:
        return f"{type(error).__name__}: {error}", None, {}
    return str(error), type(error), attributes


def failure(sent: Portable) -> WorkerFailed:
    text, kind, attributes = sent
    if kind is None:
        return WorkerFailed(text)
    error = kind.__new__(kind)
    error.args = (text,)
    error.__dict__.update(attributes)
    return WorkerFailed(f"{kind.__name__}: {text}", error)
