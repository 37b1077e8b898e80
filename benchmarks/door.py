"""Precision and recall of the add door's "same fact" test (`miniclaw.entries.similar`).

Real memory text: the turns of LoCoMo's dev conversations and their observations (facts
about the speakers, as a memory holds them), the user turns of LongMemEval's dev sessions,
and the Markdown lines of the suite's fixtures (tests/fixtures/formats). Texts of 4 to 80
words. Groups: a session (or a fixture file) is one group.

- Positive pairs (the same fact, spelt again): each text against a rewrite of it, one kind
  per text in turn, seeded: case, punctuation, Markdown (bullet, emphasis, code ticks, a
  link), a word added, a word dropped, clauses reordered, a typo, and two of these at once.
  A rewrite never drops or changes a number or a negation (that would be another fact).
- Hard negatives (another fact): each text against the other text of its group that is
  most alike by the measure being judged (its nearest neighbour: same session, same topic,
  shared words), and a second set against the nearest text in the whole corpus.
- Update negatives: the text with a number changed or a negation added: an update, which
  `memory add --supersedes` is for, never a duplicate.

Reported per threshold, for `is_same_fact`'s trigram measure and for a word-set Jaccard
over the tokenizer's stemmed terms: precision (TP / (TP + FP) over the positives and all
negatives), recall (TP / positives), and false positives by kind. The guards (numbers and
negations must agree) are what `is_same_fact` adds to a threshold; shown on and off.

Run (from the repo root):
  .venv/bin/python benchmarks/door.py [--data ../shared/data] [--limit 3000]

`--speed N`: instead, the cost of the door on an add: a MEMORY.md of N entries (the same
real texts, cycled), and adds of new facts (the worst case: no duplicate, every entry
looked at) with the check (default) and without (`force=True`, the add as it was),
alternated, N rounds each, medians and the ratio, for `--long` and for a daily note add.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import defaultdict
from pathlib import Path

from miniclaw.entries import similar
from miniclaw.entries.tokenizer import tokenize

ROOT = Path(__file__).resolve().parent.parent
_WORD = re.compile(r"[A-Za-z]{4,}")
_NUMBER = re.compile(r"\d+")


# -- the texts ---------------------------------------------------------------------------------


def _keep(text: str) -> bool:
    words = text.split()
    return 4 <= len(words) <= 80


def load_groups(data: Path) -> dict[str, list[str]]:
    """Group name -> its texts (a session's turns, a file's lines)."""
    groups: dict[str, list[str]] = defaultdict(list)
    locomo = json.loads((data / "locomo" / "locomo-dev.json").read_text())
    for sample in locomo:
        conversation = sample["conversation"]
        for key, turns in conversation.items():
            if key.startswith("session") and isinstance(turns, list):
                for turn in turns:
                    groups[f"locomo/{sample['sample_id']}/{key}"].append(turn["text"])
        for key, by_speaker in sample.get("observation", {}).items():
            for speaker, facts in by_speaker.items():
                for fact, _ in facts:
                    groups[f"locomo-obs/{sample['sample_id']}/{key}"].append(fact)
    lme = json.loads((data / "longmemeval" / "longmemeval-dev.json").read_text())
    for item in lme:
        for session in item["sessions"]:
            for turn in session["turns"]:
                if turn["speaker"] == "User":
                    groups[f"lme/{session['id']}"].append(turn["text"])
    for path in sorted((ROOT / "tests" / "fixtures" / "formats").rglob("*.md")):
        for line in path.read_text(errors="replace").splitlines():
            if line.strip() and not line.lstrip().startswith(("#", "---", "|", "```")):
                groups[f"fixture/{path.name}"].append(line)
    return {
        name: list(dict.fromkeys(text for text in texts if _keep(text)))
        for name, texts in groups.items()
    }


# -- rewrites ----------------------------------------------------------------------------------


def _protected(word: str) -> bool:
    bare = re.sub(r"\W", "", word).lower().replace("'", "")
    return any(c.isdigit() for c in word) or bare in similar._NEGATIONS or bare in ("not", "no")


def _words(text: str) -> list[str]:
    return text.split()


def _typo(text: str, rng: random.Random) -> str:
    words = _words(text)
    spots = [i for i, w in enumerate(words) if _WORD.fullmatch(w) and not _protected(w)]
    if not spots:
        return text + "."
    i = rng.choice(spots)
    w = words[i]
    j = rng.randrange(1, len(w) - 1)
    kind = rng.randrange(3)
    if kind == 0:  # two letters swapped
        w = w[: j - 1] + w[j] + w[j - 1] + w[j + 1 :]
    elif kind == 1:  # a letter dropped
        w = w[:j] + w[j + 1 :]
    else:  # a letter doubled
        w = w[:j] + w[j] + w[j:]
    words[i] = w
    return " ".join(words)


def _drop(text: str, rng: random.Random) -> str:
    words = _words(text)
    spots = [i for i, w in enumerate(words) if not _protected(w)]
    if len(words) < 5 or not spots:
        return text.lower()
    del words[rng.choice(spots)]
    return " ".join(words)


def _add(text: str, rng: random.Random) -> str:
    words = _words(text)
    words.insert(rng.randrange(1, len(words)), rng.choice(["really", "also", "just", "now", "still", "actually"]))
    return " ".join(words)


def _reorder(text: str, rng: random.Random) -> str:
    for sep in (", and ", ", ", " and ", " because ", " but "):
        if sep in text:
            head, _, tail = text.rstrip(".!?").partition(sep)
            return f"{tail[:1].upper()}{tail[1:]}{sep}{head[:1].lower()}{head[1:]}."
    words = _words(text.rstrip(".!?"))
    cut = len(words) // 2
    return " ".join(words[cut:] + words[:cut])


def _markdown(text: str, rng: random.Random) -> str:
    words = _words(text)
    i = rng.randrange(len(words))
    kind = rng.randrange(4)
    if kind == 0:
        words[i] = f"**{words[i]}**"
    elif kind == 1:
        words[i] = f"`{words[i]}`"
    elif kind == 2:
        words[i] = f"[{words[i]}](https://example.com/{i})"
    else:
        words[i] = f"_{words[i]}_"
    return "- " + " ".join(words)


def _case(text: str, rng: random.Random) -> str:
    return rng.choice([text.lower(), text.upper(), text.title()])


def _punctuation(text: str, rng: random.Random) -> str:
    if rng.randrange(2):
        return re.sub(r"[^\w\s']", "", text)
    return text.rstrip(".!?") + rng.choice([".", "!", "...", " ;)"]).replace(" ;)", "!")


REWRITES = {
    "case": _case,
    "punctuation": _punctuation,
    "markdown": _markdown,
    "word added": _add,
    "word dropped": _drop,
    "reordered": _reorder,
    "typo": _typo,
}


def positives(texts: list[str], rng: random.Random) -> list[tuple[str, str, str]]:
    kinds = list(REWRITES) + ["two at once"]
    out = []
    for n, text in enumerate(texts):
        kind = kinds[n % len(kinds)]
        if kind == "two at once":
            first, second = rng.sample(list(REWRITES.values()), 2)
            out.append((kind, text, second(first(text, rng), rng)))
        else:
            out.append((kind, text, REWRITES[kind](text, rng)))
    return out


def updates(texts: list[str], rng: random.Random) -> list[tuple[str, str, str]]:
    """A number changed, or a negation added after 'is'/'was'/'will'."""
    out = []
    for text in texts:
        numbers = [m for m in _NUMBER.finditer(text) if not re.match(r"\s*\d+[.)]\s", text[: m.end() + 2])]  # not a list's number
        if numbers:
            m = rng.choice(numbers)
            changed = str(int(m.group()) + rng.randrange(1, 9))
            out.append(("number changed", text, text[: m.start()] + changed + text[m.end() :]))
            continue
        m = re.search(r"\b(is|was|will|can|does|did|has)\b ", text)
        if m:
            out.append(("negation added", text, text[: m.end()] + "not " + text[m.end() :]))
    return out


# -- the measures ------------------------------------------------------------------------------


def trigram(a: str, b: str) -> float:
    return similar.similarity_of_folds(a, b)


def words(a: str, b: str) -> float:
    ta, tb = set(tokenize(a)), set(tokenize(b))
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / len(ta | tb)


MEASURES = {"trigram": trigram, "words": words}


def nearest(groups: dict[str, list[str]], measure, folds: dict[str, str], limit_pairs: int):
    """Each text against the most alike other text of its group (hard negatives)."""
    out = []
    for texts in groups.values():
        for i, text in enumerate(texts):
            best, best_score = None, -1.0
            for j, other in enumerate(texts):
                if i == j or folds[text] == folds[other]:
                    continue
                score = measure(folds[text], folds[other])
                if score > best_score:
                    best, best_score = other, score
            if best is not None:
                out.append(("same session", text, best))
            if len(out) >= limit_pairs:
                return out
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent.parent / "shared" / "data")
    parser.add_argument("--limit", type=int, default=3000, help="texts used at most")
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--measures", default="trigram,words", help="comma-separated: trigram, words")
    parser.add_argument("--speed", type=int, metavar="N", help="time adds on N entries instead")
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    if args.speed:
        return speed(args)
    rng = random.Random(args.seed)
    groups = load_groups(args.data)
    texts = [t for g in groups.values() for t in g]
    rng.shuffle(texts)
    texts = texts[: args.limit]
    chosen = set(texts)
    groups = {n: [t for t in g if t in chosen] for n, g in groups.items()}
    groups = {n: g for n, g in groups.items() if len(g) > 1}
    pos = positives(texts, rng)
    upd = updates(texts, rng)
    folds: dict[str, str] = {}
    for _, a, b in pos + upd:
        folds.setdefault(a, similar.fold(a))
        folds.setdefault(b, similar.fold(b))
    print(f"texts {len(texts)} in {len(groups)} groups; positives {len(pos)}, updates {len(upd)}")
    thresholds = [round(0.5 + 0.05 * i, 2) for i in range(10)]
    for name in args.measures.split(","):
        measure = MEASURES[name]
        hard = nearest(groups, measure, folds, len(texts))
        print(f"\n== {name}: hard negatives {len(hard)} (nearest text of the same session)")
        print("threshold  guards  precision  recall   FP same-session  FP updates  "
              "short (<= 12 words): recall, FP   recall by kind (lowest 3)")
        for threshold in thresholds:
            for guards in (False, True):
                def same(a, b):
                    fa, fb = folds[a], folds[b]
                    if fa == fb:
                        return bool(fa)
                    if measure(fa, fb) < threshold:
                        return False
                    return not guards or (
                        similar._guards(fa) == similar._guards(fb) and not similar._substitutes(fa, fb)
                    )
                tp_by = defaultdict(lambda: [0, 0])
                for kind, a, b in pos:
                    tp_by[kind][1] += 1
                    tp_by[kind][0] += same(a, b)
                tp = sum(v[0] for v in tp_by.values())
                fp_hard = sum(same(a, b) for _, a, b in hard)
                fp_upd = sum(same(a, b) for _, a, b in upd)
                precision = tp / (tp + fp_hard + fp_upd) if tp else 0.0
                short_pos = [(a, b) for _, a, b in pos if len(a.split()) <= 12]
                short_neg = [(a, b) for _, a, b in hard + upd if len(a.split()) <= 12]
                short_recall = sum(same(a, b) for a, b in short_pos) / max(1, len(short_pos))
                short_fp = sum(same(a, b) for a, b in short_neg)
                worst = sorted(tp_by.items(), key=lambda kv: kv[1][0] / kv[1][1])[:3]
                worst_s = ", ".join(f"{k} {v[0] / v[1]:.2f}" for k, v in worst)
                print(f"{threshold:9.2f}  {'on ' if guards else 'off'}     {precision:.4f}    "
                      f"{tp / len(pos):.4f}   {fp_hard:5d}/{len(hard):<5d}     {fp_upd:4d}/{len(upd):<4d}  "
                      f"{short_recall:.4f} of {len(short_pos)}, {short_fp}/{len(short_neg)}      {worst_s}")
    kept = sum(similar.find_same(a, [b]) == 0 for _, a, b in pos)
    said = sum(similar.is_same_fact(a, b) for _, a, b in pos)
    print(f"\nfind_same (key-word prefilter, as the door runs it) finds {kept} of the {said} "
          "positives is_same_fact finds")
    sys.stdout.flush()


def speed(args) -> None:
    import asyncio
    import statistics
    import tempfile
    import time

    from miniclaw.memory import MemoryStore

    texts = [t for g in load_groups(args.data).values() for t in g if len(t) < 300 and "<" not in t]
    random.Random(args.seed).shuffle(texts)
    new_facts, texts = texts[: 6 * args.rounds], texts[6 * args.rounds :]  # never in the file
    workspace = Path(tempfile.mkdtemp(prefix="door-speed-"))
    (workspace / "memory").mkdir()
    lines = ["# Memory", ""]
    for n in range(args.speed):
        if n % 100 == 0:
            lines += ["", f"## 2025-{1 + n // 2800 % 12:02d}-{1 + n // 100 % 28:02d}"]
        text = " ".join(texts[n % len(texts)].split())
        lines.append(f"- {text} (entry {n}) (added at 2025-01-01T10:00:00Z)")
    (workspace / "memory" / "MEMORY.md").write_text("\n".join(lines) + "\n")
    size = (workspace / "memory" / "MEMORY.md").stat().st_size
    print(f"MEMORY.md: {args.speed} entries, {size / 1e6:.1f} MB; {args.rounds} rounds")

    async def run() -> None:
        session = MemoryStore(workspace)  # one store for every add: a chat, an MCP server
        for long, fresh in ((True, True), (False, True), (False, False)):
            timed = {False: [], True: []}
            for n in range(args.rounds):
                for force in ((False, True) if n % 2 else (True, False)):
                    store = MemoryStore(workspace) if fresh else session  # fresh: one-shot
                    fact = new_facts.pop()
                    start = time.perf_counter()
                    added = await store.add(fact, long=long, force=force)
                    timed[force].append(time.perf_counter() - start)
                    assert added.written, (fact, added.duplicate_of)
                    if fresh:
                        store.close()
            check = statistics.median(timed[False]) * 1000
            plain = statistics.median(timed[True]) * 1000
            what = "--long, one-shot" if long else ("daily, one-shot" if fresh else
                                                    "daily, one store (session)")
            print(f"{what:27}: with the door {check:7.2f} ms, without (force) {plain:7.2f} ms,"
                  f" x{check / plain:.2f}")
        session.close()

    time.sleep(2.1)  # the file is older than the door's two-second rule, as a user's is
    asyncio.run(run())


if __name__ == "__main__":
    main()
