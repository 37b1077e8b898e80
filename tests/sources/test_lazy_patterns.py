"""The source kinds' patterns are compiled when first used (`text.LazyPattern`): a search
through an up-to-date index parses nothing, and compiling them cost every search beside
the stores ~2 ms. A lazy pattern must answer exactly as the compiled one."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from miniclaw.sources import conkeeper, ef_memory, mnemonic
from miniclaw.text import LazyPattern

KINDS = ("miniclaw.sources.conkeeper", "miniclaw.sources.mnemonic", "miniclaw.sources.ef_memory")
PATTERNS = [value for module in (conkeeper, mnemonic, ef_memory) for value in vars(module).values()
            if isinstance(value, LazyPattern)]
# Lines like the formats' own (headings, stamps, footers, ADR fields, markers) and noise.
LINES = st.one_of(
    st.text(max_size=60),
    st.sampled_from(["# Title", "## ADR-12: Use SQLite", "- **2026-02-14 09:30:00** note",
                     "*Last updated: 2026-02-14 by x*", "**Status:** Accepted | x",
                     "**Date:** 2026-02-01", "<private>", "  </private>", "private: 'true'",
                     "<!-- hidden -->", "<!-- @category: x -->", "```python", "| --- | :-: |",
                     "title: Kayak", "tags: [a, b]", "=======", "<<<<<<< HEAD", "commit abc1234",
                     "PR #12", "2026-02-14-session.md", "docs/ADR-3-x.md"]),
).map(lambda line: line.replace("\n", " "))


def test_every_pattern_of_the_kinds_is_lazy():
    assert len(PATTERNS) == 19


@given(LINES)
def test_a_lazy_pattern_answers_as_the_compiled_one(line):
    for lazy in PATTERNS:
        compiled = re.compile(*lazy._source)
        for method in ("match", "search", "fullmatch"):
            got, want = getattr(lazy, method)(line), getattr(compiled, method)(line)
            assert (got and (got.span(), got.groups())) == (want and (want.span(), want.groups()))
        assert lazy.findall(line) == compiled.findall(line)
        assert lazy.sub("-", line) == compiled.sub("-", line)


def test_importing_the_kinds_compiles_none_of_their_patterns():
    """Before the change every one of the 19 patterns was compiled at import."""
    code = ("import json, re, sys\n"
            "seen = []\n"
            "compile = re._compile\n"
            "re._compile = lambda pattern, flags: seen.append(str(pattern)) or compile(pattern, flags)\n"
            f"for name in {KINDS!r}:\n"
            "    __import__(name)\n"
            "print(json.dumps(seen))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ), check=True)
    compiled = set(json.loads(done.stdout))
    assert not compiled & {p._source[0] for p in PATTERNS}
