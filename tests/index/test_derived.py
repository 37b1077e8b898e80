"""Derived data (the vectors to come) is keyed by text: it survives a move, goes with the
last entry holding its text, and is never asked for again while the text is indexed."""

from __future__ import annotations

import sqlite3

import pytest

from miniclaw.index.derived import DerivedData
from miniclaw.index.sync import content_hash
from tests.conftest import long_term, write

MODEL = "fake-model-v1"


def vector(text: str) -> bytes:
    return text.upper().encode()  # any deterministic function of the text


def compute_missing(derived: DerivedData) -> list[str]:
    """What a retriever does before a search: compute and store what is missing."""
    todo = derived.missing()
    derived.put({h: vector(text) for h, text in todo})
    return sorted(text for _, text in todo)


def derived_rows(index_path) -> int:
    with sqlite3.connect(index_path) as conn:
        return conn.execute("SELECT COUNT(*) FROM derived").fetchone()[0]


def test_values_are_computed_once_per_text_and_survive_a_move(store, workspace):
    path = write(workspace, "memory/MEMORY.md",
                 long_term(("2026-01-05", ["apple pie", "bread loaf", "apple pie"])))
    store.index.refresh()
    derived = DerivedData(store.index, MODEL)
    assert compute_missing(derived) == ["apple pie", "bread loaf"]  # one per distinct text
    assert compute_missing(derived) == []

    path.write_text(long_term(("2026-02-01", ["cloud nine", "apple pie", "bread loaf",
                                              "apple pie"])))
    store.index.refresh()

    assert compute_missing(derived) == ["cloud nine"]  # the moved ones kept theirs
    assert derived.get([content_hash("apple pie"), content_hash("nowhere")]) == {
        content_hash("apple pie"): b"APPLE PIE"}
    with sqlite3.connect(store.index.path) as conn:
        ids = dict(conn.execute("SELECT id, content FROM entries"))
    assert {i: v.decode() for i, v in derived.for_entries(list(ids)).items()} == {
        i: text.upper() for i, text in ids.items()}


@pytest.mark.parametrize("edit", ["removed", "made private", "file deleted"])
def test_a_value_goes_with_the_last_entry_holding_its_text(store, workspace, edit):
    path = write(workspace, "memory/MEMORY.md",
                 long_term(("2026-01-05", ["apple pie", "secret plan"])))
    store.index.refresh()
    derived = DerivedData(store.index, MODEL)
    compute_missing(derived)
    assert derived_rows(store.index.path) == 2
    if edit == "removed":
        path.write_text(long_term(("2026-01-05", ["apple pie"])))
    elif edit == "made private":
        path.write_text(long_term(("2026-01-05", ["apple pie", "<private>secret plan</private>"])))
    else:
        path.unlink()
    store.index.refresh()
    assert derived.get([content_hash("secret plan")]) == {}
    assert derived_rows(store.index.path) == (0 if edit == "file deleted" else 1)


def test_a_value_of_a_text_not_indexed_is_not_stored(store, workspace):
    write(workspace, "memory/MEMORY.md", long_term(("2026-01-05", ["apple pie"])))
    store.index.refresh()
    derived = DerivedData(store.index, MODEL)
    assert derived.put({content_hash("never written"): b"x", content_hash("apple pie"): b"y"}) == 1
    assert derived_rows(store.index.path) == 1


def test_kinds_are_separate_and_a_rebuild_keeps_values_of_texts_still_indexed(store, workspace):
    path = write(workspace, "memory/MEMORY.md", long_term(("2026-01-05", ["apple pie", "old"])))
    store.index.refresh()
    first, second = DerivedData(store.index, MODEL), DerivedData(store.index, "other-model")
    compute_missing(first)
    assert compute_missing(second) == ["apple pie", "old"]
    path.write_text(long_term(("2026-01-05", ["apple pie"])))
    store.index.refresh(rebuild=True)
    assert compute_missing(first) == [] and compute_missing(second) == []
    assert derived_rows(store.index.path) == 2  # "apple pie" of each kind, "old" gone


def test_progress_counts_distinct_texts_whether_complete_or_not(store, workspace):
    path = write(workspace, "memory/MEMORY.md",
                 long_term(("2026-01-05", ["apple pie", "bread loaf", "apple pie"])))
    store.index.refresh()
    derived = DerivedData(store.index, MODEL)
    assert derived.progress() == (0, 2)
    derived.put({content_hash("apple pie"): b"A"})
    assert derived.progress() == (1, 2)
    compute_missing(derived)
    assert derived.progress() == (2, 2)  # more entries than texts: the texts are counted
    path.write_text(long_term(("2026-01-05", ["apple pie", "bread loaf"])))
    store.index.refresh()
    assert derived.progress() == (2, 2)  # one value per entry: complete, nothing counted
    path.write_text(long_term(("2026-01-05", ["apple pie", "bread loaf", "cloud nine"])))
    store.index.refresh()
    assert derived.progress() == (2, 3)


