"""The ranking's tuned constants, each set to another value in the benchmark's process only:
the "+/-50%" columns of benchmarks/README.md's constants table (issue 35).

Run by `retrieval.py` as its patch file, with the variant named in `MC_VARIANT`
(`NAME:SCALE`, the constant multiplied by SCALE; `NAME:off` its neutral value), e.g.:

  MC_BENCH_PATCH=benchmarks/constants_ab.py MC_VARIANT=k1:0.5 \
    .venv/bin/python benchmarks/locomo.py DATA --modes bm25 --per-question /tmp/k1-.json

Then `paired.py compare BASE.json /tmp/k1-.json ...` against the run without a variant.
Nothing in miniclaw reads this file.
"""

import os
from functools import partial


def _bm25_default(name, scale):
    """A default of BM25Scorer's constructor (so bm25 and hybrid's BM25 both get it)."""
    from inspect import signature

    from miniclaw.search.scoring.bm25 import BM25Scorer

    names = list(signature(BM25Scorer.__init__).parameters)[1:]
    defaults = list(BM25Scorer.__init__.__defaults__)
    position = names.index(name)
    value = defaults[position]
    if name == "neighbor_weights":
        defaults[position] = () if scale == "off" else tuple((o, w * scale) for o, w in value)
    else:
        defaults[position] = 0.0 if scale == "off" else value * scale
    BM25Scorer.__init__.__defaults__ = tuple(defaults)


def _module(module, name, scale, cast=float, neutral=None):
    import importlib

    mod = importlib.import_module(module)
    setattr(mod, name, neutral if scale == "off" else cast(getattr(mod, name) * scale))


def _pivot(scale):
    """The length normalization's pivot (the median entry length) times `scale`."""
    from miniclaw.index.search_index import SearchIndex

    real = SearchIndex.corpus

    def corpus(self, terms):
        count, pivot, df = real(self, terms)
        return count, pivot * scale, df
    SearchIndex.corpus = corpus


def _no_spelling(_):
    from miniclaw.search import ranker

    ranker.suggest = lambda *args, **kwargs: None


def _vector_default(name, scale):
    from miniclaw.semantic import retriever

    setattr(retriever, name.upper(), getattr(retriever, name.upper()) * scale)
    defaults = list(retriever.VectorRetriever.__init__.__defaults__)
    names = ["embed_per_search", "fusion_weight", "min_similarity"]
    defaults[names.index(name)] = getattr(retriever, name.upper())
    retriever.VectorRetriever.__init__.__defaults__ = tuple(defaults)


def _vector_candidates(scale):
    """The vector retriever's list length (a class attribute read from CANDIDATES)."""
    from miniclaw.semantic import retriever

    retriever.VectorRetriever.candidates = int(retriever.CANDIDATES * scale)


VARIANTS = {
    "k1": partial(_bm25_default, "k1"),
    "b": partial(_bm25_default, "b"),
    "neighbours": partial(_bm25_default, "neighbor_weights"),
    "date_weight": partial(_bm25_default, "date_weight"),
    "date_slack": partial(_module, "miniclaw.search.ranker", "DATE_SLACK_DAYS",
                          cast=lambda v: int(round(v)), neutral=0),
    "max_gap": partial(_module, "miniclaw.search.neighbours", "MAX_GAP_S", cast=int, neutral=0),
    "candidates": partial(_module, "miniclaw.search.ranker", "_CANDIDATES", cast=int),
    "pivot": _pivot,
    "own_weight": partial(_module, "miniclaw.search.ranker", "OWN_WEIGHT", neutral=0.0),
    "spelling": _no_spelling,
    "fusion_weight": partial(_vector_default, "fusion_weight"),
    "min_similarity": partial(_vector_default, "min_similarity"),
    "vec_candidates": _vector_candidates,
    "widen": partial(_module, "miniclaw.semantic.retriever", "WIDEN", cast=int),
    "long_terms": partial(_module, "miniclaw.semantic.retriever", "LONG_TERMS", cast=int),
    "short_terms": partial(_module, "miniclaw.search.neighbours", "SHORT_TERMS", cast=int),
}

for _spec in filter(None, os.environ.get("MC_VARIANT", "").split("+")):
    _name, _, _scale = _spec.partition(":")
    VARIANTS[_name](_scale if _scale == "off" else float(_scale or 1))
