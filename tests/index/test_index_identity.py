"""Entry identity from content: a moved entry is an update in place, never a delete and an
insert; data derived from an entry's text is kept while that text is indexed."""

from __future__ import annotations

import sqlite3

from miniclaw.entries.tokenizer import index_terms
from tests.conftest import long_term, write
from tests.index.test_index import assert_index_matches_files, indexed_rows, parsed_rows

BULLETS = [f"fact number {i} about topic{i % 37}" for i in range(1000)]


def entry_ids(index_path) -> dict[str, int]:
    with sqlite3.connect(index_path) as conn:
        return dict(conn.execute("SELECT content, id FROM entries"))


def test_a_line_inserted_at_the_top_reindexes_one_entry(store, workspace):
    path = write(workspace, "memory/MEMORY.md", long_term(("2026-01-05", BULLETS)))
    first = store.index.refresh()
    assert first.entries_added == 1000
    before = entry_ids(store.index.path)
    lines = path.read_text().splitlines(keepends=True)
    heading = lines.index("## 2026-01-05\n")
    lines.insert(heading + 1, "- a brand new first fact\n")
    path.write_text("".join(lines))

    report = store.index.refresh()

    assert (report.entries_added, report.entries_removed, report.entries_moved) == (1, 0, 1000)
    assert report.postings_added == len(set(index_terms("a brand new first fact")))
    after = entry_ids(store.index.path)
    assert {text: after[text] for text in before} == before  # same rows, updated in place
    assert indexed_rows(store.index.path) == parsed_rows(workspace)


async def test_repeated_text_in_one_file_keeps_one_row_per_occurrence(store, workspace):
    path = write(workspace, "memory/MEMORY.md",
                 long_term(("2026-01-05", ["apple pie", "bread loaf", "apple pie"])))
    store.index.refresh()
    path.write_text(long_term(("2026-01-05", ["bread loaf", "apple pie"])))
    report = store.index.refresh()
    assert (report.entries_added, report.entries_removed) == (0, 1)
    assert indexed_rows(store.index.path) == parsed_rows(workspace)
    await assert_index_matches_files(store, workspace, words=["apple", "bread"])


def test_a_new_heading_date_updates_the_entry_in_place(store, workspace):
    path = write(workspace, "memory/MEMORY.md", long_term(("2026-01-05", ["apple pie"])))
    store.index.refresh()
    path.write_text(long_term(("2026-02-01", ["apple pie"])))
    report = store.index.refresh()
    assert (report.entries_added, report.entries_removed, report.entries_moved) == (0, 0, 1)
    assert indexed_rows(store.index.path) == parsed_rows(workspace)
    with sqlite3.connect(store.index.path) as conn:
        assert conn.execute("SELECT date FROM entries").fetchall() == [("2026-02-01",)]
