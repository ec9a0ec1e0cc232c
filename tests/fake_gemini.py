"""A local fake of the Gemini REST API, for driving the real google-genai client in tests.

It speaks the shapes google-genai 3.x sends and parses (Gemini Developer API, `v1beta` or `v1`):

    POST /{version}/models/{model}:streamGenerateContent?alt=sse   SSE, `data: {json}` per chunk
    POST /{version}/models/{model}:generateContent                 one JSON response
    POST /{version}/models/{model}:countTokens                     {"totalTokens": n}
    POST /{version}/models/{model}:embedContent                    {"embedding": {"values"}}
    POST /{version}/models/{model}:batchEmbedContents              {"embeddings": [...]}

Embeddings are a deterministic bag of hashed words (texts that share words point the same way),
of the requested `outputDimensionality` (768 by default); a queued error answers them too.

Every request is recorded (path, model, parsed JSON body, headers) so tests can assert on what the
SDK really sent, including the functions offered and the functionResponse parts sent back.
Responses are scripted: queue replies, function calls (`call`), HTTP errors, safety blocks or a
stream that breaks half-way with the `reply`/`call`/`error`/... methods; when the queue is empty
the `default` callable answers. Streams are sent with chunked transfer encoding, so a stream cut
short is a real protocol error to the client (peer closed before the terminating chunk), as with a
dropped connection.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


@dataclass
class Recorded:
    """One request the fake received."""

    method: str
    path: str
    version: str
    model: str
    action: str  # "streamGenerateContent" | "generateContent" | "countTokens"
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def system_text(self) -> str | None:
        """The system instruction's text, parts joined, or None when absent."""
        si = self.body.get("systemInstruction")
        if not si:
            return None
        return "".join(p.get("text", "") for p in si.get("parts", []))

    @property
    def turns(self) -> list[tuple[str, str]]:
        """The contents as (role, text) pairs, in order."""
        return [
            (c.get("role", ""), "".join(p.get("text", "") for p in c.get("parts", [])))
            for c in self.body.get("contents", [])
        ]

    @property
    def generation_config(self) -> dict[str, Any]:
        return self.body.get("generationConfig", {})

    @property
    def function_names(self) -> list[str]:
        """The functions the request offered the model (its `tools` declarations)."""
        return [
            d["name"]
            for tool in self.body.get("tools", [])
            for d in tool.get("functionDeclarations", [])
        ]

    @property
    def function_calls(self) -> list[dict[str, Any]]:
        """The functionCall parts replayed in the contents (the model's earlier calls)."""
        return [
            p["functionCall"]
            for c in self.body.get("contents", [])
            for p in c.get("parts", [])
            if "functionCall" in p
        ]

    @property
    def function_responses(self) -> list[dict[str, Any]]:
        """The functionResponse parts the client sent back: {"name", "response", "id"?}."""
        return [
            p["functionResponse"]
            for c in self.body.get("contents", [])
            for p in c.get("parts", [])
            if "functionResponse" in p
        ]


@dataclass
class Reply:
    """A scripted successful answer: text split into chunks, then finish reason and usage."""

    chunks: list[str]
    finish_reason: str = "STOP"
    prompt_tokens: int = 11
    output_tokens: int | None = None  # default: one per word
    chunk_delay: float = 0.0
    first_delay: float = 0.0  # stream only: silence before the first chunk (a model thinking)
    break_after: int | None = None  # stream only: close the connection after this many chunks
    gate: threading.Event | None = None  # stream only: wait for it before sending chunk 2 onwards
    # Function calls the model makes, sent with the last chunk: [{"name": ..., "args": {...}}].
    function_calls: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ErrorReply:
    """A scripted HTTP error with a Google-style JSON error body."""

    status: int
    message: str
    status_name: str | None = None
    details: list[dict[str, Any]] | None = None  # e.g. google.rpc.RetryInfo for a 429


@dataclass
class Blocked:
    """A scripted safety block: of the prompt (no candidates) or of the candidate."""

    where: str = "prompt"  # "prompt" | "candidate"
    reason: str = "SAFETY"


Script = Reply | ErrorReply | Blocked


