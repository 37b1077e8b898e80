"""A real OpenAI-compatible `/v1/embeddings` server on 127.0.0.1, for the embedder tests.

`behaviour` says how it answers (the test changes it between requests):
- "good": one vector per input, `dim` numbers, made from the text's words (each word hashed
  into a bucket), so texts that share words are close, deterministically;
- "bundled": the bundled offline model's vectors (only where the semantic extra is there);
- "slow": nothing until the test is over (the client's timeout); "endless": a body that
  never ends, sent a little at a time (each piece within the read timeout);
- "wrong_dim": vectors of `dim + 1` numbers; "wrong_count": one vector fewer than inputs;
- "garbage": a body that is not JSON; "not_embeddings": JSON without vectors;
- bytes: that body, with status 200;
- "error": HTTP 500 with a body that quotes the key sent (a server must never get it shown).

Each request's JSON body and Authorization header are recorded in `requests`.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def word_vector(text: str, dim: int) -> list[float]:
    vector = [0.0] * dim
    for word in text.lower().replace("?", " ").replace(".", " ").split():
        digest = hashlib.sha256(word.encode()).digest()
        vector[digest[0] % dim] += 1.0 if digest[1] % 2 else -1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


class EmbeddingServer:
    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.behaviour = "good"
        self.requests: list[tuple[dict, str | None]] = []
        self.stop = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append((body, self.headers.get("Authorization")))
                owner.answer(self, body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, handler: BaseHTTPRequestHandler, body: dict) -> None:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        how = self.behaviour
        if isinstance(how, bytes):  # this body, as it is
            return self._send(handler, 200, how)
        if how == "slow":
            self.stop.wait(30)
            return
        if how == "endless":  # a body that never ends, a little at a time
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.end_headers()
            handler.wfile.write(b'{"data": [')
            while not self.stop.wait(0.01):
                try:
                    handler.wfile.write(b"[0.5, 0.5], " * 100)
                except OSError:  # the client hung up
                    return
            return
        if how == "error":
            return self._send(handler, 500, json.dumps({"error": {"message": "bad key "
                              + str(handler.headers.get("Authorization"))}}).encode())
        if how == "garbage":
            return self._send(handler, 200, b"<html>not json")
        if how == "not_embeddings":
            return self._send(handler, 200, json.dumps({"data": [{"index": 0}]}).encode())
        if how == "bundled":
            from miniclaw.semantic import model

            vectors = model.load().embed(texts).tolist()
        else:
            dim = self.dim + 1 if how == "wrong_dim" else self.dim
            vectors = [word_vector(text, dim) for text in texts]
        if how == "wrong_count":
            vectors = vectors[:-1]
        data = [{"object": "embedding", "index": i, "embedding": v}
                for i, v in reversed(list(enumerate(vectors)))]  # any order: by index
        self._send(handler, 200, json.dumps({"object": "list", "data": data,
                                             "model": body["model"]}).encode())

    @staticmethod
    def _send(handler, status: int, payload: bytes) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def closed_port_url() -> str:
    """The URL of a port nothing listens on (a server that is down)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
