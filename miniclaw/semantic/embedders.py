"""Which model embeds memories: the user's choice (config.json's `"embedder"`,
`MINICLAW_EMBEDDER_*`: `config.embedder_settings`).

An embedder has `identity` (the name its vectors are kept under in the index: a search never
compares vectors of two models), `dim`, `batch` (texts stored at a time), `label` (for
people), `embed(texts)` (an (n, dim) float32 array of unit rows) and `embed_query(text)`.
Three kinds:

- `bundled` (the default): the offline all-MiniLM-L6-v2 of the `semantic` extra
  (`model.py`), loaded on its first use; its identity is the model's name, as before there
  was a choice, so an index's vectors stay valid.
- `openai`: any OpenAI-compatible `/v1/embeddings` server (`endpoint.py`).
- `sentence-transformers`, `fastembed`: a model of that library, by name or folder, when the
  library is installed (miniclaw does not depend on either, and never downloads a model:
  the hub is asked offline, so the model must be there already).

`available()`, `load()` and `failed()` are what `search/scoring` asks of "model" (PLUGINS),
whichever the kind. Cheap until a semantic search runs: the settings are read only then.
"""

from __future__ import annotations

import functools
import importlib.util
import threading
from collections.abc import Sequence

from miniclaw import config
from miniclaw.errors import ModelUnavailable  # noqa: F401 (`embedders.ModelUnavailable`)
from miniclaw.errors import UsageError
from miniclaw.semantic import model as bundled_model

LIBRARY_BATCH = 32  # texts per call to a local library's model

#: the Python package each library kind imports, and what to install for it
LIBRARIES = {"sentence-transformers": ("sentence_transformers", "sentence-transformers"),
             "fastembed": ("fastembed", "fastembed")}


class Bundled:
    """The offline model of the `semantic` extra, loaded when it first embeds."""

    kind = "bundled"
    identity = bundled_model.NAME
    dim = bundled_model.DIM
    batch = 256
    label = f"bundled {bundled_model.NAME} (offline)"

    def embed(self, texts: Sequence[str]):
        return bundled_model.load().embed(texts)

    def embed_query(self, text: str):
        return bundled_model.load().embed_query(text)


class LibraryEmbedder:
    """A sentence-transformers or fastembed model by name (or folder), loaded at first use."""

    def __init__(self, settings: config.EmbedderSettings) -> None:
        self.kind, self.model = settings.kind, settings.model or ""
        self.batch = settings.batch_size or LIBRARY_BATCH
        self.label = f"{self.model} ({self.kind})"
        self._loaded = None
        self._lock = threading.Lock()
        self.dim: int | None = settings.dimension

    @property
    def identity(self) -> str:
        if self.dim is None:  # the model says it once loaded
            self._load()
        return f"{self.kind}:{self.model}:{self.dim}"

    def _load(self):
        with self._lock:
            if self._loaded is None:
                bundled_model.import_numpy()
                module = _library(self.kind)
                with _failing(self.label, "did not load"):
                    if self.kind == "sentence-transformers":
                        self._loaded = module.SentenceTransformer(self.model)
                        dim = self._loaded.get_sentence_embedding_dimension()
                    else:
                        self._loaded = module.TextEmbedding(model_name=self.model)
                        dim = len(next(iter(self._loaded.embed(["dimension"]))))
                if self.dim is not None and dim != self.dim:
                    raise ModelUnavailable(f"the embedding model {self.label} makes vectors "
                                           f"of {dim} numbers, not the dimension set ({self.dim})")
                self.dim = int(dim)
            return self._loaded

    def embed(self, texts: Sequence[str]):
        import numpy as np

        loaded = self._load()
        with _failing(self.label, "could not run"):
            if self.kind == "sentence-transformers":
                rows = loaded.encode(list(texts), batch_size=self.batch, convert_to_numpy=True)
            else:
                rows = list(loaded.embed(list(texts), batch_size=self.batch))
            matrix = np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)
        if matrix.shape[1] != self.dim:
            raise ModelUnavailable(f"the embedding model {self.label} made vectors of "
                                   f"{matrix.shape[1]} numbers, not {self.dim}")
        return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)

    def embed_query(self, text: str):
        return self.embed([text])[0]


class _failing:
    """What a library raises while loading or running its model, as `ModelUnavailable`
    (its last line): a search then runs BM25 and says why."""

    def __init__(self, label: str, what: str) -> None:
        self.label, self.what = label, what

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, exc, trace) -> bool:
        if exc is None or isinstance(exc, ModelUnavailable) or not isinstance(exc, Exception):
            return False
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:200]
        raise ModelUnavailable(f"the embedding model {self.label} {self.what} ({detail})") \
            from exc


def _library(kind: str):
    """The library's module, imported with the Hugging Face hub offline (unless this process
    set it otherwise): a model not there already is an error, never a download."""
    return bundled_model._import_with(LIBRARIES[kind][0], HF_HUB_OFFLINE="1")


def settings() -> config.EmbedderSettings:
    return config.embedder_settings()


@functools.lru_cache(maxsize=8)
def _made(chosen: config.EmbedderSettings):
    if chosen.kind == "bundled":
        return Bundled()
    if chosen.kind == "openai":
        from miniclaw.semantic.endpoint import ServerEmbedder

        return ServerEmbedder(chosen)
    return LibraryEmbedder(chosen)


def current():
    """The configured embedder, not loaded (one object per setting in a process: what it
    learnt, e.g. a server's dimension, is kept)."""
    return _made(settings())


def _needs_numpy() -> str | None:
    if importlib.util.find_spec("numpy") is None:
        return "numpy"
    return None


def available() -> tuple[bool, str]:
    """(True, "") when the configured embedder can be used, else (False, what to install)."""
    chosen = settings()
    if chosen.kind == "bundled":
        return bundled_model.available()
    missing = [name for name in (_needs_numpy(),) if name]
    if chosen.kind in LIBRARIES:
        module, package = LIBRARIES[chosen.kind]
        if importlib.util.find_spec(module) is None:
            missing.append(package)
    if missing:
        return False, (f"the {chosen.kind} embedder needs {' and '.join(missing)} "
                       f"(pip install {' '.join(missing)})")
    return True, ""


def installed() -> bool:
    """`available` without building the install hint (a bm25 search that found nothing asks
    only this, to suggest meaning search: a bad embedder setting is then no error, only no
    suggestion; the semantic modes say it)."""
    try:
        if settings().kind == "bundled":
            return bundled_model.installed()
        return available()[0]
    except UsageError:
        return False


def load():
    """The configured embedder, ready: the bundled model loaded (`model.load`: RuntimeError
    when not installed, `ModelUnavailable` when it cannot load); another kind is loaded
    when it first embeds, and fails then."""
    embedder = current()
    if embedder.kind == "bundled":
        bundled_model.load()
    else:
        ok, why = available()
        if not ok:
            raise RuntimeError(why)
    return embedder


def failed() -> str | None:
    """Why the bundled model could not load in this process (None: another kind, or it did)."""
    return bundled_model.failed() if settings().kind == "bundled" else None
