"""A one-shot command's query embedded by a forked child, on the other core.

In one process the GIL lets one thread run Python at a time, so a one-shot hybrid search's
model load (onnxruntime's import, the query graph's session, the vocabulary, the query's
embedding: ~95 ms of CPU on L's machine) and its own work meanwhile (the sync, reading every
vector, BM25) took turns instead of overlapping. A child forked when the search starts
loads the model and embeds the query while the parent does the rest, and sends the vector
(1,536 bytes) through a pipe: the same code on the same graph, so the same vector, bit for
bit (benchmarks/README.md has the figures).

Only where a fork is safe and pays:
- Linux (on macOS a fork without exec is unsafe once system frameworks are loaded);
- a one-shot command (`collector.one_shot`): a long-lived one (chat, the MCP server) loads
  the model once and keeps it;
- one thread in the process: a fork copies only the calling thread, and a lock another
  thread held would stay held in the child;
- a process that has not loaded the model (`auto` loads it to know it can);
- after numpy's import (`start` imports it): the child would import it again otherwise, +90
  ms of CPU.

The child runs nothing of the parent's but the model: it ends with `os._exit` (no buffer of
the parent's flushed twice, no exit hook, no connection closed), and Ctrl-C ends it quietly.
Any failure (no fork, a child that dies or sends less than a vector, or none within
`TIMEOUT`) leaves the parent to embed the query itself, as it did before.
"""

from __future__ import annotations

import gc
import logging
import os
import select
import signal
import sys
import threading
from typing import NoReturn

from miniclaw import collector
from miniclaw.memory import embedding

log = logging.getLogger(__name__)

TIMEOUT = 60.0  # seconds: a first load optimizes and saves the graph (~0.5 s); a hang, never
_SIZE = embedding.DIM * 4  # a float32 vector's bytes
_STARTED: dict[str, tuple[int, int]] = {}  # query text -> (child's pid, read end of its pipe)


def start(text: str) -> None:
    """Fork a child that embeds `text` as a query, where that is safe and pays (above);
    else do nothing."""
    if not (sys.platform == "linux" and collector.is_one_shot()
            and threading.active_count() == 1) or text in _STARTED or embedding.is_loaded():
        return
    embedding.import_numpy()
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError as exc:  # no memory or process left for it: the parent embeds
        log.debug("no child for the query's embedding: %s", exc)
        os.close(read_end)
        os.close(write_end)
        return
    if pid == 0:
        _child(text, read_end, write_end)
    os.close(write_end)
    _STARTED[text] = (pid, read_end)


def _embedded(text: str) -> bytes:
    """The child's work: the query's vector as float32 bytes."""
    return embedding.load().embed_query(text).tobytes()


def _child(text: str, read_end: int, write_end: int) -> NoReturn:
    code = 1
    try:
        gc.disable()  # it lives ~0.1 s: a collection would only copy the parent's pages
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends it with the parent, quietly
        os.close(read_end)
        data = _embedded(text)
        while data:
            data = data[os.write(write_end, data):]
        code = 0
    except BaseException:  # noqa: BLE001 (whatever it is, the parent embeds the query)
        pass
    finally:
        os._exit(code)


def result(text: str):
    """The vector a child sent for `text` (waited for), or None when no child was started
    for it or it sent no whole vector; the child is reaped either way."""
    started = _STARTED.pop(text, None)
    if started is None:
        return None
    pid, read_end = started
    data = b""
    try:
        while len(data) < _SIZE:
            if not select.select([read_end], [], [], TIMEOUT)[0]:
                os.kill(pid, signal.SIGKILL)
                break
            chunk = os.read(read_end, _SIZE - len(data))
            if not chunk:  # it ended without a whole vector
                break
            data += chunk
    finally:
        os.close(read_end)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:  # reaped already (SIGCHLD ignored by the program)
            pass
    if len(data) < _SIZE:
        log.debug("the query's child sent %d of %d bytes: embedded here", len(data), _SIZE)
        return None
    import numpy as np

    return np.frombuffer(data, dtype=np.float32)
