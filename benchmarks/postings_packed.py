"""Prototype for issue 15: the writer's cost of postings as one row each (today's format)
against packed blocks, one row per (term, block of a build's postings), from a built index.

Reads an index's postings in the order a build produces them (entry by entry), then writes
them into a fresh SQLite file both ways, alternated, in this one process: CPU and wall
seconds, rows, file size. The packed table is `blocks (term_id, block, entry_ids BLOB,
tf_exceptions BLOB)`: the entry ids of a term's postings in the block as array('I') bytes,
and (position, tf) pairs, array('I'), only for postings whose tf is not 1 (most are 1). The
blocks are decoded again and checked to hold exactly the index's postings, and the df of
the most common terms is read both ways (a search's corpus statistics).

Not a change of the index: `sync.py` and `index.py` still write and read rows. Run on an
index of `transcripts_speed.py`'s files (keep its cache folder), e.g.:
  .venv/bin/python benchmarks/postings_packed.py INDEX.sqlite3 --rounds 2
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import time
from array import array
from collections import defaultdict
from itertools import chain, repeat
from operator import itemgetter

ROW_BATCH = 3000  # rows of one multi-row INSERT, as sync._Rows writes them
ROWS_SORTED = 100_000  # as sync.SORTED_POSTINGS


def read_entries(path: str) -> list[tuple[int, array, list[int] | None]]:
    """(entry id, its term ids, their tfs or None when all are 1), in entry order."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    entries, current, ids, tfs = [], None, array("I"), []
    for term, entry, tf in conn.execute(
            "SELECT term_id, entry_id, tf FROM postings ORDER BY entry_id, term_id"):
        if entry != current:
            if current is not None:
                entries.append((current, ids, None if tfs.count(1) == len(tfs) else tfs))
            current, ids, tfs = entry, array("I"), []
        ids.append(term)
        tfs.append(tf)
    if current is not None:
        entries.append((current, ids, None if tfs.count(1) == len(tfs) else tfs))
    conn.close()
    return entries


def fresh(folder: str, name: str, page_size: int) -> sqlite3.Connection:
    conn = sqlite3.connect(os.path.join(folder, name), isolation_level=None)
    conn.execute(f"PRAGMA page_size = {page_size}")  # before the file's first page
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA cache_size = -65536")
    return conn


def _insert(conn, table: str, rows: list[tuple], batch: int) -> None:
    width = len(rows[0]) if rows else 1
    marks = "(" + ", ".join("?" * width) + ")"
    full = len(rows) - len(rows) % batch
    sql = f"INSERT INTO {table} VALUES " + ", ".join([marks] * batch)
    conn.executemany(sql, (list(chain.from_iterable(rows[start:start + batch]))
                           for start in range(0, full, batch)))
    conn.executemany(f"INSERT INTO {table} VALUES {marks}", rows[full:])


def write_rows(conn, entries) -> int:
    """Today's writer: (term, entry, tf) rows, gathered, sorted by term, multi-row inserts."""
    conn.execute("CREATE TABLE postings (term_id INTEGER NOT NULL, entry_id INTEGER NOT NULL,"
                 " tf INTEGER NOT NULL, PRIMARY KEY (term_id, entry_id)) WITHOUT ROWID")
    conn.execute("BEGIN")
    pending: list[tuple] = []
    for entry, ids, tfs in entries:
        pending.extend(zip(ids, repeat(entry), tfs or repeat(1)))
        if len(pending) >= ROWS_SORTED:
            pending.sort(key=itemgetter(0))
            _insert(conn, "postings", pending, ROW_BATCH)
            pending.clear()
    pending.sort(key=itemgetter(0))
    _insert(conn, "postings", pending, ROW_BATCH)
    conn.execute("COMMIT")
    return conn.execute("SELECT COUNT(*) FROM postings").fetchone()[0]


