"""Paired comparison of two rankings on the same questions: is a change real or noise?

Issue 35's method. `locomo.py` / `longmemeval.py --per-question FILE` save every question's
scores per mode; this script compares a base and a new run question by question (both ran
the same questions: paired), on each dev set given:

- the mean delta of turn recall@5 (R@5) and MRR, with a 95% percentile bootstrap interval
  (10,000 resamples of the questions with replacement, fixed seed), per set and per
  question type;
- the same interval by resampling whole conversations (LoCoMo) / workspaces (LongMemEval),
  the questions of one conversation not being independent. With 5 and 8 clusters this
  interval is coarse (few distinct resamples) and shown as a check, not used by the rule;
- the rule: a change is **kept** only when its R@5 interval (questions) is above zero on at
  least one set and is not wholly below zero on any other (no significant loss).

For anything fitted (a constant chosen among values), `fit` gives leave-one-cluster-out
figures: for each conversation, the value best on the *other* conversations of the set is
scored on that one; the held-out picks form a run compared with the base as above.

Run (from the repo root):
  .venv/bin/python benchmarks/paired.py compare BASE.json NEW.json [BASE2.json NEW2.json ...]
      (FILE or FILE:MODE; MODE defaults to bm25 for BASE and to the same mode for NEW)
  .venv/bin/python benchmarks/paired.py fit BASE.json CAND1.json CAND2.json ...
"""

from __future__ import annotations

import json
import random
import sys
from collections import defaultdict
from pathlib import Path

