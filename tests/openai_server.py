"""A small OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks (standard library only).

``POST <base>/chat/completions`` answers with whatever the ``responder`` returns for the parsed request body:
a :class:`Reply` (status, JSON or raw body, headers, extra delay), a completion dict, or a content string.  The
default responder, :func:`valid_answer`, reads only the request (never gold labels) and returns a contract-valid
answer for the stage it recognises.  The server counts requests and the peak number in flight.

Run as a script for benchmarks: ``python tests/openai_server.py --latency-ms 200`` prints ``READY <base_url>``.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_MODEL = "test-model"


@dataclass
class Reply:
    """One HTTP answer.  ``truncate_to`` sends only that many body bytes (after a ``Content-Length`` announcing
    the whole body) and then closes the connection — a body cut short in transit.

    Two slow bodies (a server that never breaks any per-read timeout, yet never finishes in useful time):
    ``drip_s`` sends the body one byte every ``drip_s`` seconds after a ``Content-Length`` announcing all of it;
    ``endless_chunk_s`` sends ``Transfer-Encoding: chunked`` and then one whitespace chunk every
    ``endless_chunk_s`` seconds until the client goes away (the body never ends).  Either stops at the first
    write the client no longer reads."""

    status: int = 200
    body: Any = None  # dict/list -> JSON (lone surrogates as \u escapes); str/bytes -> sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    content_type: str | None = "application/json"  # None: no Content-Type header at all
    truncate_to: int | None = None
    drip_s: float | None = None
    endless_chunk_s: float | None = None  # 0: as fast as the link allows
    chunk_bytes: int = 64  # the size of each endless chunk after the first


def encode_body(body: Any) -> bytes:
    """The bytes sent for a :class:`Reply` body (str bytes with ``surrogatepass``: a server can send anything)."""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8", "surrogatepass")
    try:
        return json.dumps(body, ensure_ascii=False).encode()
    except UnicodeEncodeError:  # a lone surrogate: only the escaped form is valid UTF-8
        return json.dumps(body).encode()


Responder = Callable[[dict, int], "Reply | dict | str"]


def completion(content: str | None, *, model: str = DEFAULT_MODEL, prompt_tokens: int = 700,
               completion_tokens: int = 40) -> dict:
    """A ``chat.completion`` response body."""
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": model,
        "system_fingerprint": "fp_test",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def user_payload(request: dict) -> dict:
    """The JSON payload the adapter put in the user message."""
    return json.loads(request["messages"][-1]["content"])


def valid_answer(request: dict) -> str:
    """A contract-valid answer computed from the request alone (first compatible action and entity)."""
    payload = user_payload(request)
    if "invalid_output" in payload:  # a repair: answer the original stage from the original payload
        return valid_answer({"messages": [{"content": json.dumps(payload["original_payload"])}]})
    catalog, entities = payload["catalog"], payload["entities"]
    action, obj = None, "NONE"
    for entity in entities:
        action = next((a["action_id"] for a in catalog if entity["object_type"] in a["required_object_types"]
                       and "NONE" not in a["required_object_types"]), None)
        if action:
            obj = entity["object_id"]
            break
    if action is None:
        action = next(a["action_id"] for a in catalog if "NONE" in a["required_object_types"])
    answer: dict[str, Any] = {"action_id": action, "object_id": obj, "topk": [action]}
    if "runtime_context" in payload:
        answer = {"terminal": "DISPATCH", "boundary": "ALLOW", **answer}
        if "rules" in payload:
            answer["rule_ids"] = [payload["rules"][-1]["rule_id"]]
    return json.dumps(answer)


def default_responder(request: dict, number: int) -> dict:
    return completion(valid_answer(request), model=request.get("model", DEFAULT_MODEL))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like a real API
    disable_nagle_algorithm = True  # headers and body go out at once (no delayed-ACK stalls)
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
        pass

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        owner = self.server.owner
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(Reply(404, {"error": {"message": f"no route {self.path}"}}))
            return
        request = json.loads(raw)
        number = owner._enter(request, {k.lower(): v for k, v in self.headers.items()})
        try:
            answer = owner.responder(request, number)
            reply = answer if isinstance(answer, Reply) else Reply(
                body=answer if isinstance(answer, dict) else completion(answer, model=request.get("model")))
            time.sleep(owner.latency_s + reply.delay_s)
            self._send(reply)
        finally:
            owner._leave()

    def _send(self, reply: Reply) -> None:
        data = encode_body(reply.body)
        if reply.endless_chunk_s is not None:
            self._send_endless(reply)
            return
        self.send_response(reply.status)
        if reply.content_type is not None and not any(k.lower() == "content-type" for k in reply.headers):
            self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.end_headers()
        if reply.truncate_to is not None:
            self.wfile.write(data[:reply.truncate_to])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if reply.drip_s is not None:
            self.wfile.flush()
            self.close_connection = True
            for i in range(len(data)):
                time.sleep(reply.drip_s)
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
            return
        self.wfile.write(data)

    def _send_endless(self, reply: Reply) -> None:
        """Headers, then a chunked body that never ends (a JSON-looking start, then whitespace forever)."""
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type or "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        chunk = b'{"choices": '
        while True:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
            if reply.endless_chunk_s:
                time.sleep(reply.endless_chunk_s)
            chunk = b" " * reply.chunk_bytes


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many clients connect at once
    block_on_close = False
    owner: OpenAIServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class OpenAIServer:
    """Serve on 127.0.0.1 in a background thread; use as a context manager."""

    def __init__(self, responder: Responder = default_responder, *, latency_s: float = 0.0, port: int = 0) -> None:
        self.responder = responder
        self.latency_s = latency_s
        self.requests: list[dict] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.peak_in_flight = 0
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", port), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="openai-test-server", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def count(self) -> int:
        return len(self.requests)

    def _enter(self, request: dict, headers: dict[str, str]) -> int:
        with self._lock:
            self.requests.append(request)
            self.headers.append(headers)
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            return len(self.requests)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def start(self) -> OpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = OpenAIServer(latency_s=args.latency_ms / 1000, port=args.port)
    print(f"READY {server.base_url}", flush=True)
    server._httpd.serve_forever()


if __name__ == "__main__":
    main()
