"""A digest of what the index holds after a build of a fixed workspace: run it with two
versions of the code to show that a change of the write path left the index unchanged.

The workspace (in a temporary folder): L's notes (`search_speed.generate`, 5,000 long-term
entries and 1,095 daily notes), ~12 MB of miniclaw transcripts made from the LongMemEval dev
turns (`transcripts_speed.write_transcripts`), one transcript over `appends.PART_BYTES` with a
`<private>` block open across parts, and messages and a note with disguised tags (fullwidth,
JSON-escaped, an invisible character inside), CJK, accents and acknowledgements.

Printed: the rows' counts; `content`, a digest of the entries (every column, their terms by
text), the postings (term text, entry identity, tf), the vocabulary, the files and the
append tails, independent of row ids and of how postings are packed; `rows`, a digest of
every row as stored, ids and blocks included (equal only when the files were written in the
same order: two parse workers answer in the order they finish, so compare `content`); and
which secret words reached the index (none may).

Run (from the repo root), e.g. against another commit's code:
  PYTHONHASHSEED=0 .venv/bin/python benchmarks/index_digest.py ../shared/data/longmemeval/longmemeval-dev.json
  PYTHONHASHSEED=0 PYTHONPATH=/tmp/old .venv/bin/python benchmarks/index_digest.py ...
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sqlite3
import sys
import tempfile
import time
from array import array
from pathlib import Path

import search_speed
import transcripts_speed

SECRETS = ("secretzebra", "secretfull", "secretescaped", "secretinvisible", "secretnote")
ODD = [("user", "Caf\u00e9 na\u00efve \uff1cprivate\uff1esecretfull\uff1c/private\uff1e shown text here"),
       ("assistant", "escaped <private>secretescaped</private> but this stays"),
       ("user", "\u6771\u4eac\u3067\u5bff\u53f8\u3092\u98df\u3079\u305f I ate sushi in Tokyo 2026-02-14 3.5 10:30"),
       ("assistant", "Sam's r\u00e9sum\u00e9 \u00bd stra\u00dfe \u2019quoted\u2019 Caroline\u2019s plans ok"),
       ("user", "ok"), ("user", "<ide_opened_file>noise</ide_opened_file> x"),
       ("user", "p <pri\u200bvate>secretinvisible</private> q and more words")]


def write_workspace(ws: Path, dataset: Path) -> None:
    search_speed.generate(ws, search_speed.Writer(search_speed.SEED), 5000, 1095)
    turns = transcripts_speed.turns(dataset)
    transcripts_speed.write_transcripts(ws / "sessions", turns, 12 << 20, 2 << 20)
    with open(ws / "sessions" / "big.jsonl", "w", encoding="utf-8") as out:
        n = 0
        while out.tell() < 10 << 20:  # over appends.PART_BYTES: read in parts
            role, text = turns[n % len(turns)]
            out.write(transcripts_speed.line(role, text, "big", n))
            n += 1
            if n in (5000, 9000):  # a private block open across a part boundary
                content = ("before <private> secretzebra one" if n == 5000
                           else "still hidden </private> visible again now")
                out.write(json.dumps({"role": "user", "content": content,
                                      "timestamp": "2026-01-02T00:00:00Z"}) + "\n")
    with open(ws / "sessions" / "odd.jsonl", "w", encoding="utf-8") as out:
        for i, (role, text) in enumerate(ODD * 3):
            out.write(transcripts_speed.line(role, text, "odd", i))
        out.write('{"role": "assistant", "content": "json \\u003cprivate\\u003esecretescaped'
                  '\\u003c/private\\u003e escaped tag", "timestamp": "2026-01-03T00:00:00Z"}\n')
    (ws / "memory" / "2020-01-01.md").write_text(
        "# Daily Note - 2020-01-01\n\n## 10:00:00 UTC\n\nvisible <private>secretnote</private>"
        " words\n\n---\n\n## 11:00:00 UTC\n\n\uff1cprivate\uff1e\nhidden fullwidth\n</private>\n"
        "after caf\u00e9\n", encoding="utf-8")
    for path in ws.rglob("*"):
        if path.is_file():
            os.utime(path, (1_700_000_000, 1_700_000_000))


def digests(index: Path) -> dict:
    conn = sqlite3.connect(index)
    terms = dict(conn.execute("SELECT id, term FROM terms"))
    entries = conn.execute(
        "SELECT id, path, hash, occurrence, ordinal, source, line_start, line_end, date, time,"
        " category, tags, content, meta, length, term_ids FROM entries").fetchall()
    identity = {e[0]: (e[1], e[3], e[2].hex()) for e in entries}
    content = hashlib.sha256()
    for row in sorted((*e[1:15], tuple(sorted(terms[i] for i in array("I", e[15]))))
                      for e in entries):
        content.update(repr(row).encode())
    postings = sorted((term, identity[e], tf) for term, e, tf in conn.execute(
        "SELECT term, entry_id, tf FROM term_postings"))
    content.update(repr(postings).encode())
    content.update(repr(sorted(terms.values())).encode())
    files = sorted(conn.execute("SELECT path, source, size, mtime_ns, racy, day, entry_count,"
                                " term_count, warning FROM files"))
    content.update(repr(files).encode())
    tails = sorted((key, json.loads(value)[:4]) for key, value in conn.execute(
        "SELECT key, value FROM meta WHERE key LIKE 'tail:%'"))  # less the inode
    content.update(repr(tails).encode())
    rows = hashlib.sha256()
    for sql in ("SELECT id, path, source, size, mtime_ns, racy, day, entry_count, term_count,"
                " warning FROM files ORDER BY id", "SELECT * FROM entries ORDER BY id",
                "SELECT * FROM terms ORDER BY id", "SELECT * FROM blocks ORDER BY 1, 2, 3"):
        for row in conn.execute(sql):
            rows.update(repr(row).encode())
    leaks = [word for word in SECRETS
             if conn.execute("SELECT 1 FROM entries WHERE content LIKE ?", (f"%{word}%",)).fetchone()
             or conn.execute("SELECT 1 FROM terms WHERE term LIKE ?", (f"%{word}%",)).fetchone()]
    conn.close()
    return {"entries": len(entries), "terms": len(terms), "postings": len(postings),
            "files": len(files), "tails": len(tails), "content": content.hexdigest()[:16],
            "rows": rows.hexdigest()[:16], "leaks": leaks}


async def build(ws: Path, index: Path) -> float:
    from miniclaw.memory import MemoryStore

    async with MemoryStore(ws, index_path=index) as store:
        start = time.perf_counter()
        await store.refresh_index()
        return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path, help="LongMemEval-format JSON (its turns)")
    args = ap.parse_args()
    import miniclaw

    with tempfile.TemporaryDirectory(prefix="miniclaw-digest-") as tmp:
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        os.environ["MINICLAW_WATCH"] = "0"
        ws = Path(tmp) / "ws"
        write_workspace(ws, args.path)
        seconds = asyncio.run(build(ws, Path(tmp) / "index.sqlite3"))
        report = {"code": str(Path(miniclaw.__file__).parent), "build_s": round(seconds, 1),
                  **digests(Path(tmp) / "index.sqlite3")}
    json.dump(report, sys.stdout)
    print()


if __name__ == "__main__":
    main()
