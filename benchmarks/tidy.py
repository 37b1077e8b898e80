"""How well memory stays tidy: the door check, `memory tidy`'s clusters and conflict pairs,
and its speed, on a workspace seeded from real memory text with its truth recorded.

The workspace: LoCoMo's turns (`locomo-dev.json`; never committed) of six words or more,
each once (folded), one daily-note entry each (`Speaker: text`) on its session's day. Then
planted, with a fixed seed:

- duplicate groups: a turn and 1-3 copies made the way a model that writes every session
  repeats itself (exact, case and end punctuation, a list bullet, a contraction spelled
  out, one typo, a filler word dropped), on later days, some in MEMORY.md;
- superseded facts: a turn and a later update of it with one value changed (a number, a
  month or weekday, a name from the conversation), sometimes led by "Update:" or "now".

Reported: pairwise precision and recall of the duplicate clusters (every pair inside a
planted group is a true pair; a pair among the untouched turns counts against precision),
the share of planted groups found whole; precision and recall of the conflict pairs; how
many updates the clusters would have merged as duplicates (what `--apply` must not do);
and the door check through the API (`measure_door`: where the door looks, today's note and
MEMORY.md).

Speed: `report.build` on `--speed N` entries of LongMemEval's turns, then LoCoMo's (real
text), median of three.

Run (from the repo root):
  .venv/bin/python benchmarks/tidy.py /work/shared/data/locomo/locomo-dev.json \
      --longmemeval /work/shared/data/longmemeval/longmemeval-dev.json --speed 10000
  .venv/bin/python benchmarks/tidy.py /work/shared/data/locomo/locomo-dev.json \
      --longmemeval /work/shared/data/longmemeval/longmemeval-dev.json --updates-only shown
      (and --updates-only hidden, with feat/door's superseded marker)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from itertools import combinations
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from miniclaw.entries.similar import fold  # noqa: E402
from miniclaw.entries.writing import append_daily, daily_entry, insert_long_term, long_term_item  # noqa: E402

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
CONTRACTIONS = {"I'm": "I am", "don't": "do not", "it's": "it is", "can't": "cannot",
                "I've": "I have", "that's": "that is", "you're": "you are", "didn't": "did not"}
FILLERS = ("really", "just", "so", "very", "actually", "totally", "definitely")


def _session_day(text: str) -> datetime:
    """LoCoMo's `1:56 pm on 8 May, 2023`."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def base_turns(path: Path) -> list[tuple[datetime, str]]:
    """(when, `Speaker: text`) of every turn of six words or more, each text once."""
    out, seen = [], set()
    for sample in json.loads(path.read_text(encoding="utf-8")):
        talk = sample["conversation"]
        for key, turns in talk.items():
            if not (key.startswith("session_") and isinstance(turns, list)):
                continue
            start = _session_day(talk[f"{key}_date_time"])
            for i, turn in enumerate(turns):
                text = " ".join(turn["text"].split())
                if len(text.split()) < 6 or fold(text) in seen:
                    continue
                seen.add(fold(text))
                out.append((start + timedelta(minutes=i), f"{turn['speaker']}: {text}"))
    return out


def rewrite(text: str, how: str, rng: random.Random) -> str:
    """A copy of `text` as a model writing it again might: one kind of change."""
    if how == "case":
        body = text.rstrip(".!?")
        return body[:1].lower() + body[1:] + rng.choice([".", "!", ""])
    if how == "bullet":
        return "- " + text
    if how == "contraction":
        for short, long in CONTRACTIONS.items():
            if short in text:
                return text.replace(short, long, 1)
        return text + " "
    if how == "typo":
        words = text.split()
        long = [i for i, w in enumerate(words) if len(w) >= 6 and w.isalpha()]
        if long:
            i = rng.choice(long)
            w = words[i]
            j = rng.randrange(1, len(w) - 2)
            words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2:]
        return " ".join(words)
    if how == "filler":
        for word in FILLERS:
            hit = re.search(rf"\b{word} ", text)
            if hit:
                return text[:hit.start()] + text[hit.end():]
        return text.replace("!", ".")
    return text  # exact


