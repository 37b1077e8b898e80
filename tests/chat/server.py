"""A real OpenAI-compatible chat-completions server on 127.0.0.1, scripted by the test.

Each POST to /v1/chat/completions is recorded (raw body and JSON) and answered by the next
entry of `script`, or by `default` once the script is used up:
- `stream(chunk, ...)`: server-sent events, one `data: {...}` per chunk, then `data: [DONE]`;
  a chunk that is `PAUSE` makes the server wait until the test sets `server.resume`;
- `reply(status, body)`: one JSON body with that status;
- `HANG`: send nothing until the test is over (for read timeouts);
- `raw(write)`: a hostile server: headers, then `write(wfile, stop)` sends what it likes
  (an endless line, an endless body, keep-alives forever) until `stop` is set or the
  client hangs up.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAUSE = object()
HANG = ("hang",)


def text_chunks(*pieces: str) -> list[dict]:
    return [{"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
            for piece in pieces] + [{"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]


def tool_call_chunks(call_id: str, name: str, arguments: dict) -> list[dict]:
    """A tool call sent in fragments, as real servers do: the name first, then the arguments
    in two pieces."""
    text = json.dumps(arguments)
    half = len(text) // 2

    def delta(part: dict) -> dict:
        return {"choices": [{"index": 0, "delta": {"tool_calls": [part]}, "finish_reason": None}]}

    return [delta({"index": 0, "id": call_id, "type": "function",
                   "function": {"name": name, "arguments": ""}}),
            delta({"index": 0, "function": {"arguments": text[:half]}}),
            delta({"index": 0, "function": {"arguments": text[half:]}}),
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]


def stream(*chunks) -> tuple:
    return ("stream", chunks)


def reply(status: int, body) -> tuple:
    return ("reply", status, body)


def raw(write, content_type: str = "text/event-stream") -> tuple:
    return ("raw", content_type, write)


def forever(piece: bytes, every: float = 0.0, first: bytes = b""):
    """A `raw` writer sending `first`, then `piece` again and again (every `every` s)."""
    def write(wfile, stop: threading.Event) -> None:
        wfile.write(first)
        while not stop.is_set():
            wfile.write(piece)
            wfile.flush()
            if every:
                stop.wait(every)
    return write


class FakeModelServer:
    def __init__(self, script=(), default=None) -> None:
        self.script = list(script)
        self.default = default or stream(*text_chunks("OK."))
        self.bodies: list[str] = []
        self.requests: list[dict] = []
        self.resume = threading.Event()
        self.done = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                with server._lock:
                    server.bodies.append(raw)
                    server.requests.append(json.loads(raw))
                    step = server.script.pop(0) if server.script else server.default
                try:
                    server._answer(self, step)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing to do

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def _answer(self, handler: BaseHTTPRequestHandler, step: tuple) -> None:
        kind = step[0]
        if kind == "hang":
            self.done.wait(30)
            return
        if kind == "raw":
            handler.send_response(200)
            handler.send_header("Content-Type", step[1])
            handler.end_headers()
            step[2](handler.wfile, self.done)
            return
        if kind == "reply":
            _, status, body = step
            data = (body if isinstance(body, str) else json.dumps(body)).encode()
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.end_headers()
        for chunk in step[1]:
            if chunk is PAUSE:
                self.resume.wait(10)
                continue
            handler.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            handler.wfile.flush()
        handler.wfile.write(b"data: [DONE]\n\n")
        handler.wfile.flush()

    def __enter__(self) -> FakeModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.done.set()
        self.resume.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(5)
