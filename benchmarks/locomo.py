"""Turn-level retrieval quality of miniclaw memory search on LoCoMo-format data.

For each conversation, a fresh workspace is built in a temporary directory through the public
API only: each session becomes the daily note of its `session_N_date_time` (read as UTC), each
turn one entry `Speaker: text` (plus ` [shares a photo: CAPTION]` when the turn has a
`blip_caption`), written one second after the previous turn. Every question with evidence is
then asked with `search_memories(question, limit=10, days=None, mode=mode)`, and each result
is mapped back to the dialogue turns (dia_ids) whose lines it overlaps.

Per question, against the evidence turns found in the conversation:
  R@5    fraction of evidence turns in the top 5 results (turn recall@5)
  Hit@5  1 if any evidence turn is in the top 5
  R@10   fraction of evidence turns in the top 10
  MRR    1 / rank of the first result holding an evidence turn (0 if none in the top 10)
Averaged overall and per LoCoMo category (1..5), for each mode. Evidence ids that match no
turn are dropped; questions left with no evidence are skipped (and counted).

Run (from the repo root):
  .venv/bin/python benchmarks/locomo.py ../shared/data/locomo/locomo-dev.json --modes keyword,bm25
  .venv/bin/python benchmarks/locomo.py PATH --limit-conversations 1 --json
  .venv/bin/python benchmarks/locomo.py PATH --modes bm25 --ablations [--no-stemming]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from collections import defaultdict
from datetime import timedelta, timezone
from pathlib import Path

from dateutil import parser as dateparser

from miniclaw.memory import MemoryStore

METRICS = ("R@5", "Hit@5", "R@10", "MRR")


def sessions(conversation: dict):
    """(datetime in UTC, turns) of each non-empty session, in session order."""
    numbers = sorted(int(m.group(1)) for key in conversation
                     if (m := re.fullmatch(r"session_(\d+)", key)))
    for n in numbers:
        turns = conversation[f"session_{n}"]
        if turns:
            when = dateparser.parse(conversation[f"session_{n}_date_time"])
            yield when.replace(tzinfo=timezone.utc), turns


def turn_text(turn: dict) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


async def build_workspace(store: MemoryStore, conversation: dict) -> dict[str, list]:
    """Write every turn as a daily-note entry; return path -> [(line_start, line_end, dia_id)]."""
    spans: dict[str, list] = defaultdict(list)
    for when, turns in sessions(conversation):
        for i, turn in enumerate(turns):
            entry = await store.add_daily_note(turn_text(turn), when=when + timedelta(seconds=i))
            if entry is None:  # the API returns None when nothing visible was written
                raise RuntimeError(f"add_daily_note returned None for {turn['dia_id']}")
            spans[str(entry.path)].append((entry.line_start, entry.line_end, turn["dia_id"]))
    return spans


def dia_ids_of(result, spans: dict[str, list]) -> set[str]:
    return {dia for start, end, dia in spans.get(str(result.path), ())
            if start <= result.line_end and result.line_start <= end}


def score(ranked: list[set[str]], evidence: set[str]) -> dict[str, float]:
    top5 = set().union(*ranked[:5])
    top10 = set().union(*ranked[:10])
    first = next((rank for rank, ids in enumerate(ranked[:10], 1) if ids & evidence), None)
    return {"R@5": len(top5 & evidence) / len(evidence),
            "Hit@5": float(bool(top5 & evidence)),
            "R@10": len(top10 & evidence) / len(evidence),
            "MRR": 1 / first if first else 0.0}


async def run(data: list[dict], modes: list[str]) -> dict:
    scores = {mode: defaultdict(list) for mode in modes}  # mode -> group -> [per-question scores]
    skipped = 0
    seconds = {"build": 0.0, **{mode: 0.0 for mode in modes}}
    for sample in data:
        with tempfile.TemporaryDirectory(prefix="miniclaw-locomo-") as tmp:
            os.environ["MINICLAW_INDEX"] = str(Path(tmp) / "index.sqlite3")
            os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
            workspace = Path(tmp) / "workspace"
            (workspace / "memory").mkdir(parents=True)
            async with MemoryStore(workspace) as store:
                start = time.perf_counter()
                spans = await build_workspace(store, sample["conversation"])
                seconds["build"] += time.perf_counter() - start
                known = {dia for rows in spans.values() for _, _, dia in rows}
                questions = []
                for qa in sample["qa"]:
                    evidence = {e.strip() for e in qa.get("evidence") or []} & known
                    if evidence:
                        questions.append((qa, evidence))
                    else:
                        skipped += 1
                for mode in modes:
                    start = time.perf_counter()
                    for qa, evidence in questions:
                        results = await store.search_memories(qa["question"], limit=10,
                                                              days=None, mode=mode)
                        one = score([dia_ids_of(r, spans) for r in results], evidence)
                        scores[mode]["all"].append(one)
                        scores[mode][str(qa["category"])].append(one)
                    seconds[mode] += time.perf_counter() - start
    order = ["all", "1", "2", "3", "4", "5"]
    summary = {mode: {group: {"n": len(groups[group]),
                              **{m: round(sum(r[m] for r in groups[group]) / len(groups[group]), 4)
                                 for m in METRICS}}
                      for group in sorted(groups, key=lambda g: (order + [g]).index(g))}
               for mode, groups in scores.items()}
    return {"conversations": len(data), "skipped_questions": skipped,
            "seconds": {k: round(v, 2) for k, v in seconds.items()}, "modes": summary}


def print_table(report: dict) -> None:
    print(f"{'mode':<10}{'category':<10}{'n':>6}" + "".join(f"{m:>8}" for m in METRICS))
    for mode, groups in report["modes"].items():
        for group, row in groups.items():
            print(f"{mode:<10}{group:<10}{row['n']:>6}"
                  + "".join(f"{row[m]:>8.3f}" for m in METRICS))
    s = report["seconds"]
    print(f"\nconversations: {report['conversations']}, questions skipped (no evidence found): "
          f"{report['skipped_questions']}")
    print("time: build " + f"{s['build']:.1f}s, "
          + ", ".join(f"{mode} queries {s[mode]:.1f}s" for mode in report["modes"])
          + f", total {s['total']:.1f}s (the first mode's queries include indexing)")


# Ablations of the default mode, for benchmarks/README.md: each is BM25Scorer with one of
# its refinements switched off (registered as extra modes for this run only).
ABLATIONS = {
    "bm25-plain": dict(b=0.75, common_weight=1.0, neighbor_weights=()),
    "bm25-no-neighbours": dict(neighbor_weights=()),
    "bm25-no-downweight": dict(common_weight=1.0),
    "bm25-b0.75": dict(b=0.75),
}


def register_ablations() -> list[str]:
    from functools import partial

    from miniclaw.memory.scoring import _MODES
    from miniclaw.memory.scoring.bm25 import BM25Scorer

    for name, params in ABLATIONS.items():
        _MODES[name] = partial(BM25Scorer, **params)
    return list(ABLATIONS)


def disable_stemming() -> None:
    from miniclaw.memory import tokenizer

    tokenizer._stem = lambda word: word
    tokenizer._cache.clear()
    tokenizer._index_cache.clear()
    tokenizer._stop_terms.cache_clear()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path, help="LoCoMo-format JSON file (a list of conversations)")
    ap.add_argument("--modes", default="keyword,bm25", help="comma-separated search modes")
    ap.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    ap.add_argument("--ablations", action="store_true",
                    help="also run the default mode with each refinement switched off")
    ap.add_argument("--no-stemming", action="store_true",
                    help="tokenize without the Snowball stemmer (for the ablation table)")
    args = ap.parse_args()
    data = json.loads(args.path.read_text(encoding="utf-8"))[: args.limit_conversations]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if args.ablations:
        modes += register_ablations()
    if args.no_stemming:
        disable_stemming()
    start = time.perf_counter()
    report = asyncio.run(run(data, modes))
    report["seconds"]["total"] = round(time.perf_counter() - start, 2)
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print_table(report)


if __name__ == "__main__":
    main()