def update(text: str, names: list[str], rng: random.Random) -> str | None:
    """The same statement with one value changed, or None when it has none to change."""
    numbers = list(re.finditer(r"\b\d+\b", text))
    if numbers:
        hit = rng.choice(numbers)
        value = int(hit.group())
        changed = text[:hit.start()] + str(value + rng.randint(1, 9)) + text[hit.end():]
    elif any(m in text for m in MONTHS + DAYS):
        word = next(m for m in MONTHS + DAYS if m in text)
        pool = MONTHS if word in MONTHS else DAYS
        changed = text.replace(word, rng.choice([m for m in pool if m != word]), 1)
    else:
        speaker, _, body = text.partition(": ")
        found = [n for n in names if re.search(rf"\b{re.escape(n)}\b", body)]
        if not found:
            return None
        name = found[0]
        changed = f"{speaker}: " + re.sub(rf"\b{re.escape(name)}\b",
                                          rng.choice([n for n in names if n != name]), body, 1)
    lead = rng.choice(["", "", "Update: ", "Now: "])
    return lead + changed


def seed(locomo: Path, folder: Path, groups: int, updates: int, rng: random.Random) -> dict:
    """Write the seeded workspace; returns its truth (texts by id, groups, pairs) and what
    was kept apart for the door check (copies and updates added later, unseen turns)."""
    turns = base_turns(locomo)
    rng.shuffle(turns)
    unseen = turns[-200:]
    turns = turns[:-200]
    names = sorted({t.split(": ", 1)[0] for _, t in turns})
    planted_groups: list[list[tuple[datetime, str, bool]]] = []
    for when, text in turns[:groups]:
        copies = []
        for _ in range(rng.choice([1, 1, 2, 3])):
            how = rng.choice(["exact", "case", "bullet", "contraction", "typo", "filler"])
            later = when + timedelta(days=rng.randint(1, 60), minutes=rng.randint(0, 600))
            copies.append((later, rewrite(text, how, rng), rng.random() < 0.25))
        planted_groups.append([(when, text, False)] + copies)
    pairs = []
    pool = turns[groups:]
    for when, text in pool:
        if len(pairs) >= updates:
            break
        changed = update(text, names, rng)
        if changed:
            pairs.append(((when, text), (when + timedelta(days=rng.randint(1, 90)), changed)))
    used = {t for _, t in turns[:groups]} | {p[0][1] for p in pairs}
    entries: list[tuple[datetime, str, bool, str]] = []  # when, text, long term, truth id
    for g, members in enumerate(planted_groups):
        entries += [(w, t, long, f"g{g}") for w, t, long in members]
    for p, (old, new) in enumerate(pairs):
        entries += [(old[0], old[1], False, f"old{p}"), (new[0], new[1], False, f"new{p}")]
    entries += [(w, t, False, "") for w, t in turns if t not in used]
    write_workspace(folder, entries)
    return {"entries": entries, "groups": planted_groups, "pairs": pairs, "unseen": unseen}


def write_workspace(folder: Path, entries: list[tuple[datetime, str, bool, str]]) -> None:
    memory = folder / "memory"
    memory.mkdir(parents=True)
    notes: dict[str, bytes] = {}
    long_term = b""
    for when, text, long, _ in sorted(entries, key=lambda e: e[0]):
        if long:
            long_term, _ = insert_long_term(long_term, when.date(), long_term_item(text, when))
            continue
        day = when.date().isoformat()
        raw = notes.get(day, b"")
        notes[day] = raw + append_daily(raw, when.date(), daily_entry(text, when))
    for day, raw in notes.items():
        (memory / f"{day}.md").write_bytes(raw)
    (memory / "MEMORY.md").write_bytes(long_term)


def ratio(hit: int, total: int) -> str:
    return f"{hit / total:.3f} ({hit}/{total})" if total else "n/a"


