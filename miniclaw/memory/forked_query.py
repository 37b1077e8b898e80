"""A one-shot command's model in a forked child, on the other core.

In one process the GIL lets one thread run Python at a time, so a one-shot hybrid search's
model load (onnxruntime's import, the query graph's session, the vocabulary, the query's
embedding: ~95 ms of CPU on L's machine) and its own work meanwhile (the sync, reading every
vector, BM25) took turns instead of overlapping. A child forked when the search starts
loads the model and embeds the query while the parent does the rest, and sends the vector
(1,536 bytes) through a pipe: the same code on the same graph, so the same vector, bit for
bit. Texts the sync found without a vector are embedded by the child too, on request
(`embedder`), so the model is never loaded twice. The parent says when it needs nothing
more (`finish`); the child then ends. benchmarks/README.md has the figures.

Only where a fork is safe and pays:
- Linux (on macOS a fork without exec is unsafe once system frameworks are loaded);
- a one-shot command (`collector.one_shot`): a long-lived one (chat, the MCP server) loads
  the model once and keeps it;
- one thread in the process, native ones counted (`/proc/self/task`): a fork copies only
  the calling thread, and a lock another thread held would stay held in the child;
- a process that has not loaded the model (`auto` loads it to know it can);
- after numpy's import (`start` imports it): the child would import it again, +90 ms of CPU.

The child runs nothing of the parent's but the model: it ends with `os._exit` (no exit hook,
no buffer or connection of the parent's touched), its standard streams are /dev/null (a
shell reading the command's output never waits for it), and Ctrl-C ends it quietly (unless
the parent ignores it). Any failure (no pipe, thread or fork, a child that dies, answers
short or not within `TIMEOUT`, or not within `GRACE` of the moment the search needs it: a
child stopped or frozen) leaves the parent to embed with its own model, as it did before.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import select
import signal
import struct
import sys
import threading
import time
from typing import NoReturn

from miniclaw import collector
from miniclaw.memory import embedding

log = logging.getLogger(__name__)

TIMEOUT = 60.0  # seconds for an answer: a first load optimizes and saves a graph; a hang, never
# Seconds the child still has once the search has done its own work and waits for it
# (`needed`), and more per text asked of it: a child stopped (SIGSTOP, a cgroup freezer) made
# the search wait TIMEOUT before embedding the query itself. A first load, optimizing and
# saving the query graph, takes well under it.
GRACE, GRACE_PER_TEXT = 2.0, 0.1
_ROW = embedding.DIM * 4  # a float32 vector's bytes
_COUNT = struct.Struct("<I")  # a request's bytes, an answer's rows


class _Child:
    """A forked child that embeds: the query first, then memories' texts on request. It
    ends by itself when its requests close (`finish`), and a thread of the parent's reaps
    it then (nobody waits for its exit). An answer is read by one thread at a time: the
    search asks for texts only after the query's vector came."""

    def __init__(self, pid: int, answers: int, requests: int) -> None:
        self.pid, self.answers, self.requests = pid, answers, requests
        self.lock = threading.Lock()  # its state, between the parent's threads
        self.failed = self.sent = self.ended = False
        self.needed: float | None = None  # when the search began to wait for the query
        threading.Thread(target=self._reap, name="miniclaw-reaper", daemon=True).start()

    def _reap(self) -> None:
        try:  # it ended: a zombie until reaped, so its pid stays its own for `fail`'s kill
            os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:  # reaped already (SIGCHLD ignored by the program)
            pass
        with self.lock:
            self.ended = True
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass

    def _wait(self, fd: int, event: int, since: float | None, grace: float) -> bool:
        """Whether `fd` is ready for `event` within `TIMEOUT`, and within `grace` seconds of
        `since` (None: of `needed`, once the search needs the answer)."""
        poll = select.poll()
        poll.register(fd, event)
        end = time.monotonic() + TIMEOUT
        while True:
            waited = self.needed if since is None else since
            left = min(end, waited + grace if waited is not None else end) - time.monotonic()
            if left <= 0:
                return False
            if poll.poll(min(left, 0.05) * 1000):  # a slice: `needed` may be set meanwhile
                return True

    def read(self, size: int, since: float | None = None, grace: float = GRACE) -> bytes | None:
        """`size` bytes of its answer, or None (it ended, or kept silent past `_wait`'s
        bounds)."""
        data = b""
        while len(data) < size:
            if self.answers < 0 or not self._wait(self.answers, select.POLLIN, since, grace):
                return None
            chunk = os.read(self.answers, size - len(data))
            if not chunk:
                return None
            data += chunk
        return data

    def ask(self, data: bytes, since: float, grace: float) -> bool:
        """Whether the request was written whole in time (it may not read it)."""
        os.set_blocking(self.requests, False)
        while data:
            if self.requests < 0 or not self._wait(self.requests, select.POLLOUT, since, grace):
                return False
            data = data[os.write(self.requests, data):]
        return True

    def embed(self, texts: list[str]):
        """The texts' vectors as a memory's (as `Embedder.embed`), or None when it failed."""
        import numpy as np

        request = json.dumps(texts).encode()
        since, grace = time.monotonic(), GRACE + GRACE_PER_TEXT * len(texts)  # needed now
        try:
            if self.ask(_COUNT.pack(len(request)) + request, since, grace):
                head = self.read(_COUNT.size, since, grace)
                if head and _COUNT.unpack(head)[0] == len(texts):
                    data = self.read(len(texts) * _ROW, since, grace)
                    if data is not None:
                        return np.frombuffer(data, dtype=np.float32).reshape(-1, embedding.DIM)
        except OSError as exc:
            log.debug("the model's child failed: %s", exc)
        self.fail()
        return None

    def fail(self) -> None:
        """It failed (answered short or not in time): ended, its work left to the parent."""
        with self.lock:
            if not self.failed:
                self.failed = True
                if not self.ended:
                    try:
                        os.kill(self.pid, signal.SIGKILL)
                    except ProcessLookupError:  # reaped already (SIGCHLD ignored)
                        pass
            self.close_requests()
            self.close_answers()

    def close_requests(self) -> None:
        if self.requests >= 0:
            os.close(self.requests)
            self.requests = -1

    def close_answers(self) -> None:
        if self.answers >= 0:
            os.close(self.answers)
            self.answers = -1