RESAMPLES = 10_000
SEED = 35  # the number: fixed, so figures repeat
METRICS = ("R@5", "MRR")


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def percentile(sorted_values: list[float], q: float) -> float:
    """The q-quantile (0..1) of sorted values, linear between the two nearest ranks."""
    if not sorted_values:
        return 0.0
    position = q * (len(sorted_values) - 1)
    low = int(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def bootstrap(deltas: list[float], clusters: list | None = None, resamples: int = RESAMPLES,
              seed: int = SEED) -> tuple[float, float, float]:
    """(mean delta, 2.5% and 97.5% bootstrap percentiles). Without `clusters` the questions
    are resampled; with them (one label per delta) whole clusters are, and each resample's
    mean is over the questions of the clusters drawn (a cluster drawn twice counts twice)."""
    if not deltas:
        return 0.0, 0.0, 0.0
    rng = random.Random(seed)
    means = []
    if clusters is None:
        n = len(deltas)
        for _ in range(resamples):
            means.append(sum(rng.choices(deltas, k=n)) / n)
    else:
        groups: dict = defaultdict(list)
        for delta, cluster in zip(deltas, clusters):
            groups[cluster].append(delta)
        sums = [(sum(g), len(g)) for g in groups.values()]
        for _ in range(resamples):
            drawn = rng.choices(sums, k=len(sums))
            means.append(sum(s for s, _ in drawn) / sum(c for _, c in drawn))
    means.sort()
    return mean(deltas), percentile(means, 0.025), percentile(means, 0.975)


def load(spec: str, default_mode: str = "bm25") -> tuple[list[dict], str]:
    """Per-question rows of FILE[:MODE] (saved by `--per-question`), and the mode read."""
    path, _, mode = spec.partition(":")
    if not Path(path).exists() and ":" in spec:  # a path with a colon in it
        path, mode = spec, ""
    modes = json.loads(Path(path).read_text(encoding="utf-8"))["modes"]
    mode = mode or (default_mode if default_mode in modes else next(iter(modes)))
    return modes[mode], mode


def paired(base: list[dict], new: list[dict], metric: str) -> tuple[list[float], list, list]:
    """Deltas new - base per question (matched by id), with each one's cluster and group."""
    by_id = {row["id"]: row for row in base}
    missing = [row["id"] for row in new if row["id"] not in by_id]
    if missing or len(new) != len(base):
        raise SystemExit(f"the runs do not hold the same questions ({len(base)} / {len(new)})")
    deltas = [row[metric] - by_id[row["id"]][metric] for row in new]
    return deltas, [row["cluster"] for row in new], [row["group"] for row in new]


def compare(base: list[dict], new: list[dict], metrics=METRICS, resamples: int = RESAMPLES,
            seed: int = SEED) -> dict:
    """Per metric: the base and new means, the delta with its question and cluster
    intervals, and per group (question type) the delta with its question interval."""
    out = {}
    for metric in metrics:
        deltas, clusters, groups = paired(base, new, metric)
        by_group = defaultdict(list)
        for delta, group in zip(deltas, groups):
            by_group[group].append(delta)
        out[metric] = {
            "base": mean(r[metric] for r in base), "new": mean(r[metric] for r in new),
            "n": len(deltas),
            "questions": bootstrap(deltas, None, resamples, seed),
            "clusters": bootstrap(deltas, clusters, resamples, seed),
            "groups": {g: (len(d), *bootstrap(d, None, resamples, seed))
                       for g, d in sorted(by_group.items())},
        }
    return out


def kept(intervals: list[tuple[float, float, float]]) -> bool:
    """The rule: the interval above zero on at least one set, and on no set below zero
    (wholly: a significant loss). Each item is (delta, low, high)."""
    return (any(low > 0 for _, low, _ in intervals)
            and not any(high < 0 for _, _, high in intervals))


def fit(base: list[dict], candidates: dict[str, list[dict]], metric: str = "R@5"
        ) -> tuple[list[dict], dict]:
    """Leave one cluster out: for each cluster, the candidate with the best mean `metric` on
    the other clusters (the first listed on a tie) gives that cluster's rows. Returns the
    held-out rows (comparable with `base` by `compare`) and the pick per cluster."""
    clusters = sorted({row["cluster"] for row in base})
    rows, picks = [], {}
    for held in clusters:
        def train(name):
            return mean(r[metric] for r in candidates[name] if r["cluster"] != held)
        best = max(candidates, key=train)  # max keeps the first of equals
        picks[held] = best
        rows += [r for r in candidates[best] if r["cluster"] == held]
    return rows, picks


def _line(label: str, triple, width: int = 34) -> str:
    delta, low, high = triple
    return f"{label:<{width}}{delta:+.3f} [{low:+.3f}, {high:+.3f}]"


def report(name: str, result: dict) -> None:
    for metric, r in result.items():
        print(f"{name}\n  {metric}: base {r['base']:.3f} -> new {r['new']:.3f}  (n {r['n']})")
        print("  " + _line("delta, questions resampled", r["questions"]))
        print("  " + _line("delta, clusters resampled", r["clusters"]))
        for group, (n, *triple) in r["groups"].items():
            print("    " + _line(f"{group} ({n})", triple, 32))


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["compare", "fit"])
    ap.add_argument("files", nargs="+", help="compare: BASE NEW pairs (one per dev set); "
                                           "fit: BASE then the candidates of one set")
    ap.add_argument("--resamples", type=int, default=RESAMPLES)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--brief", action="store_true",
                    help="one line: each set's R@5 and MRR delta [interval], and the rule")
    args = ap.parse_args(argv)
    if args.command == "fit":
        base, mode = load(args.files[0])
        candidates = {spec: load(spec, mode)[0] for spec in args.files[1:]}
        rows, picks = fit(base, candidates)
        print("picked per held-out cluster:", picks)
        report("held-out picks vs base", compare(base, rows, resamples=args.resamples,
                                                   seed=args.seed))
        return
    if len(args.files) % 2:
        raise SystemExit("compare takes BASE NEW pairs")
    results, primary = {}, []
    for base_spec, new_spec in zip(args.files[::2], args.files[1::2]):
        base, mode = load(base_spec)
        new, _ = load(new_spec, mode)
        name = f"{base_spec} -> {new_spec}"
        results[name] = compare(base, new, resamples=args.resamples, seed=args.seed)
        primary.append(results[name]["R@5"]["questions"])
    if args.brief:
        print("  ".join(f"{m} {_line('', r[m]['questions'], 0)}" for r in results.values()
                        for m in METRICS), " KEPT" if kept(primary) else " REJECTED")
        return
    if args.json:
        json.dump(results, sys.stdout, indent=1)
        print()
    else:
        for name, result in results.items():
            report(name, result)
    print("rule (R@5, questions):", "KEPT" if kept(primary) else "REJECTED")


if __name__ == "__main__":
    main()
