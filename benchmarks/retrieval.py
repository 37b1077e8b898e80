"""What the retrieval benchmarks share: a conversation written into a fresh workspace through
the public API, questions asked at their own date, results mapped back to turns, the metrics,
a plain BM25 reference over the same entries, and warm search timings.

A benchmark module only turns its data file into `Conversation`s (see `locomo.py`,
`longmemeval.py`); everything measured is done here, the same way for both.

Per question, against its evidence turns:
  R@5    share of the evidence turns in the top 5 results (turn recall@5)
  Hit@5  1 if any evidence turn is in the top 5
  R@10   share of the evidence turns in the top 10
  SR@5   share of the evidence sessions with a turn in the top 5 (session recall@5)
  MRR    1 / rank of the first result holding an evidence turn (0 if none in the top 10)
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import NamedTuple

from miniclaw.memory import MemoryStore

METRICS = ("R@5", "Hit@5", "R@10", "SR@5", "MRR")
PLAIN = "plain-bm25"  # the reference, run in this module rather than by miniclaw


class Turn(NamedTuple):
    id: str
    text: str  # the entry as written: `Speaker: text`


class Session(NamedTuple):
    id: str
    when: datetime  # UTC; turn i is written i seconds later
    turns: list[Turn]


class Question(NamedTuple):
    text: str
    asked: datetime  # the store's "now" while it is asked
    evidence: frozenset[str]  # turn ids
    group: str  # category or question type


class Conversation(NamedTuple):
    sessions: list[Session]
    questions: list[Question]


async def write_conversation(store: MemoryStore, conversation: Conversation) -> dict[str, list]:
    """Each session a daily note, each turn an entry; path -> [(line_start, line_end, turn)].
    Control characters (a few LongMemEval turns hold U+0002), which the writer refuses, are
    dropped first, as `printable` drops them for a terminal."""
    from miniclaw.text import printable

    spans: dict[str, list] = defaultdict(list)
    for session in conversation.sessions:
        for i, turn in enumerate(session.turns):
            entry = await store.add_daily_note(printable(turn.text),
                                               when=session.when + timedelta(seconds=i))
            if entry is None:  # the API returns None when nothing visible was written
                raise RuntimeError(f"add_daily_note returned None for {turn.id}")
            spans[str(entry.path)].append((entry.line_start, entry.line_end, turn.id))
    return spans


def turns_of(result, spans: dict[str, list]) -> set[str]:
    return {turn for start, end, turn in spans.get(str(result.path), ())
            if start <= result.line_end and result.line_start <= end}


def score(ranked: list[set[str]], evidence: frozenset[str],
          session_of: dict[str, str]) -> dict[str, float]:
    top5 = set().union(*ranked[:5])
    top10 = set().union(*ranked[:10])
    sessions = {session_of[t] for t in evidence}
    first = next((rank for rank, ids in enumerate(ranked[:10], 1) if ids & evidence), None)
    return {"R@5": len(top5 & evidence) / len(evidence),
            "Hit@5": float(bool(top5 & evidence)),
            "R@10": len(top10 & evidence) / len(evidence),
            "SR@5": len({session_of[t] for t in top5} & sessions) / len(sessions),
            "MRR": 1 / first if first else 0.0}


_WORD = re.compile(r"[a-z0-9]+")


class PlainBM25:
    """Textbook BM25 (k1 1.2, b 0.75, `[a-z0-9]+` lowercase tokens, no stemming, no stop
    words, Lucene's idf) over the turns as written: the reference miniclaw must beat."""

    def __init__(self, turns: list[Turn], k1: float = 1.2, b: float = 0.75) -> None:
        self.ids = [t.id for t in turns]
        self.tf = [Counter(_WORD.findall(t.text.lower())) for t in turns]
        self.lengths = [sum(tf.values()) for tf in self.tf]
        self.avgdl = sum(self.lengths) / max(len(turns), 1)
        self.df = Counter(term for tf in self.tf for term in tf)
        self.k1, self.b = k1, b
        self.postings: dict[str, list[int]] = defaultdict(list)
        for i, tf in enumerate(self.tf):
            for term in tf:
                self.postings[term].append(i)

    def search(self, text: str, limit: int = 10) -> list[str]:
        n = len(self.ids)
        scores: dict[int, float] = defaultdict(float)
        for term in set(_WORD.findall(text.lower())):
            df = self.df.get(term, 0)
            if not df:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            for i in self.postings[term]:
                tf = self.tf[i][term]
                norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / self.avgdl)
                scores[i] += idf * tf * (self.k1 + 1) / (tf + norm)
        best = sorted(scores, key=lambda i: (-scores[i], i))[:limit]
        return [self.ids[i] for i in best]