def test_progress_is_counted_again_only_after_a_change_by_anyone(store, workspace):
    """Every warm hybrid search asks: unchanged, the answer is the last one, with no count
    (0.7 ms on L); a commit of another connection or process, or this one's own write, is
    seen at once."""
    write(workspace, "memory/MEMORY.md", long_term(("2026-01-05", ["apple pie", "bread loaf"])))
    store.index.refresh()
    derived = DerivedData(store.index, MODEL)
    assert derived.progress() == (0, 2)
    statements: list[str] = []
    store.index.db.run(lambda conn: conn.set_trace_callback(statements.append))
    try:
        assert derived.progress() == (0, 2)
        assert not [s for s in statements if "COUNT" in s.upper()], statements
        derived.put({content_hash("apple pie"): b"A"})  # this connection's own write
        assert derived.progress() == (1, 2)
        with sqlite3.connect(store.index.path) as other:  # another process's commit
            other.execute("INSERT INTO derived VALUES (?, ?, ?)",
                          (content_hash("bread loaf"), MODEL, b"B"))
        assert derived.progress() == (2, 2)
        with sqlite3.connect(store.index.path) as other:
            other.execute("DELETE FROM derived WHERE hash = ?", (content_hash("apple pie"),))
        assert derived.progress() == (1, 2)
        assert DerivedData(store.index, "another-model").progress() == (0, 2)
        statements.clear()
        assert derived.progress() == (1, 2)
        assert not [s for s in statements if "COUNT" in s.upper()], statements
    finally:
        store.index.db.run(lambda conn: conn.set_trace_callback(None))


def test_a_kinds_count_and_hashes_come_from_an_index_not_its_values(store, workspace):
    """Every hybrid search counts the vectors: with the values read (each spills to an
    overflow page) that took 70 ms on 16,000 of them."""
    write(workspace, "memory/MEMORY.md", long_term(("2026-01-05", ["apple pie", "bread loaf"])))
    store.index.refresh()
    derived = DerivedData(store.index, MODEL)
    compute_missing(derived)
    with sqlite3.connect(store.index.path) as conn:
        for sql in ("SELECT COUNT(*) FROM derived WHERE kind = ?",
                    "SELECT hash FROM derived WHERE kind = ?"):
            plan = " ".join(row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", (MODEL,)))
            assert "COVERING INDEX derived_by_kind" in plan, plan
    hashes = {content_hash(text): vector(text) for text in ("apple pie", "bread loaf")}
    assert derived.count() == 2 and sorted(derived.hashes()) == sorted(hashes)
    assert derived.all() == hashes
    assert DerivedData(store.index, "another-model").all() == {}


def test_joined_gives_the_values_of_one_size_one_after_another(store, workspace):
    """A process's first look at fixed-size values (vectors): their hashes, and the values
    in the same order in one buffer; a value of another size (another format, or damaged)
    apart, by hash."""
    write(workspace, "memory/MEMORY.md",
          long_term(("2026-01-05", ["apple pie", "bread loaf", "odd one", "cake tin"])))
    store.index.refresh()
    derived = DerivedData(store.index, MODEL)
    values = {content_hash("apple pie"): b"A" * 8, content_hash("bread loaf"): b"B" * 8,
              content_hash("odd one"): b"C" * 5, content_hash("cake tin"): bytes(range(8))}
    derived.put(values)
    hashes, joined, others = derived.joined(8)
    assert sorted(hashes) == sorted(h for h, v in values.items() if len(v) == 8)
    assert bytes(joined) == b"".join(values[h] for h in hashes)
    assert others == {content_hash("odd one"): b"C" * 5}
    assert DerivedData(store.index, "another-model").joined(8) == ([], bytearray(), {})


def test_the_values_of_a_few_entries_are_read_without_reading_the_others(store, workspace):
    """A hybrid search asks for the vectors of its few dozen candidates: SQLite must look each
    one up, not read every value of the kind (on L, 25 MB per search). Counted in SQLite's
    virtual-machine steps, so the test does not depend on the machine's speed."""
    texts = [f"note number {i} about topic {i * 7}" for i in range(1500)]
    write(workspace, "memory/MEMORY.md", long_term(("2026-01-05", texts)))
    store.index.refresh()
    derived = DerivedData(store.index, MODEL)
    compute_missing(derived)
    with sqlite3.connect(store.index.path) as conn:
        ids = [i for (i,) in conn.execute("SELECT id FROM entries ORDER BY id LIMIT 40")]

    def steps(work) -> int:
        count = [0]

        def counted(conn):
            conn.set_progress_handler(lambda: count.__setitem__(0, count[0] + 1) or 0, 100)
            try:
                return work()
            finally:
                conn.set_progress_handler(None, 100)

        store.index.db.run(counted)
        return count[0]

    assert len(derived.for_entries(ids)) == 40
    every_value = steps(derived.all)
    few = steps(lambda: derived.for_entries(ids))
    assert few * 2 < every_value
