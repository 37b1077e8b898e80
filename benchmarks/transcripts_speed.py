"""Indexing speed of chat transcripts, and a search right after an append to a long one.

1. Indexing: ~`--mb` MB of miniclaw transcripts (`sessions/*.jsonl`, files of ~`--file-mb`
   MB), made by repeating the LongMemEval dev turns (each copy numbered, so texts differ),
   indexed from nothing (`refresh_index`); MB/s = bytes on disk / seconds; CPU seconds of
   this process and of the build's parse worker (a child process); peak RSS of each.
2. Append: one transcript of ~`--append-mb` MB, indexed; then `--appends` times: one
   message appended, then a search (its sync reads only the new tail); against the same
   searches warm (nothing changed). Without a watch (MINICLAW_WATCH=0: a stat per file, as a
   one-shot CLI search does).

`--other CHECKOUT` measures indexing only (1.), for this tree and another checkout of
miniclaw alternated in one run (`--rounds` each, the other with PYTHONPATH=CHECKOUT, in a
process of its own each time): the machine's speed drifts, so only side-by-side figures
compare.

Run (from the repo root):
  .venv/bin/python benchmarks/transcripts_speed.py ../shared/data/longmemeval/longmemeval-dev.json
  .venv/bin/python benchmarks/transcripts_speed.py DATA --other /tmp/base [--rounds 2] [--mb 100]
  git worktree add /tmp/base f35fef6  # a tree to compare with (one posting row per term, entry)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QUERIES = ["what did I say about my sister's wedding", "sql joins with examples",
           "budget for the trip", "how many hours did I practice guitar", "recipe with lentils"]


def turns(path: Path) -> list[tuple[str, str]]:
    out = []
    for workspace in json.loads(path.read_text(encoding="utf-8")):
        for session in workspace["sessions"]:
            out += [(t["speaker"].lower(), t["text"]) for t in session["turns"]]
    return out


def line(role: str, text: str, session: str, n: int) -> str:
    stamp = f"2026-01-{1 + n // 86400 % 28:02d}T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z"
    return json.dumps({"role": role, "content": f"{text} (copy {n})", "timestamp": stamp,
                       "session_id": session}, ensure_ascii=False) + "\n"


def write_transcripts(folder: Path, source: list[tuple[str, str]], total: int, per_file: int) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    written, n, index = 0, 0, 0
    while written < total:
        name = f"bench-{index:04d}"
        size = 0
        with open(folder / f"{name}.jsonl", "w", encoding="utf-8") as out:
            while size < per_file and written + size < total:
                role, text = source[n % len(source)]
                data = line(role, text, name, n)
                out.write(data)
                size += len(data.encode("utf-8"))
                n += 1
        written += size
        index += 1
    return written


async def index_only(args) -> dict:
    """1. alone: the build of `--mb` MB of transcripts, as `measure` reports it."""
    return (await measure(args, append=False))["index"]


def alternated(args) -> list[dict]:
    """`index_only` of this tree and of `--other`, alternated, each in a fresh process."""
    import subprocess

    rows = []
    for _ in range(args.rounds):
        for tree in (REPO, args.other):
            env = {**os.environ, "PYTHONPATH": str(tree)}
            done = subprocess.run(
                [sys.executable, __file__, str(args.path), "--mb", str(args.mb), "--file-mb",
                 str(args.file_mb), "--index-only"], env=env, cwd=tree, check=True,
                capture_output=True, text=True)
            rows.append({"tree": str(tree), **json.loads(done.stdout)})
            print(json.dumps(rows[-1]), flush=True)
    return rows


async def measure(args, append: bool = True) -> dict:
    from miniclaw.memory import MemoryStore
    from miniclaw.search.options import SearchOptions
    from miniclaw.sources.transcripts import TranscriptSource

    source = turns(args.path)
    report = {}
    options = SearchOptions(limit=10, days=None)
    with tempfile.TemporaryDirectory(prefix="miniclaw-transcripts-") as tmp:
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        os.environ["MINICLAW_WATCH"] = "0"
        workspace = Path(tmp) / "ws"
        (workspace / "memory").mkdir(parents=True)
        size = write_transcripts(workspace / "sessions", source, args.mb << 20, args.file_mb << 20)
        async with MemoryStore(workspace, sources=(TranscriptSource(),)) as store:
            start, cpu = time.perf_counter(), _cpu()
            done = await store.refresh_index()
            seconds, cpu = time.perf_counter() - start, [b - a for a, b in zip(cpu, _cpu())]
        mb = size / 1048576
        report["index"] = {"mb": round(mb, 1), "files": done.files_parsed,
                           "entries": done.entries_added, "seconds": round(seconds, 2),
                           "mb_per_s": round(mb / seconds, 2),
                           "cpu_s": round(cpu[0], 2), "child_cpu_s": round(cpu[1], 2),
                           "mb_per_cpu_s": round(mb / (cpu[0] + cpu[1]), 2),
                           "peak_rss_mb": _peak_rss_mb()}
    if not append:
        return report

    with tempfile.TemporaryDirectory(prefix="miniclaw-append-") as tmp:
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        workspace = Path(tmp) / "ws"
        (workspace / "memory").mkdir(parents=True)
        size = write_transcripts(workspace / "sessions", source, args.append_mb << 20,
                                 args.append_mb << 20)
        path = next((workspace / "sessions").glob("*.jsonl"))
        async with MemoryStore(workspace, sources=(TranscriptSource(),)) as store:
            start = time.perf_counter()
            await store.refresh_index()
            first = time.perf_counter() - start
            for query in QUERIES:  # warm-up
                await store.search(query, options)
            warm, after = [], []
            for i in range(args.appends):
                query = QUERIES[i % len(QUERIES)]
                start = time.perf_counter()
                await store.search(query, options)
                warm.append((time.perf_counter() - start) * 1000)
                with open(path, "a", encoding="utf-8") as out:
                    out.write(line("user", f"appended message {i} about the lentil recipe",
                                   "bench-0000", 10_000_000 + i))
                start = time.perf_counter()
                found = await store.search(query, options)
                after.append((time.perf_counter() - start) * 1000)
            assert found.results is not None
            check = await store.search("appended lentil", SearchOptions(limit=20, days=None))
            assert any("appended message" in hit.content for hit in check.results)
        report["append"] = {"mb": round(size / 1048576, 1), "index_seconds": round(first, 2),
                            "warm_p50_ms": round(statistics.median(warm), 2),
                            "after_append_p50_ms": round(statistics.median(after), 2),
                            "ratio": round(statistics.median(after) / statistics.median(warm), 2),
                            "n": args.appends}
    return report


def _cpu() -> tuple[float, float]:
    """CPU seconds of this process and of its ended children (a build's parse worker)."""
    import resource

    me, kids = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                     resource.RUSAGE_CHILDREN))
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def _peak_rss_mb() -> dict:
    import resource

    return {who: round(resource.getrusage(what).ru_maxrss / 1024) for who, what in
            (("self", resource.RUSAGE_SELF), ("children", resource.RUSAGE_CHILDREN))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path, help="LongMemEval-format JSON (the turns repeated)")
    ap.add_argument("--mb", type=int, default=100, help="MB of transcripts to index")
    ap.add_argument("--file-mb", type=int, default=2, help="MB per transcript file")
    ap.add_argument("--append-mb", type=int, default=50, help="MB of the appended transcript")
    ap.add_argument("--appends", type=int, default=20)
    ap.add_argument("--other", type=Path, metavar="CHECKOUT",
                    help="another checkout: indexing only, alternated with this tree")
    ap.add_argument("--rounds", type=int, default=2, help="with --other: runs of each tree")
    ap.add_argument("--index-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.other is not None:
        alternated(args)
        return
    if args.index_only:
        json.dump(asyncio.run(index_only(args)), sys.stdout)
        print()
        return
    json.dump(asyncio.run(measure(args)), sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