class Clock:
    """The store's clock, set to each question's date before it is asked."""

    def __init__(self, now: datetime) -> None:
        self.current = now

    def __call__(self) -> datetime:
        return self.current


@contextlib.contextmanager
def scratch(prefix: str):
    """A temporary folder with an empty workspace and its own index and cache: (folder,
    workspace). Each conversation is searched alone, as a user's memory would be."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        os.environ["MINICLAW_INDEX"] = str(Path(tmp) / "index.sqlite3")
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        workspace = Path(tmp) / "workspace"
        (workspace / "memory").mkdir(parents=True)
        yield Path(tmp), workspace


async def run(conversations: list[Conversation], modes: list[str], speed: bool = False,
              layout=None) -> dict:
    """Scores per mode and group, build and query seconds, and warm timings if `speed`.
    `layout` writes the conversations another way than as daily notes (`longmemeval.py
    --as transcripts`): `layout.sources(tmp)` gives the store's (sources, roots) and
    `await layout.write(store, conversation, tmp)` the spans as `write_conversation` does."""
    scores = {mode: defaultdict(list) for mode in modes}
    rows = {mode: [] for mode in modes}  # per question, for `paired.py`
    seconds = {"build": 0.0, **{mode: 0.0 for mode in modes}}
    timings: list[float] = []
    for number, conversation in enumerate(conversations):
        session_of = {t.id: s.id for s in conversation.sessions for t in s.turns}
        with scratch("miniclaw-bench-") as (tmp, workspace):
            clock = Clock(conversation.sessions[-1].when + timedelta(days=1))
            sources, roots = layout.sources(tmp) if layout else (None, ())
            async with MemoryStore(workspace, now=clock, sources=sources, roots=roots) as store:
                start = time.perf_counter()
                spans = await (layout.write(store, conversation, Path(tmp)) if layout
                               else write_conversation(store, conversation))
                seconds["build"] += time.perf_counter() - start
                if {"hybrid", "vector"} & set(modes):  # every vector first, as `memory index`
                    start = time.perf_counter()
                    await store.embed_index()
                    seconds["embed"] = seconds.get("embed", 0.0) + time.perf_counter() - start
                for mode in modes:
                    start = time.perf_counter()
                    if mode == PLAIN:
                        plain = PlainBM25([t for s in conversation.sessions for t in s.turns])
                    for asked, question in enumerate(conversation.questions):
                        clock.current = question.asked
                        if mode == PLAIN:
                            ranked = [{turn} for turn in plain.search(question.text)]
                        else:
                            results = await store.search_memories(
                                question.text, limit=10, days=None, mode=mode)
                            ranked = [turns_of(r, spans) for r in results]
                        one = score(ranked, question.evidence, session_of)
                        scores[mode]["all"].append(one)
                        scores[mode][question.group].append(one)
                        rows[mode].append({"id": f"{number}:{asked}", "cluster": number,
                                           "group": question.group, **one})
                    seconds[mode] += time.perf_counter() - start
                if speed:
                    timings += await warm_timings(store, clock, conversation.questions)
    summary = {mode: {group: {"n": len(rows),
                              **{m: round(sum(r[m] for r in rows) / len(rows), 4)
                                 for m in METRICS}}
                      for group, rows in sorted(groups.items(),
                                                key=lambda kv: (kv[0] != "all", kv[0]))}
               for mode, groups in scores.items()}
    report = {"conversations": len(conversations),
              "seconds": {k: round(v, 2) for k, v in seconds.items()}, "modes": summary,
              "questions": rows}
    if timings:
        cuts = statistics.quantiles(timings, n=10)
        report["warm_ms"] = {"n": len(timings), "p50": round(statistics.median(timings), 2),
                             "p90": round(cuts[8], 2)}
    return report


async def warm_timings(store: MemoryStore, clock: Clock, questions: list[Question]) -> list[float]:
    """Milliseconds of each question's search in the default mode on a store kept open, after
    one warm-up pass over the same questions."""
    for question in questions:
        await store.search_memories(question.text, limit=10, days=None)
    out = []
    for question in questions:
        clock.current = question.asked
        start = time.perf_counter()
        await store.search_memories(question.text, limit=10, days=None)
        out.append((time.perf_counter() - start) * 1000)
    return out


def print_table(report: dict) -> None:
    print(f"{'mode':<20}{'group':<27}{'n':>5}" + "".join(f"{m:>8}" for m in METRICS))
    for mode, groups in report["modes"].items():
        for group, row in groups.items():
            print(f"{mode:<20}{group:<27}{row['n']:>5}"
                  + "".join(f"{row[m]:>8.3f}" for m in METRICS))
    s = report["seconds"]
    print(f"\nconversations: {report['conversations']}; time: build {s['build']:.1f}s, "
          + ", ".join(f"{mode} {s[mode]:.1f}s" for mode in report["modes"])
          + " (the first mode's queries include indexing)")
    if "warm_ms" in report:
        w = report["warm_ms"]
        print(f"warm search, default mode, {w['n']} questions: p50 {w['p50']:.2f} ms, "
              f"p90 {w['p90']:.2f} ms")


# Ablations of the default mode, for benchmarks/README.md: BM25Scorer with one of its
# refinements changed (registered as extra modes for this run only).
ABLATIONS = {
    "bm25-no-neighbours": dict(neighbor_weights=()),
    "bm25-no-date-cue": dict(date_weight=0.0),
    "bm25-b0.5": dict(b=0.5),
    "bm25-b0.75": dict(b=0.75),
}


def register_ablations() -> list[str]:
    from functools import partial

    from miniclaw.search.scoring import _MODES
    from miniclaw.search.scoring.bm25 import BM25Scorer

    for name, params in ABLATIONS.items():
        _MODES[name] = partial(BM25Scorer, **params)
    return list(ABLATIONS)


def disable_stemming() -> None:
    from miniclaw.entries import tokenizer

    tokenizer._stem = lambda word: word
    tokenizer._cache.clear()
    tokenizer._index_cache.clear()
    tokenizer._stop_terms.cache_clear()


def add_arguments(ap) -> None:
    from pathlib import Path as _Path

    ap.add_argument("path", type=_Path, help="the benchmark's JSON file")
    ap.add_argument("--modes", default="bm25,keyword",
                    help=f"comma-separated search modes ({PLAIN} is the reference)")
    ap.add_argument("--plain-bm25", action="store_true", help=f"also run the {PLAIN} reference")
    ap.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    ap.add_argument("--ablations", action="store_true",
                    help="also run the default mode with each refinement changed")
    ap.add_argument("--no-stemming", action="store_true",
                    help="tokenize without the Snowball stemmer (for the ablation table)")
    ap.add_argument("--speed", action="store_true",
                    help="also time warm searches (default mode) over the questions")
    ap.add_argument("--vector-cache", type=_Path, default=None, metavar="FILE",
                    help="look vectors up in (and add them to) this SQLite file instead of "
                         "embedding every text again (vector_cache.py)")
    ap.add_argument("--per-question", type=_Path, default=None, metavar="FILE",
                    help="write every question's scores per mode to FILE (JSON), for paired.py")
    ap.add_argument("--fusion-weight", type=float, default=None, metavar="W",
                    help="the cosine's weight in hybrid's fusion (default: semantic.FUSION_WEIGHT)")


def main(description: str, load, layouts=None) -> None:
    """The command line both benchmarks share; `load(path)` gives the Conversations;
    `layouts` (name -> layout, see `run`) adds `--as NAME`."""
    import argparse
    import asyncio
    import json
    import sys

    ap = argparse.ArgumentParser(description=description)
    add_arguments(ap)
    if layouts:
        ap.add_argument("--as", dest="layout", choices=["notes", *layouts], default="notes",
                        help="write the conversations as daily notes (default) or otherwise")
    args = ap.parse_args()
    layout = (layouts or {}).get(getattr(args, "layout", "notes"))
    conversations = load(args.path)[: args.limit_conversations]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if args.plain_bm25 and PLAIN not in modes:
        modes.append(PLAIN)
    if args.ablations:
        modes += register_ablations()
    if args.no_stemming:
        disable_stemming()
    if args.vector_cache:
        from vector_cache import install

        install(args.vector_cache)
    if args.fusion_weight is not None:
        from miniclaw.semantic import retriever as semantic

        semantic.FUSION_WEIGHT = args.fusion_weight
    patch = os.environ.get("MC_BENCH_PATCH")
    if patch:  # a variant for this process only: a small Python file run before the questions
        exec(compile(Path(patch).read_text(encoding="utf-8"), patch, "exec"), {})
    report = asyncio.run(run(conversations, modes, speed=args.speed, layout=layout))
    questions = report.pop("questions")
    if args.per_question:
        args.per_question.write_text(json.dumps(
            {"data": str(args.path), "patch": patch, "modes": questions}), encoding="utf-8")
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print_table(report)