class _Model:
    """The child as the model `embed_missing` needs, the process's own if the child fails."""

    name, dim = embedding.NAME, embedding.DIM

    def __init__(self, child: _Child) -> None:
        self.child = child

    def embed(self, texts):
        vectors = None if self.child.failed else self.child.embed(list(texts))
        return embedding.load().embed(texts) if vectors is None else vectors


_STARTED: dict[str, _Child] = {}  # query text -> its child


def start(text: str) -> None:
    """Fork a child that loads the model and embeds `text` as a query, where that is safe
    and pays (above); else do nothing."""
    if not (sys.platform == "linux" and collector.is_one_shot()) or text in _STARTED \
            or embedding.is_loaded():
        return
    embedding.import_numpy()
    if len(os.listdir("/proc/self/task")) != 1:  # another thread, Python's or native (BLAS's)
        return
    embedding.check_saved()  # here: the child's stderr is /dev/null
    ends: list[int] = []
    try:
        answers, answered = os.pipe()
        ends += (answers, answered)
        asked, requests = os.pipe()
        ends += (asked, requests)
        pid = os.fork()
    except OSError as exc:  # no descriptor, memory or process left: the parent embeds
        log.debug("no child for the model: %s", exc)
        for end in ends:
            os.close(end)
        return
    if pid == 0:
        _child(text, asked, answered, (answers, requests))
    os.close(answered)
    os.close(asked)
    try:
        _STARTED[text] = _Child(pid, answers, requests)
    except RuntimeError as exc:  # no thread to reap it: it ends at once, unanswered
        log.debug("no reaper for the model's child: %s", exc)
        os.close(answers)
        os.close(requests)


def _child(text: str, asked: int, answered: int, parents: tuple[int, int]) -> NoReturn:
    code = 1
    try:
        gc.disable()  # it lives ~0.1 s: a collection would only copy the parent's pages
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends it with the parent
        null = os.open(os.devnull, os.O_RDWR)
        for stream in (0, 1, 2):
            os.dup2(null, stream)
        for end in parents:
            os.close(end)
        _write(answered, _embedded(text))
        while head := _read(asked, _COUNT.size):  # a request: texts; none: the parent is done
            texts = json.loads(_read(asked, _COUNT.unpack(head)[0]))
            vectors = embedding.load().embed(texts)
            _write(answered, _COUNT.pack(len(vectors)) + vectors.tobytes())
        code = 0
    except BaseException:  # noqa: BLE001 (whatever it is, the parent embeds)
        pass
    finally:
        os._exit(code)


def _embedded(text: str) -> bytes:
    """The child's first work: the query's vector as float32 bytes."""
    return embedding.load().embed_query(text).tobytes()


def _write(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def _read(fd: int, size: int) -> bytes:
    """`size` bytes, or fewer at the end of the input."""
    data = b""
    while len(data) < size and (chunk := os.read(fd, size - len(data))):
        data += chunk
    return data


def result(text: str):
    """The vector a child sent for `text` (waited for), or None when no child was started
    for it or it sent no whole vector (it is then ended)."""
    child = _STARTED.get(text)
    if child is None or child.failed or child.sent:
        return None
    try:
        data = child.read(_ROW)
    except OSError as exc:
        log.debug("the model's child failed: %s", exc)
        data = None
    if data is None:
        child.fail()
        return None
    child.sent = True
    import numpy as np

    return np.frombuffer(data, dtype=np.float32)


def needed(text: str) -> None:
    """The search has done its own work and now waits for `text`'s vector: the child has
    `GRACE` seconds more to send it, else it is ended and the parent embeds it."""
    child = _STARTED.get(text)
    if child is not None and child.needed is None:
        child.needed = time.monotonic()


def embedder(text: str) -> _Model | None:
    """The child started for `text` as a model for memories' texts, if there is one."""
    child = _STARTED.get(text)
    return None if child is None or child.failed or child.requests < 0 else _Model(child)


def finish(text: str) -> None:
    """Nothing more to ask of `text`'s child: its requests close, and it ends after its
    answers (`result` still reads the query's vector if it has not yet; the answers' end is
    left open, to the process's exit)."""
    child = _STARTED.get(text)
    if child is not None:
        with child.lock:
            child.close_requests()
