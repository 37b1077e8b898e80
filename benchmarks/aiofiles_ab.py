"""aiofiles against one `asyncio.to_thread` call, side by side in one run (issue 33).

It prints, on a temporary workspace, each pair alternated call by call, both on a loop whose
default executor has one worker thread (as the CLI's `run` sets it):
  add   median microseconds per daily-note append of ADDS adds: the store's way (lock, open,
        read, check, write, fsync, truncate-back on failure: one `to_thread` call around
        `files.append_bytes`) against the same critical section split into aiofiles steps
        (the lock taken in a thread, `aiofiles.open` with the shared open as `opener`,
        awaited read, write and flush, fsync in the executor, the lock released in a thread)
  read  median microseconds per whole-file read of a 10 KB note: `to_thread(files.read_bytes)`
        against `files.read_bytes_async` (aiofiles)
  start median wall ms of `python -m miniclaw --workspace WS memory read --today` over RUNS
        runs of this tree and, with --base DIR (a checkout of the tree before, e.g.
        `git archive 6fdbadd miniclaw | tar -x -C DIR`), of that tree, alternated

Run (from the repo root): .venv/bin/python benchmarks/aiofiles_ab.py [--adds 200] [--runs 21]
[--base DIR]. Nothing touches the real home: HOME and the caches are in a temporary folder.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import fcntl
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from miniclaw.fs import files

ENTRY = b"\n## 09:00:00 UTC\n\nbenchmark entry with a few words of text in it\n"


def _make(current: bytes) -> bytes:
    files.check_appendable(current, "note")
    return ENTRY


async def add_to_thread(folder: Path, path: Path, ws: Path) -> None:
    def write() -> None:
        with files.locked(folder):
            files.append_bytes(path, ws, "note", _make)

    await asyncio.to_thread(write)


async def add_aiofiles(folder: Path, path: Path, ws: Path) -> None:
    import aiofiles

    lock = await asyncio.to_thread(os.open, folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)

        def opener(file: str, flags: int) -> int:
            return files.open_in_workspace(Path(file), ws, os.O_RDWR | os.O_APPEND | os.O_CREAT,
                                           name="note")[0]

        async with aiofiles.open(path, "a+b", buffering=0, opener=opener) as handle:
            await handle.seek(0)
            current = await handle.read()
            data = _make(current)
            files.check_size("note", len(current) + len(data))
            try:
                await handle.write(data)
                await asyncio.to_thread(os.fsync, handle.fileno())
            except OSError:
                with contextlib.suppress(OSError):
                    await asyncio.to_thread(os.ftruncate, handle.fileno(), len(current))
                raise
    finally:
        await asyncio.to_thread(os.close, lock)


async def _pair(first, second, count: int) -> tuple[float, float]:
    a, b = [], []
    for _ in range(count):
        for fn, out in ((first, a), (second, b)):
            start = time.perf_counter()
            await fn()
            out.append(time.perf_counter() - start)
    return statistics.median(a) * 1e6, statistics.median(b) * 1e6


async def bench_library(root: Path, adds: int) -> None:
    asyncio.get_running_loop().set_default_executor(
        concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="bench"))
    ws = root / "ws"
    folder = ws / "memory"
    folder.mkdir(parents=True)
    one, two = folder / "2026-01-01.md", folder / "2026-01-02.md"
    t, a = await _pair(lambda: add_to_thread(folder, one, ws),
                       lambda: add_aiofiles(folder, two, ws), adds)
    assert one.read_bytes() == two.read_bytes()
    print(f"add   to_thread {t:8.0f} us   aiofiles {a:8.0f} us   ({a / t:.2f}x), {adds} adds")
    note = folder / "2026-01-03.md"
    note.write_bytes(b"# Daily Note\n\n" + ENTRY * 150)  # ~10 KB
    t, a = await _pair(lambda: asyncio.to_thread(files.read_bytes, note, ws, "note"),
                       lambda: files.read_bytes_async(note, ws, "note"), adds)
    print(f"read  to_thread {t:8.0f} us   aiofiles {a:8.0f} us   ({a / t:.2f}x), "
          f"{note.stat().st_size} B, {adds} reads")


def bench_start(root: Path, runs: int, base: Path | None) -> None:
    ws = root / "start"
    (ws / "memory").mkdir(parents=True)
    today = time.strftime("%Y-%m-%d", time.gmtime())
    (ws / f"memory/{today}.md").write_bytes(b"# Daily Note\n\n" + ENTRY * 20)
    env = {**os.environ, "HOME": str(root), "XDG_CACHE_HOME": str(root / "cache"),
           "XDG_CONFIG_HOME": str(root / "config"), "XDG_DATA_HOME": str(root / "data")}
    trees = {"this tree": Path(__file__).resolve().parents[1]}
    if base:
        trees["base"] = base
    for tree in trees.values():
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "miniclaw")],
                       check=True, capture_output=True)
    times: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(runs + 1):  # the first round warms the page cache, not counted
        for name, tree in trees.items():
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "miniclaw", "--workspace", str(ws),
                                   "memory", "read", "--today"], cwd=tree, env=env,
                                  capture_output=True, text=True)
            assert done.returncode == 0 and "benchmark entry" in done.stdout, done.stderr
            times[name].append(time.perf_counter() - start)
    for name, values in times.items():
        median = statistics.median(values[1:]) * 1e3
        print(f"start {name:9} memory read --today: median {median:6.1f} ms over {runs} runs")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--adds", type=int, default=200)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--base", type=Path, help="the tree before, run alternately")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(bench_library(Path(tmp), args.adds))
        bench_start(Path(tmp), args.runs, args.base)


if __name__ == "__main__":
    main()