def _echo(request: Recorded) -> Reply:
    turns = request.turns
    last = turns[-1][1] if turns else ""
    return Reply(chunks=["You said: ", last[:200]])


@dataclass
class FakeGemini:
    """The fake server. Use as a context manager, or call start()/stop()."""

    default: Callable[[Recorded], Script] = _echo
    requests: list[Recorded] = field(default_factory=list)
    api_key: str | None = None  # when set, other keys get a 400 API_KEY_INVALID like Google's

    def __post_init__(self) -> None:
        self._script: deque[Script] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ------------------------------------------------------------------------

    def reply(self, *chunks: str, **options: Any) -> Reply:
        """Queue a reply made of these chunks (see Reply for options)."""
        scripted = Reply(chunks=list(chunks), **options)
        self._push(scripted)
        return scripted

    def call(self, name: str, _text: str = "", **args: Any) -> Reply:
        """Queue a response in which the model calls function `name` with `args` (after
        `_text`, if any); the client is expected to run it and send a functionResponse."""
        return self.reply(_text, function_calls=[{"name": name, "args": args}])

    def error(
        self,
        status: int,
        message: str = "",
        status_name: str | None = None,
        details: list[dict[str, Any]] | None = None,
    ) -> None:
        """Queue an HTTP error response."""
        self._push(ErrorReply(status, message or f"fake error {status}", status_name, details))

    def blocked(self, where: str = "prompt", reason: str = "SAFETY") -> None:
        """Queue a safety-blocked response."""
        self._push(Blocked(where, reason))

    def _push(self, item: Script) -> None:
        with self._lock:
            self._script.append(item)

    def _next(self, request: Recorded) -> Script:
        with self._lock:
            if self._script:
                return self._script.popleft()
        return self.default(request)

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None, "call start() first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeGemini:
        fake = self

        class Handler(_Handler):
            server_fake = fake

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeGemini:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- conveniences for assertions ------------------------------------------------------

    @property
    def last(self) -> Recorded:
        return self.requests[-1]

    def of(self, action: str) -> list[Recorded]:
        return [r for r in self.requests if r.action == action]


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (a stopped stream) is expected here, not a server error.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 so that streams use chunked encoding and a cut stream is detectable.
    protocol_version = "HTTP/1.1"
    server_fake: FakeGemini

    def setup(self) -> None:
        super().setup()
        # Headers and SSE chunks are separate small writes: without this, Nagle's algorithm
        # and delayed ACKs add ~40 ms to every response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep pytest output clean

    def do_GET(self) -> None:
        self._send_json(404, _error_body(404, "Only POST model methods are faked."))

    def do_POST(self) -> None:
        fake = self.server_fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, _error_body(400, "Invalid JSON payload received."))
            return

        path, _, _query = self.path.partition("?")
        parts = path.strip("/").split("/")
        # [version, "models", "name:action"]
        if len(parts) != 3 or parts[0] not in ("v1", "v1beta") or parts[1] != "models":
            self._send_json(404, _error_body(404, f"Unknown path {self.path}"))
            return
        model, _, action = parts[2].partition(":")
        request = Recorded(
            method="POST",
            path=self.path,
            version=parts[0],
            model=model,
            action=action,
            body=body,
            headers={k.lower(): v for k, v in self.headers.items()},
        )
        fake.requests.append(request)

        if fake.api_key is not None and request.headers.get("x-goog-api-key") != fake.api_key:
            self._send_json(
                400,
                _error_body(400, "API key not valid. Please pass a valid API key."),
            )
            return
        if action == "countTokens":
            words = sum(len(text.split()) for _, text in request.turns)
            self._send_json(200, {"totalTokens": words})
            return
        if action in ("embedContent", "batchEmbedContents"):
            self._embed(fake, request)
            return
        if action not in ("generateContent", "streamGenerateContent"):
            self._send_json(404, _error_body(404, f"Unknown method {action}"))
            return

        scripted = fake._next(request)
        if isinstance(scripted, ErrorReply):
            self._send_json(
                scripted.status,
                _error_body(
                    scripted.status, scripted.message, scripted.status_name, scripted.details
                ),
            )
        elif isinstance(scripted, Blocked):
            payload = _blocked_payload(scripted)
            if action == "generateContent":
                self._send_json(200, payload)
            else:
                self._send_stream([payload], Reply(chunks=[]))
        elif action == "generateContent":
            self._send_json(200, _whole_payload(scripted))
        else:
            self._send_stream(_chunk_payloads(scripted), scripted)

    def _embed(self, fake: FakeGemini, request: Recorded) -> None:
        with fake._lock:
            queued = fake._script[0] if fake._script else None
            if isinstance(queued, ErrorReply):
                fake._script.popleft()
        if isinstance(queued, ErrorReply):
            body = _error_body(queued.status, queued.message, queued.status_name, queued.details)
            self._send_json(queued.status, body)
            return
        if request.action == "embedContent":
            self._send_json(200, {"embedding": {"values": _embedding(request.body)}})
            return
        items = request.body.get("requests") or []
        self._send_json(200, {"embeddings": [{"values": _embedding(r)} for r in items]})

    # -- writers --------------------------------------------------------------------------

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(self, payloads: list[dict[str, Any]], scripted: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if scripted.first_delay:
            time.sleep(scripted.first_delay)
        for index, payload in enumerate(payloads):
            if scripted.break_after is not None and index >= scripted.break_after:
                # Drop the connection without the terminating chunk: a broken stream.
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if index == 1 and scripted.gate is not None:
                scripted.gate.wait(timeout=30)
            if index and scripted.chunk_delay:
                time.sleep(scripted.chunk_delay)
            event = f"data: {json.dumps(payload)}\r\n\r\n".encode()
            try:
                self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return  # the client went away (stopped stream)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _error_body(
    status: int,
    message: str,
    status_name: str | None = None,
    details: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    error: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": status_name or _STATUS_NAMES.get(status, "UNKNOWN"),
    }
    if details:
        error["details"] = details
    return {"error": error}


