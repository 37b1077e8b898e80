"""The child side of `parse_worker`: a process that reads `sync._parse_one` argument
tuples on its stdin and answers each on its stdout (the protocol: parse_worker.py). A module
of its own, run by the command `parse_worker` starts, so the pool (imported by `sync`)
imports nothing of `sync` back.
"""

from __future__ import annotations

import pickle
import sys


def _send(out, answer: tuple) -> None:
    pickle.dump(answer, out, protocol=pickle.HIGHEST_PROTOCOL)
    out.flush()


def main() -> None:
    import gc

    from miniclaw.index.sync import _Parsed, _parse_one, _with_blocks

    # A parse makes millions of short-lived objects and next to no cycles: collecting every
    # 700 allocations walked the imports' and the tokenizer cache's objects again and again
    # (4-6% of the child's CPU). Those are frozen, and collections made rarer.
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)
    out = sys.stdout.buffer
    try:
        while True:
            try:
                args = pickle.load(sys.stdin.buffer)
            except EOFError:  # no more files
                return
            try:
                # The blocks too: a build's files are new, and packing their postings here
                # takes that work off the writer.
                found = _parse_one(*args)
                if isinstance(found, _Parsed):
                    _send(out, ("ok", _with_blocks(found)))
                    continue
                for part in found:  # a transcript: part by part, as it is read
                    _send(out, ("part", _with_blocks(part)))
                _send(out, ("ok", None))
            except Exception as exc:
                _send(out, ("error", exc))
                return
    except BrokenPipeError:  # the parent stopped reading: nothing left to do
        pass
