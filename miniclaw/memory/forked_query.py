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
- one thread in the process: a fork copies only the calling thread, and a lock another
  thread held would stay held in the child;
- a process that has not loaded the model (`auto` loads it to know it can);
- after numpy's import (`start` imports it): the child would import it again, +90 ms of CPU.

The child runs nothing of the parent's but the model: it ends with `os._exit` (no exit hook,
no buffer or connection of the parent's touched), and Ctrl-C ends it quietly. Any failure
(no fork, a child that dies, answers short or not within `TIMEOUT`) leaves the parent to
embed with its own model, as it did before.
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
from typing import NoReturn

from miniclaw import collector
from miniclaw.memory import embedding

log = logging.getLogger(__name__)

TIMEOUT = 60.0  # seconds for an answer: a first load optimizes and saves a graph; a hang, never
_ROW = embedding.DIM * 4  # a float32 vector's bytes
_COUNT = struct.Struct("<I")  # a request's bytes, an answer's rows


class _Child:
    """A forked child that embeds: the query first, then memories' texts on request. Its
    answers are read until both the query's vector was (`result`) and the parent asked
    its last (`finish`); it ends by itself when its requests close, and a thread of the
    parent's reaps it then (nobody waits for its exit)."""

    def __init__(self, pid: int, answers: int, requests: int) -> None:
        self.pid, self.answers, self.requests = pid, answers, requests
        # its state, between the query's thread, the search's and the reaper; an answer is
        # read by one thread at a time without it (the search asks after the query's came)
        self.lock = threading.Lock()
        self.failed = self.sent = self.finished = self.ended = False
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

    def read(self, size: int) -> bytes | None:
        """`size` bytes of its answer, or None (it ended, or kept silent for `TIMEOUT`)."""
        data = b""
        while len(data) < size:
            if not select.select([self.answers], [], [], TIMEOUT)[0]:
                return None
            chunk = os.read(self.answers, size - len(data))
            if not chunk:
                return None
            data += chunk
        return data

    def embed(self, texts: list[str]):
        """The texts' vectors as a memory's (as `Embedder.embed`), or None when it failed."""
        import numpy as np

        if self.failed or self.finished:  # (`embedder` gives no model then)
            return None
        request = json.dumps(texts).encode()
        try:
            _write(self.requests, _COUNT.pack(len(request)) + request)
        except OSError:
            return self.fail()
        head = self.read(_COUNT.size)
        rows = _COUNT.unpack(head)[0] if head else 0
        data = self.read(rows * _ROW) if rows == len(texts) else None
        if data is None:
            return self.fail()
        return np.frombuffer(data, dtype=np.float32).reshape(rows, embedding.DIM)

    def fail(self) -> None:
        """It answered short or not in time: ended, its work left to the parent."""
        with self.lock:
            if self.failed:
                return
            self.failed = True
            if not self.ended:
                os.kill(self.pid, signal.SIGKILL)
            self._close(requests=not self.finished, answers=True)

    def _close(self, *, requests: bool, answers: bool) -> None:
        for end in ([self.requests] if requests else []) + ([self.answers] if answers else []):
            os.close(end)


class _Model:
    """The child as the model `embed_missing` needs, the process's own if the child fails."""

    name, dim = embedding.NAME, embedding.DIM

    def __init__(self, child: _Child) -> None:
        self.child = child

    def embed(self, texts):
        vectors = self.child.embed(list(texts))
        return embedding.load().embed(texts) if vectors is None else vectors


_STARTED: dict[str, _Child] = {}  # query text -> its child


def start(text: str) -> None:
    """Fork a child that loads the model and embeds `text` as a query, where that is safe
    and pays (above); else do nothing."""
    if not (sys.platform == "linux" and collector.is_one_shot()
            and threading.active_count() == 1) or text in _STARTED or embedding.is_loaded():
        return
    embedding.import_numpy()
    answers, answered = os.pipe()
    asked, requests = os.pipe()
    try:
        pid = os.fork()
    except OSError as exc:  # no memory or process left for it: the parent embeds
        log.debug("no child for the query's embedding: %s", exc)
        for end in (answers, answered, asked, requests):
            os.close(end)
        return
    if pid == 0:
        _child(text, asked, answered, (answers, requests))
    os.close(answered)
    os.close(asked)
    _STARTED[text] = _Child(pid, answers, requests)


def _child(text: str, asked: int, answered: int, parents: tuple[int, int]) -> NoReturn:
    code = 1
    try:
        gc.disable()  # it lives ~0.1 s: a collection would only copy the parent's pages
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends it with the parent, quietly
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
    data = child.read(_ROW)
    if data is None:
        log.debug("the query's child sent no vector: embedded here")
        child.fail()
        return None
    with child.lock:
        child.sent = True
        if child.finished:
            child._close(requests=False, answers=True)
    import numpy as np

    return np.frombuffer(data, dtype=np.float32)


def embedder(text: str) -> _Model | None:
    """The child started for `text` as a model for memories' texts, if there is one."""
    child = _STARTED.get(text)
    return None if child is None or child.failed or child.finished else _Model(child)


def finish(text: str) -> None:
    """Nothing more to ask of `text`'s child: its requests close, and it ends after its
    answer (`result` still reads the query's vector if it has not yet)."""
    child = _STARTED.get(text)
    if child is None:
        return
    with child.lock:
        if child.finished or child.failed:
            return
        child.finished = True
        child._close(requests=True, answers=child.sent)