async def measure_tidy(folder: Path, truth: dict) -> dict:
    from miniclaw.memory import MemoryStore
    from miniclaw.tidy import report

    ids = {fold(t): i for _, t, _, i in truth["entries"] if i}  # a planted text's truth id
    async with MemoryStore(folder, index_path=folder.parent / "index.sqlite3") as store:
        start = time.perf_counter()
        found = await report.build(store)
        took = time.perf_counter() - start

    def key(entry) -> tuple:
        return (entry.path, entry.line_start)

    def truth_of(entry) -> str:
        return ids.get(fold(entry.text), "")

    true_pairs = 0
    for members in truth["groups"]:
        true_pairs += len(members) * (len(members) - 1) // 2
    predicted = hit = 0
    whole = 0
    sizes = {f"g{g}": len(m) for g, m in enumerate(truth["groups"])}
    merged_updates = 0
    for cluster in found.duplicates:
        labels = [truth_of(e) for e in cluster.entries]
        for a, b in combinations(labels, 2):
            predicted += 1
            hit += bool(a) and a == b and a.startswith("g")
        if len(set(labels)) == 1 and labels[0].startswith("g") and len(labels) == sizes[labels[0]]:
            whole += 1
        olds = {l[3:] for l in labels if l.startswith("old")}
        merged_updates += len(olds & {l[3:] for l in labels if l.startswith("new")})
    conflict_hits = sum(1 for c in found.conflicts
                        if truth_of(c.older).startswith("old")
                        and truth_of(c.newer) == "new" + truth_of(c.older)[3:])
    by_reason: dict[str, list[int]] = {}
    for c in found.conflicts:
        good = truth_of(c.older).startswith("old") and truth_of(c.newer) == "new" + truth_of(c.older)[3:]
        by_reason.setdefault(c.reason, [0, 0])[0] += good
        by_reason[c.reason][1] += 1
    return {
        "entries": found.entries, "seconds": round(took, 2),
        "clusters": len(found.duplicates),
        "cluster pair precision": ratio(hit, predicted),
        "cluster pair recall": ratio(hit, true_pairs),
        "planted groups found whole": ratio(whole, len(truth["groups"])),
        "conflicts": len(found.conflicts),
        "conflict precision": ratio(conflict_hits, len(found.conflicts)),
        "conflict recall": ratio(conflict_hits, len(truth["pairs"])),
        "conflict precision by rule": {r: ratio(*v) for r, v in sorted(by_reason.items())},
        "updates clustered as duplicates": ratio(merged_updates, len(truth["pairs"])),
    }


async def measure_door(folder: Path, truth: dict) -> dict:
    """The add door through the API (`MemoryStore.add`), where it looks: today's note and
    MEMORY.md. A fresh workspace's today gets each planted group's first text, each
    update's old text and 200 other turns; then each planted copy is added (refused: a
    catch), each update's new text and 200 unseen turns (refused: a false alarm); then the
    same with long=True, the originals in MEMORY.md."""
    from miniclaw.memory import MemoryStore

    now = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)
    copies = [t for members in truth["groups"] for _, t, _ in members[1:]]
    first = [members[0][1] for members in truth["groups"]]
    olds = [old for (_, old), _ in truth["pairs"]]
    news = [new for _, (_, new) in truth["pairs"]]
    others = [t for _, t, _, i in truth["entries"] if not i][:200]
    unseen = [t for _, t in truth["unseen"]]
    out = {}
    for long in (False, True):
        ws = folder.parent / f"door-{long}"
        (ws / "memory").mkdir(parents=True)
        async with MemoryStore(ws, index_path=folder.parent / f"door-{long}.sqlite3",
                               now=lambda: now) as store:
            for text in first + olds + others:
                await store.add(text, long=long, force=True)
            counts = {}
            for name, texts in (("copies", copies), ("updates", news), ("unseen", unseen)):
                refused = [not (await store.add(t, long=long)).written for t in texts]
                counts[name] = (sum(refused), len(texts))
        caught, total = counts["copies"]
        false = counts["updates"][0] + counts["unseen"][0]
        out["MEMORY.md" if long else "today's note"] = {
            "copies refused (recall)": ratio(caught, total),
            "precision": ratio(caught, caught + false),
            "updates refused (should be 0)": ratio(*counts["updates"]),
            "unseen turns refused (should be 0)": ratio(*counts["unseen"])}
    return out


async def speed(longmemeval: Path, locomo: Path, n: int, runs: int = 3) -> dict:
    """`report.build` on n entries of LongMemEval's turns (7,905), then LoCoMo's, median
    of `runs`."""
    from miniclaw.memory import MemoryStore
    from miniclaw.tidy import report

    entries = []
    for workspace in json.loads(longmemeval.read_text(encoding="utf-8")):
        for session in workspace["sessions"]:
            when = datetime.fromisoformat(session["date"]).replace(tzinfo=timezone.utc)
            for i, turn in enumerate(session["turns"]):
                text = " ".join(turn["text"].split())[:600]
                if text:
                    entries.append((when + timedelta(seconds=i), f"{turn['speaker']}: {text}",
                                    False, ""))
                if len(entries) >= n:
                    break
    entries += [(w, t, False, "") for w, t in base_turns(locomo)]
    entries = entries[:n]
    times, cpu = [], []
    with tempfile.TemporaryDirectory() as tmp:
        write_workspace(Path(tmp) / "ws", entries)
        for _ in range(runs):
            async with MemoryStore(Path(tmp) / "ws", index_path=Path(tmp) / "index.sqlite3") as store:
                start, used = time.perf_counter(), time.process_time()
                found = await report.build(store)
                times.append(time.perf_counter() - start)
                cpu.append(time.process_time() - used)
    return {"entries": found.entries, "median seconds": round(statistics.median(times), 2),
            "median cpu seconds": round(statistics.median(cpu), 2),
            "runs": [round(t, 2) for t in times], "clusters": len(found.duplicates),
            "conflicts": len(found.conflicts)}


