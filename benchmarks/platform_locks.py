"""The write lock's cost by platform branch, side by side in one run (issue 34).

It prints the median microseconds to take and release the exclusive lock of one folder, over
ROUNDS rounds, each branch alternated call by call:
  flock   `platform.exclusive` where flock exists (Linux, macOS): an flock on the folder
  sqlite  `platform.exclusive` without it (Windows; the CI simulation): SQLite's exclusive
          lock on an empty file in the cache folder
  add     one whole daily-note add under each branch (`files.locked` + `append_bytes`), for
          scale: what a user waits for

Run (from the repo root): .venv/bin/python benchmarks/platform_locks.py [--rounds 2000].
Nothing touches the real home: the cache is in a temporary folder.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        from miniclaw.fs import files, platform

        folder = Path(tmp) / "memory"
        folder.mkdir()
        note = folder / "2026-11-29.md"
        times: dict[str, list[float]] = {k: [] for k in ("flock", "sqlite", "add flock",
                                                         "add sqlite")}
        for _ in range(args.rounds):
            for flock in (True, False):
                name = "flock" if flock else "sqlite"
                platform.FOLDER_FLOCK = flock
                start = time.perf_counter()
                with platform.exclusive(folder):
                    pass
                times[name].append(time.perf_counter() - start)
                start = time.perf_counter()
                with files.locked(folder):
                    files.append_bytes(note, Path(tmp), note.name, lambda _: b"x\n")
                times[f"add {name}"].append(time.perf_counter() - start)
                if note.stat().st_size > 1_000_000:
                    note.unlink()
        for name, values in times.items():
            print(f"{name:11} median {statistics.median(values) * 1e6:8.1f} us")
        print(f"sqlite/flock: {statistics.median(times['sqlite']) / statistics.median(times['flock']):.1f}x")


if __name__ == "__main__":
    main()
