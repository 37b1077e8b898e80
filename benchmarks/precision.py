"""Precision of miniclaw memory search on bursts of unrelated notes, as people add them.

40 short facts about one person, added through the public API in bursts of five a few seconds
apart (as someone tells an assistant several things in a row), bursts a day apart; the second
half also go to MEMORY.md, once as long-term entries. Then 40 questions, each about one fact,
are asked with `search(question, limit=5, days=None)` in each mode.

A returned result is *unrelated* when it holds none of the question's words (after stemming,
stop words left out) and is not the fact the question is about (its meaning). Reported: the
share of returned results that are unrelated (target 0), the share of questions whose fact is
in the results, and results per question.

Run (from the repo root):
  .venv/bin/python benchmarks/precision.py [--modes bm25,keyword] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

from miniclaw.memory import MemoryStore
from miniclaw.entries.tokenizer import is_stop_word, tokenize

# (fact, a question about it): questions word it as people ask, so some share few words.
FACTS = [
    ("cat is named Miso", "what is my cat called?"),
    ("prefers Python over Go", "which programming language do I prefer, Python or Go?"),
    ("flight to Oslo on Friday", "when is my flight to Oslo?"),
    ("allergic to peanuts", "peanut allergy"),
    ("manager is Dana", "who is my manager?"),
    ("sister lives in Lisbon", "where does my sister live?"),
    ("dentist appointment on March 3", "when is the dentist appointment?"),
    ("favourite coffee is a flat white", "how do I take my coffee?"),
    ("runs 5 km every Tuesday morning", "running schedule"),
    ("car is a blue Honda Civic", "what car do I drive?"),
    ("wifi password is on the fridge", "where is the wifi password?"),
    ("birthday is June 12", "when is my birthday?"),
    ("partner's name is Alex", "what is my partner's name?"),
    ("learning Spanish on Duolingo", "which language am I learning?"),
    ("vegetarian since 2019", "do I eat meat? vegetarian"),
    ("works from home on Mondays", "which days do I work from home?"),
    ("gym membership renews in April", "when does the gym membership renew?"),
    ("daughter plays the violin", "what instrument does my daughter play?"),
    ("landlord is Mr. Okafor", "who is the landlord?"),
    ("passport expires in 2027", "when does my passport expire?"),
    ("likes hiking in the Alps", "hiking trips"),
    ("reads science fiction before bed", "what books do I read?"),
    ("bank is Nordea", "which bank do I use?"),
    ("doctor is Dr. Patel", "who is my doctor?"),
    ("plant needs watering every Sunday", "when do I water the plant?"),
    ("dog is a beagle called Pepper", "what breed is my dog?"),
    ("team standup is at 9:30", "what time is standup?"),
    ("lactose intolerant, avoids milk", "can I drink milk?"),
    ("moving to Berlin in September", "when am I moving to Berlin?"),
    ("brother's wedding is in August", "when is my brother's wedding?"),
    ("uses a standing desk", "what kind of desk do I use?"),
    ("monthly budget for groceries is 400 euros", "grocery budget"),
    ("plays chess online on Lichess", "where do I play chess?"),
    ("son's school is Westfield Primary", "which school does my son go to?"),
    ("insurance renewal due in November", "when is the insurance renewal?"),
    ("mother's phone number changed last week", "my mother's new phone number"),
    ("knee injury from football in 2020", "how did I hurt my knee?"),
    ("podcast recommendation: Hardcore History", "podcast recommendations"),
    ("electric bill is paid by direct debit", "how is the electric bill paid?"),
    ("favourite restaurant is Sakura sushi", "which restaurant do I like best?"),
]
BURST = 5
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


def content_terms(text: str) -> set[str]:
    return {t for t in tokenize(text) if not is_stop_word(t)}


async def add_facts(store: MemoryStore) -> None:
    """Bursts of five notes seconds apart, a day apart from each other; the second half of
    the facts are also kept in MEMORY.md."""
    start = NOW - timedelta(days=len(FACTS) // BURST + 1)
    for i, (fact, _) in enumerate(FACTS):
        when = start + timedelta(days=i // BURST, seconds=5 * (i % BURST))
        await store.add_daily_note(fact, when=when)
        if i >= len(FACTS) // 2:
            await store.add_long_term(fact)


async def run(modes: list[str]) -> dict:
    report = {}
    with tempfile.TemporaryDirectory(prefix="miniclaw-precision-") as tmp:
        os.environ["MINICLAW_INDEX"] = str(Path(tmp) / "index.sqlite3")
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        workspace = Path(tmp) / "workspace"
        (workspace / "memory").mkdir(parents=True)
        async with MemoryStore(workspace, now=lambda: NOW) as store:
            await add_facts(store)
            for mode in modes:
                returned = unrelated = found = 0
                examples = []
                for fact, question in FACTS:
                    results = (await store.search(question, limit=5, days=None,
                                                  mode=mode)).results
                    wanted = content_terms(question)
                    returned += len(results)
                    found += any(hit.content == fact for hit in results)
                    for hit in results:
                        if hit.content != fact and not wanted & content_terms(hit.content):
                            unrelated += 1
                            examples.append((question, hit.content))
                report[mode] = {"questions": len(FACTS), "returned": returned,
                                "unrelated": unrelated,
                                "unrelated_share": round(unrelated / max(returned, 1), 4),
                                "fact_found": round(found / len(FACTS), 4),
                                "examples": examples[:5]}
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modes", default="bm25,keyword", help="comma-separated search modes")
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = ap.parse_args()
    report = asyncio.run(run([m.strip() for m in args.modes.split(",") if m.strip()]))
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
        return
    print(f"{'mode':<10}{'questions':>10}{'returned':>10}{'unrelated':>11}{'share':>8}"
          f"{'fact found':>12}")
    for mode, row in report.items():
        print(f"{mode:<10}{row['questions']:>10}{row['returned']:>10}{row['unrelated']:>11}"
              f"{row['unrelated_share']:>8.3f}{row['fact_found']:>12.3f}")
        for question, content in row["examples"]:
            print(f"    unrelated for {question!r}: {content!r}")


if __name__ == "__main__":
    main()
