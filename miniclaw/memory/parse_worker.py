"""Another process that reads, parses and tokenizes changed files while this one writes the
index (`sync`, for a build of many megabytes).

Why a process: parsing and tokenizing are Python, which a second thread runs only while the
writer waits on SQLite; a process runs them on another core meanwhile. Why not
`multiprocessing`: its spawn start imports the caller's main module again (a script without
a `__main__` guard would run twice), and fork is unsafe in a process with threads.

Protocol: the parent writes one pickled list of `sync._parse_one` argument tuples on the
child's stdin and closes it; the child answers each, in order, on its stdout with a pickled
`("ok", result)`, or `("error", exception)` and stops. The pipe is the read-ahead: the child
waits while the parent has not taken its last answer, so about one file's rows are held
beyond the file being written. The child is in a session of its own (Ctrl-C reaches the
parent, which stops it) and is killed when the parent's block ends, even by an error. A
child that cannot start or dies answers nothing more: the parent parses the rest itself.
"""

from __future__ import annotations

import pickle
import subprocess
import sys

_GONE = object()  # the worker stopped answering (crashed, or never started)
# The child imports what the parent imported: its module path is the parent's (`-m` would
# put the working folder first, where another checkout of miniclaw may be).
_START = ("import sys; sys.path[:] = sys.argv[1:]; "
          "from miniclaw.memory.parse_worker import main; main()")


class ParseWorker:
    """A child process answering `tasks` in order (`next_result`)."""

    def __init__(self, tasks: list[tuple]) -> None:
        self.proc = None
        if not sys.executable:  # an embedded interpreter: no program to start
            return
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _START, *sys.path], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError:  # no interpreter to run: `next_result` says so
            return
        try:
            pickle.dump(tasks, self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self.proc.stdin.close()
        except OSError:  # it stopped at once (the pipe broke): `next_result` says so
            pass

    def next_result(self):
        """The next task's result, `_GONE` when the child stopped answering; an exception
        the task raised there is raised here."""
        if self.proc is None:
            return _GONE
        try:
            status, value = pickle.load(self.proc.stdout)
        except Exception:  # EOF, a cut message: the child died
            return _GONE
        if status == "error":
            raise value
        return value

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


def main() -> None:
    from miniclaw.memory.sync import _parse_one

    tasks = pickle.load(sys.stdin.buffer)
    out = sys.stdout.buffer
    try:
        for args in tasks:
            try:
                answer = ("ok", _parse_one(*args))
            except Exception as exc:
                pickle.dump(("error", exc), out)
                out.flush()
                return
            pickle.dump(answer, out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()
    except BrokenPipeError:  # the parent stopped reading: nothing left to do
        pass