def write_blocks(conn, entries, per_block: int) -> int:
    """Packed: a block's postings grouped by term in Python, one row per (term, block)."""
    conn.execute("CREATE TABLE blocks (term_id INTEGER NOT NULL, block INTEGER NOT NULL,"
                 " entry_ids BLOB NOT NULL, tf_exceptions BLOB,"
                 " PRIMARY KEY (term_id, block)) WITHOUT ROWID")
    conn.execute("BEGIN")
    written, block = 0, 0

    def new():
        return defaultdict(lambda: array("I")), defaultdict(lambda: array("I")), 0

    lists, odd, count = new()

    def flush():
        rows = [(term, block, lists[term].tobytes(), odd[term].tobytes() if term in odd else None)
                for term in sorted(lists)]
        _insert(conn, "blocks", rows, 2000)
        return len(rows)

    for entry, ids, tfs in entries:
        if tfs is None:
            for term in ids:
                lists[term].append(entry)
        else:
            for term, tf in zip(ids, tfs):
                found = lists[term]
                if tf != 1:
                    odd[term].extend((len(found), tf))
                found.append(entry)
        count += len(ids)
        if count >= per_block:
            written += flush()
            block += 1
            lists, odd, count = new()
    written += flush()
    conn.execute("COMMIT")
    return written


def decoded(conn) -> dict[int, dict[int, int]]:
    """term -> {entry: tf} from the blocks (array.frombytes, in C)."""
    out: dict[int, dict[int, int]] = defaultdict(dict)
    for term, _, raw, odd_raw in conn.execute("SELECT * FROM blocks ORDER BY term_id, block"):
        ids = array("I")
        ids.frombytes(raw)
        tfs = [1] * len(ids)
        if odd_raw is not None:
            odd = array("I")
            odd.frombytes(odd_raw)
            for position, tf in zip(odd[::2], odd[1::2]):
                tfs[position] = tf
        out[term].update(zip(ids, tfs))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("index", help="a built miniclaw index (read only)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--blocks", default="1000000,250000", help="postings per block, comma-separated")
    ap.add_argument("--page-sizes", default="4096", help="SQLite page sizes, comma-separated")
    args = ap.parse_args()
    entries = read_entries(args.index)
    print(f"entries {len(entries)}, postings {sum(len(e[1]) for e in entries)}, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    ways = [(f"rows, page {page}", write_rows, int(page)) for page in args.page_sizes.split(",")]
    ways += [(f"blocks of {n}", lambda c, e, n=int(n): write_blocks(c, e, n), 4096)
             for n in args.blocks.split(",")]
    with tempfile.TemporaryDirectory(prefix="miniclaw-packed-") as folder:
        for round_ in range(args.rounds):
            for name, write, page in ways:
                conn = fresh(folder, f"{round_}-{name}.sqlite3", page)
                cpu, wall = time.process_time(), time.perf_counter()
                rows = write(conn, entries)
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                size = os.path.getsize(os.path.join(folder, f"{round_}-{name}.sqlite3"))
                print(f"{name}: {rows} rows, CPU {cpu:.2f} s, wall {wall:.2f} s, "
                      f"{size / 1048576:.0f} MB, load {os.getloadavg()[0]:.1f}", flush=True)
                if round_ == 0 and write is not write_rows:
                    check(args.index, conn)
                conn.close()


def check(index: str, conn) -> None:
    """The blocks hold exactly the index's postings; df read both ways for common terms."""
    source = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    want: dict[int, dict[int, int]] = defaultdict(dict)
    for term, entry, tf in source.execute("SELECT term_id, entry_id, tf FROM postings"):
        want[term][entry] = tf
    got = decoded(conn)
    assert got == want, "the packed blocks differ from the index's postings"
    common = [t for (t,) in source.execute(
        "SELECT term_id FROM postings GROUP BY term_id ORDER BY COUNT(*) DESC LIMIT 20")]
    start = time.perf_counter()
    for term in common:
        source.execute("SELECT COUNT(*) FROM postings WHERE term_id = ?", (term,)).fetchone()
    rows_ms = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    for term in common:
        sum(len(raw) // 4 for (raw,) in conn.execute(
            "SELECT entry_ids FROM blocks WHERE term_id = ?", (term,)))
    blocks_ms = (time.perf_counter() - start) * 1000
    print(f"  checked: identical postings; df of the 20 commonest terms: rows {rows_ms:.1f} ms,"
          f" blocks {blocks_ms:.1f} ms", flush=True)
    source.close()


if __name__ == "__main__":
    main()