async def knowledge_updates(path: Path, hide: bool) -> dict:
    """LongMemEval's knowledge-update questions: turn recall@5 of the newest evidence
    session's turns (the current answer), and the share of questions whose top 5 holds an
    older evidence session's evidence turn (a stale answer shown), bm25, all history.
    `hide`: the older evidence turns are marked superseded by the newest session's first
    evidence turn as the workspace is written (`add(..., supersedes=ref)`), and searches
    leave them out."""
    from miniclaw.memory import MemoryStore
    from miniclaw.text import printable
    from retrieval import Clock, scratch, turns_of

    rows, marked_all = [], []
    for workspace in json.loads(path.read_text(encoding="utf-8")):
        questions = [q for q in workspace["questions"] if q["type"] == "knowledge-update"]
        if not questions:
            continue
        sessions = sorted(workspace["sessions"], key=lambda s: s["date"])
        date = {s["id"]: s["date"] for s in sessions}
        stale_of: dict[str, str] = {}  # an older evidence turn -> the newer turn superseding it
        plans = []
        for q in questions:
            newest = max(q["evidence_sessions"], key=lambda s: date[s])
            current = [t for t in q["evidence_turns"] if t.startswith(newest + ":")]
            stale = [t for t in q["evidence_turns"] if not t.startswith(newest + ":")]
            if current:
                for t in stale:
                    stale_of[t] = current[0]
                plans.append((q, frozenset(current), frozenset(stale)))
        with scratch("miniclaw-ku-") as (tmp, ws):
            clock = Clock(datetime.fromisoformat(sessions[-1]["date"]).replace(tzinfo=timezone.utc))
            async with MemoryStore(ws, now=clock) as store:
                spans: dict[str, list] = {}
                refs: dict[str, str] = {}
                marked = marked_all
                superseding = {new: [old for old, n in stale_of.items() if n == new]
                               for new in set(stale_of.values())}
                for session in sessions:
                    when = datetime.fromisoformat(session["date"]).replace(tzinfo=timezone.utc)
                    for i, turn in enumerate(session["turns"]):
                        text = printable(f"{turn['speaker']}: {turn['text']}")
                        olds = [refs[o] for o in superseding.get(turn["id"], ()) if o in refs]
                        added = await store.add(text, when=when + timedelta(seconds=i), force=True,
                                                supersedes=olds[0] if hide and olds else None)
                        if hide and olds:
                            marked.append(len(olds))  # one mark an add: 1 in this set
                        entry = added.entry
                        spans.setdefault(entry.path, []).append(
                            (entry.line_start, entry.line_end, turn["id"]))
                        refs[turn["id"]] = entry.ref
                for q, current, stale in plans:
                    clock.current = datetime.fromisoformat(q["question_date"]).replace(tzinfo=timezone.utc)
                    found = await store.search_memories(q["q"], limit=5, days=None, mode="bm25")
                    top = set().union(*(turns_of(r, spans) for r in found)) if found else set()
                    rows.append((len(top & current) / len(current), bool(top & stale), bool(stale)))
    with_stale = [r for r in rows if r[2]]
    return {"questions": len(rows), "older turns marked superseded": sum(marked_all),
            "R@5 of the current evidence": round(statistics.mean(r[0] for r in rows), 4),
            "questions with older evidence": len(with_stale),
            "of those, top 5 holds older evidence": ratio(sum(r[1] for r in with_stale),
                                                          len(with_stale))}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("locomo", type=Path)
    parser.add_argument("--longmemeval", type=Path)
    parser.add_argument("--groups", type=int, default=150)
    parser.add_argument("--updates", type=int, default=150)
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--speed", type=int, default=0, metavar="N")
    parser.add_argument("--updates-only", choices=("shown", "hidden"),
                        help="only LongMemEval's knowledge-update questions, superseded turns shown or hidden")
    args = parser.parse_args()
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        truth = seed(args.locomo, ws, args.groups, args.updates, random.Random(args.seed))
        out["tidy"] = await measure_tidy(ws, truth)
        out["door"] = await measure_door(ws, truth)
    if args.longmemeval and args.updates_only is not None:
        out = {"knowledge-update": await knowledge_updates(args.longmemeval, args.updates_only == "hidden")}
        print(json.dumps(out, indent=2))
        return
    if args.speed and args.longmemeval:
        out["speed"] = await speed(args.longmemeval, args.locomo, args.speed)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
