"""An OpenAI-compatible `/v1/embeddings` server as the embedder: Ollama, llama.cpp's server,
LM Studio, OpenAI itself (`"embedder": {"kind": "openai", ...}` in config.json).

Every way a server can fail (down, too slow, an HTTP error, an answer that is not
embeddings, too few vectors, vectors of another length) is one `ModelUnavailable` whose
message names the server and what went wrong: a search then runs BM25 and says so, as when
the bundled model cannot load (`retriever.without_model`). The message never holds the API
key, nor the server's error body (OpenAI's names part of a wrong key), nor a URL's
user:password. Nothing is remembered: the next search asks the server again (it may be up).

`fetch` is plain Python (lists of floats, checked), so the client needs no numpy; `embed`
makes the float32 unit rows the retriever ranks with (numpy: `pip install numpy`, or the
`semantic` extra).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

from miniclaw.config import EmbedderSettings
from miniclaw.errors import ModelUnavailable

BATCH = 64  # texts a request unless `batch_size` says otherwise (OpenAI takes up to 2048)
CONNECT_TIMEOUT = 5.0  # a server on this machine or network answers a connection at once
# After a request timed out, a long-lived process (chat, MCP) does not ask again for this
# long: each search would wait the whole timeout again before running bm25.
RETRY_AFTER_TIMEOUT = 60.0
# The longest answer read: 64 texts of 4,096 numbers as JSON take ~6 MB. Past this, a
# server (or something posing as one) is sending what is not a batch of vectors.
MAX_ANSWER = 64 << 20


def shown_url(url: str) -> str:
    """The URL as said in messages: without user:password@, query or fragment."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class ServerEmbedder:
    """Embeddings from an OpenAI-compatible server. `identity` names its vectors in the
    index: kind, model and dimension (the dimension is the first answer's, unless set)."""

    kind = "openai"

    def __init__(self, settings: EmbedderSettings) -> None:
        self.settings = settings
        self.model = settings.model or ""
        self.dim: int | None = settings.dimension
        self.batch = settings.batch_size or BATCH
        self.url = settings.base_url.rstrip("/") + "/embeddings"
        self.label = f"{self.model} at {shown_url(settings.base_url)}"
        self._client = None
        self._lock = threading.Lock()
        self._quiet_until = 0.0  # monotonic time before which a timed-out server is not asked

    @property
    def identity(self) -> str:
        if self.dim is None:  # the server says it: one short text asked
            self.fetch(["dimension"])
        return f"openai:{self.model}:{self.dim}"

    def _fail(self, what: str) -> ModelUnavailable:
        return ModelUnavailable(f"the embedding server {shown_url(self.settings.base_url)} "
                                f"{what}")

    def _http(self):
        import httpx

        with self._lock:
            if self._client is None:
                timeout = self.settings.timeout
                self._client = httpx.Client(timeout=httpx.Timeout(
                    timeout, connect=min(CONNECT_TIMEOUT, timeout)))
            return self._client

    def fetch(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector (a list of floats) per text, in order, checked: as many as texts, all of
        the one length (the `dimension` set, or the first answer's), finite numbers."""
        import httpx

        headers = {"Authorization": f"Bearer {self.settings.api_key}"} \
            if self.settings.api_key else {}
        slow = f"did not answer within {self.settings.timeout:g} s"
        if time.monotonic() < self._quiet_until:
            raise self._fail(f"{slow} (asked again within a minute)")
        try:
            status, body = self._post(headers, {"model": self.model, "input": list(texts)})
        except httpx.TimeoutException:
            self._quiet_until = time.monotonic() + RETRY_AFTER_TIMEOUT
            raise self._fail(slow) from None
        except httpx.HTTPError as exc:
            why = "connection refused" if isinstance(exc, httpx.ConnectError) \
                else type(exc).__name__
            raise self._fail(f"is not reachable ({why})") from None
        if status != 200:
            raise self._fail(f"answered HTTP {status} (check base_url, the model name and the "
                             "API key)")
        if body is None:
            raise self._fail(f"answered more than {MAX_ANSWER >> 20} MB")
        try:
            data = json.loads(body)["data"]
            rows = sorted(data, key=lambda item: item["index"]) \
                if all("index" in item for item in data) else data
            vectors = [row["embedding"] for row in rows]
            if not all(isinstance(v, list) and all(
                    type(x) in (float, int) and math.isfinite(x) for x in v) for v in vectors):
                raise ValueError
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            raise self._fail("did not answer with embeddings (is base_url an "
                             "OpenAI-compatible API ending in /v1?)") from None
        if len(vectors) != len(texts):
            raise self._fail(f"answered {len(vectors)} vectors for {len(texts)} texts")
        lengths = {len(v) for v in vectors}
        expected = self.dim if self.dim is not None else next(iter(lengths), 0)
        if lengths - {expected} or not expected:
            wrong = sorted(lengths - {expected}) or [0]
            raise self._fail(f"answered vectors of {wrong[0]} numbers, expected {expected}"
                             + (" (the dimension set)" if self.settings.dimension else
                                " (the model changed? `miniclaw memory index` embeds again)"
                                if self.dim is not None else ""))
        self.dim = expected
        return vectors

    def _post(self, headers: dict[str, str], payload: dict) -> tuple[int, bytes | None]:
        """(status, body) of one request; the body None when it is over MAX_ANSWER bytes.
        The whole answer must come within the timeout: a server that trickles an endless
        body is cut off as one that sends nothing (httpx's read timeout is per chunk)."""
        import httpx

        deadline = time.monotonic() + self.settings.timeout
        with self._http().stream("POST", self.url, headers=headers, json=payload) as response:
            if response.status_code != 200:
                return response.status_code, b""
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_ANSWER:
                    return 200, None
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout("the answer took too long")
            return 200, bytes(body)

    def embed(self, texts: Sequence[str]):
        """An (n, dim) float32 array of unit rows (a dot product is then the cosine)."""
        import numpy as np

        out = []
        for start in range(0, len(texts), self.batch):
            out.extend(self.fetch(texts[start:start + self.batch]))
        matrix = np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim or 0)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.maximum(norms, 1e-12)

    def embed_query(self, text: str):
        return self.embed([text])[0]
