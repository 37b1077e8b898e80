"""Python's cyclic garbage collector around imports that make objects for the life of the
process, in the `miniclaw` command only.

An import makes tens of thousands of objects (classes, functions, module dicts) that live
as long as the process. The collector walks them at each collection of their generation
and finds no garbage: Typer's and click's at start-up (~10 ms of a one-shot command), and
numpy's and onnxruntime's in a semantic search (one collection of 15-17 ms in a one-shot
hybrid search on L). So it is paused while they are made; every object is then frozen
(moved where the collector never looks again) and it runs as before. Not in a program that
imports miniclaw (tests, an application): freezing would keep that program's garbage of
cycles alive. Nor, for imports made while a command runs (numpy's and onnxruntime's, at the
first semantic search), in a long-lived command (chat, the MCP server): by then earlier
turns may have left garbage of cycles the collector has not reached, and the freeze would
keep it for the life of the process; only a one-shot command (`one_shot`) freezes them. An
object frozen is still freed when nothing refers to it any more.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterator


def is_program() -> bool:
    """Whether this process is the `miniclaw` command (its console script, or `python -m
    miniclaw`), not a program that imports it."""
    main_module = sys.modules.get("__main__")
    spec = getattr(main_module, "__spec__", None)
    return ((spec is not None and spec.name == "miniclaw.__main__")
            or os.path.basename(getattr(main_module, "__file__", None) or "") == "miniclaw")


#: The collector's first threshold in a one-shot command (Python's default: 700).
ONE_SHOT_GC_THRESHOLD = 20_000
_one_shot = False


def one_shot() -> None:
    """This process is a one-shot read that ends with `os._exit` (the CLI's `FAST_EXIT`).
    It imports the index, ranker and scoring modules and makes little garbage of cycles:
    collections every 700 allocations walked those imports' objects through each generation
    and freed next to nothing (~9 M instructions, 2% of a search on L beside three stores:
    benchmarks/README.md). They still run, rarer, so memory stays bounded (the same peak RSS
    on L); and imports made while it runs are frozen too (`paused_for_imports`)."""
    global _one_shot
    _one_shot = True
    gc.set_threshold(ONE_SHOT_GC_THRESHOLD)


def is_one_shot() -> bool:
    """Whether `one_shot` was called: the process ends when its one command has."""
    return _one_shot


@contextlib.contextmanager
def paused_for_imports(*, late: bool = False) -> Iterator[None]:
    """Pause the collector for the imports made inside, then freeze every object and resume
    it: in the `miniclaw` command, at its start-up or (`late`) in a one-shot command, and
    when the collector runs (a pause already on, from another thread's imports, is left to
    that thread)."""
    pause = is_program() and gc.isenabled() and (_one_shot or not late)
    if pause:
        gc.disable()
    try:
        yield
    finally:
        if pause:
            gc.freeze()
            gc.enable()
