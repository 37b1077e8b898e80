"""Search modes by name: which retrievers run, fused how, with which stages.

A mode is one retriever (`bm25`, `keyword`: `TermRetriever`s) or several fused by
score (`fusion.py`); `auto` is the best available one (`best_available`): hybrid when the
embedding model is installed and loads, else bm25. A new retriever is a class with the `Retriever` shape
(`base.py`), registered under a mode name with `register_mode`, from any module: miniclaw
itself needs no edit (docs/ARCHITECTURE.md, "Adding a retriever").
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, NamedTuple

from miniclaw.errors import UsageError
from miniclaw.search.scoring.base import (Candidates, CorpusStats, Request, Retriever, Scorer,
                                          TermRetriever)
from miniclaw.search.scoring.bm25 import BM25Scorer
from miniclaw.search.scoring.keyword import KeywordScorer

if TYPE_CHECKING:
    from miniclaw.search.hints import SearchWarning

DEFAULT_MODE = "bm25"


class SearchMode(NamedTuple):
    """What a search runs: its retrievers (fused when more than one) and the stages'
    parameters (neighbour context in sequence sources, the date cue)."""

    name: str
    retrievers: tuple[Retriever, ...]
    neighbor_weights: tuple[tuple[int, float], ...] = ()
    date_weight: float = 0.0
    degraded: SearchWarning | None = None  # the mode asked for, when it could not run
    auto: bool = False  # chosen by `auto` (the best available), not named by the caller

    @classmethod
    def of(cls, retriever: Retriever, name: str | None = None) -> SearchMode:
        """A one-retriever mode, with the stage parameters the retriever carries."""
        return cls(name or retriever.name, (retriever,),
                   tuple(getattr(retriever, "neighbor_weights", ())),
                   float(getattr(retriever, "date_weight", 0.0)))


#: The modes that find by meaning live a floor up (miniclaw.semantic: the embedding model and
#: its retriever, which builds on this registry), named here by module path and imported
#: only when one runs: search never imports semantic, so the two make no import circle.
PLUGINS = {"model": "miniclaw.semantic.embedders", "retriever": "miniclaw.semantic.retriever"}


def plugin(name: str) -> ModuleType:
    """The module `PLUGINS` names ("model", "retriever"), imported now."""
    return import_module(PLUGINS[name])


def _semantic(name: str) -> Callable[[], SearchMode]:
    """A semantic mode, its module (and the model's) imported only when it runs."""
    def make() -> SearchMode:
        return getattr(plugin("retriever"), f"{name}_mode")()
    return make


AUTO_MODE = "auto"  # the chat's, the context builder's and the memory tools' default
_unloadable: str | None = None  # why the installed model failed to load (once per process)


def best_available() -> tuple[str, str]:
    """(the mode `auto` runs, why): hybrid when the embedding model is installed and loads
    (loading it here, once per process: a long-lived process pays it at its first search),
    else bm25. A model not installed is no degraded warning (nothing the caller named is
    refused); one installed that did not load is (`_auto`: it is not what the user expects)."""
    global _unloadable
    embedding = plugin("model")
    ok, why = embedding.available()
    if not ok:
        return BM25Scorer.name, why
    if _unloadable is None:
        try:
            embedding.load()
        except embedding.ModelUnavailable as exc:  # a broken install, too little memory:
            _unloadable = str(exc)  # bm25, said why
    if _unloadable is not None:
        return BM25Scorer.name, _unloadable
    return "hybrid", "the embedding model is installed"


def _auto() -> SearchMode:
    name, _ = best_available()
    if _unloadable is not None:  # installed but did not load: said, as for a named mode
        without_model = plugin("retriever").without_model
        return without_model("hybrid", _unloadable, installed=True)._replace(auto=True)
    return get_mode(name)._replace(auto=True)


# The ladder of modes (issue 16): hybrid (BM25 + vectors), vector, bm25 (the ladder's
# "keyword"), keyword (word count; also called basic). `keyword` keeps its meaning: it is
# in users' scripts and in JSON (`"mode"`). `auto`: the best of them available here.
_MODES: dict[str, Callable[[], Retriever | SearchMode]] = {
    KeywordScorer.name: KeywordScorer,
    BM25Scorer.name: BM25Scorer,
    "hybrid": _semantic("hybrid"),
    "vector": _semantic("vector"),
    "basic": KeywordScorer,
    AUTO_MODE: _auto,
}
MODE_NAMES = tuple(_MODES)  # the built-in modes


def register_mode(name: str, make: Callable[[], Retriever | SearchMode]) -> None:
    """Make `make()` (a retriever, or a SearchMode of several) the mode called `name`."""
    _MODES[name.strip().lower()] = make


def check_mode(mode: str | None) -> str:
    """The registered name of a mode (None: the default), or a `UsageError` listing them;
    nothing is built (`auto` loads no model here)."""
    name = DEFAULT_MODE if mode is None else mode.strip().lower()
    if name not in _MODES:
        raise UsageError(f"unknown ranking mode {mode!r}; choose one of: {', '.join(_MODES)}")
    return name


def get_mode(mode: str | None) -> SearchMode:
    """The search mode for a mode name (None: the default)."""
    name = check_mode(mode)
    made = _MODES[name]()
    return made if isinstance(made, SearchMode) else SearchMode.of(made, name)


__all__ = ["Candidates", "CorpusStats", "Request", "Retriever", "Scorer", "SearchMode",
           "TermRetriever", "get_mode", "check_mode", "register_mode", "best_available", "AUTO_MODE",
           "DEFAULT_MODE", "MODE_NAMES"]