def _usage(scripted: Reply) -> dict[str, int]:
    output = scripted.output_tokens
    if output is None:
        output = max(1, len("".join(scripted.chunks).split()))
    return {
        "promptTokenCount": scripted.prompt_tokens,
        "candidatesTokenCount": output,
        "totalTokenCount": scripted.prompt_tokens + output,
    }


def _candidate(
    text: str, finish_reason: str | None, calls: list[dict[str, Any]] = ()
) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": text}] if text or not calls else []
    parts += [{"functionCall": call} for call in calls]
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
    if finish_reason:
        candidate["finishReason"] = finish_reason
    candidate["index"] = 0
    return candidate


def _chunk_payloads(scripted: Reply) -> list[dict[str, Any]]:
    chunks = scripted.chunks or [""]
    payloads = []
    for i, text in enumerate(chunks):
        last = i == len(chunks) - 1
        calls = scripted.function_calls if last else []
        payload: dict[str, Any] = {
            "candidates": [_candidate(text, scripted.finish_reason if last else None, calls)],
            "modelVersion": "fake-gemini",
        }
        if last:
            payload["usageMetadata"] = _usage(scripted)
        payloads.append(payload)
    return payloads


def _whole_payload(scripted: Reply) -> dict[str, Any]:
    return {
        "candidates": [
            _candidate("".join(scripted.chunks), scripted.finish_reason, scripted.function_calls)
        ],
        "usageMetadata": _usage(scripted),
        "modelVersion": "fake-gemini",
    }


def _blocked_payload(blocked: Blocked) -> dict[str, Any]:
    ratings = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH"}]
    if blocked.where == "prompt":
        return {
            "promptFeedback": {"blockReason": blocked.reason, "safetyRatings": ratings},
            "usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 5},
        }
    return {
        "candidates": [{"finishReason": blocked.reason, "index": 0, "safetyRatings": ratings}],
        "usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 5},
    }


def _embedding(request: dict[str, Any]) -> list[float]:
    """A bag of hashed lowercase words, as many dimensions as asked for."""
    dims = int(request.get("outputDimensionality") or 768)
    text = " ".join(p.get("text", "") for p in (request.get("content") or {}).get("parts", []))
    vector = [0.0] * dims
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
        vector[int.from_bytes(digest[:3], "big") % dims] += 1.0 if digest[3] & 1 else -1.0
    return vector
