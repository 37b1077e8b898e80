"""Other processes that read, parse and tokenize changed files while this one writes the
index (`sync`, for a build of many megabytes).

Why processes: parsing and tokenizing are Python, which a second thread runs only while the
writer waits on SQLite; a process runs them on another core meanwhile. Two of them: one
parses ~2-3x slower than the writer writes (a build of 100 MB of transcripts: ~20 s of CPU
parsing, ~8 s writing), so one left the writer waiting. Why not `multiprocessing`: its spawn
start imports the caller's main module again (a script without a `__main__` guard would run
twice), and fork is unsafe in a process with threads.

Protocol: the parent writes pickled `sync._parse_one` argument tuples on a child's stdin,
one file at a time, and closes it when there are no more; the child answers each, in order,
on its stdout with a pickled `("ok", result)`, or `("error", exception)` and stops. A
transcript (an append-only file) is answered part by part, as it is read (`("part", part)`
for each, then `("ok", None)`): a long one, of any size, is parsed here too, with bounded
memory. A child is given its next file when it answers one (`AHEAD` files queued at most),
so a slow file holds no other worker back, and answers are taken as they come
(`ParsePool.results`), not in the files' order. A thread per child reads its answers into a
queue of one: about one answer per child is held beyond the one being written. A child is in a session of its own (Ctrl-C
reaches the parent, which stops it) and is killed when the parent's block ends, even by an
error. A child that cannot start or dies answers nothing more: the parent parses its files
itself.
"""

from __future__ import annotations

import os
import pickle
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence

_GONE = object()  # the worker stopped answering (crashed, or never started)
# The child imports what the parent imported: its module path is the parent's (`-m` would
# put the working folder first, where another checkout of miniclaw may be).
_START = ("import sys; sys.path[:] = sys.argv[1:]; "
          "from miniclaw.index.parse_child import main; main()")
AHEAD = 2  # files sent to a child and not yet answered, at most
WORKERS = 2  # children of a build, at most (fewer on a machine of fewer cores)


class ParseWorker:
    """A child process answering the files it is sent, in order (`next_result`)."""

    def __init__(self) -> None:
        self.proc = None
        if not sys.executable:  # an embedded interpreter: no program to start
            return
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _START, *sys.path], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError:  # no interpreter to run: `next_result` says so
            self.proc = None

    def send(self, task: tuple) -> bool:
        """Give the child a file to parse; False when it cannot take it (it stopped)."""
        if self.proc is None:
            return False
        try:
            pickle.dump(task, self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self.proc.stdin.flush()
            return True
        except (OSError, ValueError):  # the pipe broke (it stopped), or was closed
            return False

    def finish(self) -> None:
        """No more files: the child ends once it has answered those it was sent."""
        if self.proc is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def next_result(self) -> tuple[object, bool]:
        """(the next answer, whether it ends its file: False for a transcript's part but its
        end, `(None, True)`), `(_GONE, True)` when the child stopped answering; an exception
        the parse raised there is raised here."""
        if self.proc is None:
            return _GONE, True
        try:
            status, value = pickle.load(self.proc.stdout)
        except Exception:  # EOF, a cut message: the child died
            return _GONE, True
        if status == "error":
            raise value
        return value, status != "part"

    def close(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass


class ParsePool:
    """`count` workers parsing `tasks` (`results`)."""

    def __init__(self, count: int) -> None:
        self.workers = [ParseWorker() for _ in range(count)]
        self.answers: queue.Queue = queue.Queue(maxsize=1)
        self.readers: list[threading.Thread] = []
        self.stopping = threading.Event()

    def results(self, tasks: Sequence[tuple]) -> Iterator[tuple[int, object, bool]]:
        """(index of a task, an answer, whether the task is done: `ParseWorker.next_result`)
        as the workers answer, every task to its end; a task whose worker stopped ends with
        `_GONE` (the caller parses the rest itself). An exception a parse raised is raised
        here."""
        todo = iter(range(len(tasks)))
        pending: dict[int, list[int]] = {}  # worker -> tasks sent, in order
        for number, worker in enumerate(self.workers):
            pending[number] = []
            for _ in range(AHEAD):
                self._give(number, worker, tasks, todo, pending)
            reader = threading.Thread(target=self._read, args=(number, worker),
                                      name="miniclaw-parse-reader", daemon=True)
            reader.start()
            self.readers.append(reader)
        while any(pending.values()):
            number, (found, finished) = self.answers.get()
            if found is _GONE:  # stopped: what it was sent is parsed here
                for index in pending.pop(number):
                    yield index, _GONE, True
                continue
            if isinstance(found, BaseException):
                raise found
            if not finished:  # a part: its file goes on
                yield pending[number][0], found, False
                continue
            index = pending[number].pop(0)
            self._give(number, self.workers[number], tasks, todo, pending)
            yield index, found, True
        for index in todo:  # every worker stopped before the end
            yield index, _GONE, True

    @staticmethod
    def _give(number: int, worker: ParseWorker, tasks, todo, pending) -> None:
        """Send the worker the next task, or tell it there is none; a worker that cannot
        take it leaves it to the others (or the caller)."""
        index = next(todo, None)
        if index is None:
            worker.finish()
        elif worker.send(tasks[index]):
            pending[number].append(index)
        else:
            worker.finish()
            pending.setdefault(number, []).append(index)  # answered _GONE by its reader

    def _read(self, number: int, worker: ParseWorker) -> None:
        """A worker's answers, into the queue, until it stops (then `_GONE`)."""
        while not self.stopping.is_set():
            try:
                found, finished = worker.next_result()
            except Exception as exc:  # the parse failed there: the caller raises it
                found, finished = exc, True
            self._put((number, (found, finished)))
            if found is _GONE or isinstance(found, BaseException):
                return

    def _put(self, item) -> None:
        while not self.stopping.is_set():
            try:
                self.answers.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def close(self) -> None:
        """Stop every worker and reader (even in the middle of a build)."""
        self.stopping.set()
        for worker in self.workers:
            worker.close()  # a reader blocked on its pipe sees it end
        for reader in self.readers:
            reader.join()


def worker_count() -> int:
    """How many children a build starts: one per core beside the writer's, up to `WORKERS`."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(WORKERS, (cores or 1)))
