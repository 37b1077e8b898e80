"""Any text a person could have written merges whole, or is refused with nothing changed."""

from __future__ import annotations

import asyncio
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniclaw.entries.tokenizer import tokenize
from miniclaw.errors import MiniclawError

LINES = st.one_of(st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=30),
                  st.sampled_from(["## 10:00:00 UTC", "---", "<!-- @tag: x -->", "- item",
                                   "  indented", "# Title", "(added at 2026-01-01T00:00:00Z)",
                                   "~ merged from memory/MEMORY.md:3", ""]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(LINES, min_size=1, max_size=4).map("\n".join),
       st.lists(st.sampled_from(["a", "b-c", "d_e"]), max_size=3))
def test_copies_of_any_text_merge_into_one_or_are_refused_unchanged(text, tags):
    from miniclaw.memory import MemoryStore
    from miniclaw.tidy import merge, report

    async def work(ws: Path):
        async with MemoryStore(ws, index_path=ws.parent / "index.sqlite3") as store:
            try:
                first = await store.add_daily_note(text, when=datetime(2026, 11, 2, 8, tzinfo=timezone.utc),
                                                   tags=tags)
            except MiniclawError:
                return None  # text the writer refuses (empty, unclosed tag): nothing to merge
            if first is None:
                return None
            await store.add_daily_note(text, when=datetime(2026, 11, 9, 8, tzinfo=timezone.utc))
            await store.add_long_term(text, category="preference")
            found = await report.build(store)
            mine = [c for c in found.duplicates if first.ref in {e.ref for e in c.entries}]
            if not tokenize(first.text):  # punctuation only: not a fact, never a cluster
                assert not mine
                return None
            assert mine, "three copies of one text are one cluster"
            before = {p.name: p.read_bytes() for p in (ws / "memory").iterdir()}
            done = await merge.apply(store, mine)
            after = {p.name: p.read_bytes() for p in (ws / "memory").iterdir()}
            return first, done[0], before, after, await report.entries_in_scope(store, None)

    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        (ws / "memory").mkdir(parents=True)
        out = asyncio.run(work(ws))
    if out is None:
        return
    first, outcome, before, after, (entries, _) = out
    if outcome.refused:
        assert after == before
        return
    merged = outcome.merged
    # a last `~ merged from` line is an earlier merge's: the new places are added to it
    lines = first.text.split("\n")
    body = "\n".join(lines[:-1]) if len(lines) > 1 and lines[-1].startswith("~ merged from ") \
        else first.text
    assert merged.text.rsplit("\n~ merged from ", 1)[0] == body
    assert merged.date.isoformat() == "2026-11-02" and merged.category == "preference"
    assert set(first.tags) <= set(merged.tags)
    assert [e.text for e in entries].count(merged.text) == 1
    assert first.text not in [e.text for e in entries]  # the copies are gone
