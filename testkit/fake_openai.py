"""A local HTTP server that speaks the OpenAI API as DeepSeek, vLLM, Ollama and llama.cpp's server
do, so the real `openai` client can be tested offline:

- POST /v1/chat/completions, whole or streamed (server-sent events), answering in the form asked
  for: a JSON-schema response format, a forced tool call (the reply as the call's arguments), JSON
  mode with a schema (llama.cpp's) or without, or plain text; forms listed in `refuses` get the 400
  such a server gives, or with `refuses_with=500` the 500 llama-cpp-python gives;
- POST /v1/embeddings (float or base64, as the client asks) from an `embed` function;
- GET /v1/models.

Replies come from a script (text, or a fault: `Fault(...)`) or from `respond(prompt)`; the default
answers the seed's summary prompts with a valid summary. Faults: an HTTP status with headers (429
with Retry-After), a body that is not JSON, or no reply at all for `hang_seconds` (a timeout).
"""
from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from testkit.fake_anthropic import FakeAnthropic

DIM = 16


@dataclass
class Fault:
    status: int = 500
    message: str = "internal error"
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None     # sent as it is (a malformed reply) instead of the API's error JSON
    hang_seconds: float = 0.0     # no reply for this long


def hashed_embedding(texts: Sequence[str]) -> np.ndarray:
    """A deterministic embedding: words hashed into DIM buckets (shared words, close vectors)."""
    rows = np.zeros((len(texts), DIM), dtype=np.float32)
    for row, text in zip(rows, texts):
        for word in text.lower().split():
            row[sum(word.encode()) % DIM] += 1.0
        row[-1] += 0.1
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


class FakeOpenAI:
    def __init__(self, embed: Callable[[Sequence[str]], np.ndarray] = hashed_embedding,
                 models: Sequence[str] = ("test-chat", "test-embed"), api_key: str | None = None,
                 refuses: Sequence[str] = (), refuses_with: int = 400) -> None:
        self.embed = embed
        self.models = list(models)
        self.api_key = api_key
        # forms answered with an error: "json_schema", "tool", "json_object_schema", "json_object"
        self.refuses = set(refuses)
        self.refuses_with = refuses_with
        self.script: list = []       # each item: reply text, or a Fault
        self.embedding_script: list[Fault] = []
        self.respond: Callable[[str], str] | None = None
        self.chunk_seconds = 0.0     # a slow model: the pause before each streamed piece
        self.requests: list[dict] = []
        self.embedding_requests: list[dict] = []
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def forms(self) -> list[str]:
        """The structured-output form of each chat request so far."""
        return [_form(r) for r in self.requests]

    def _reply_to(self, prompt: str):
        with self._lock:
            if self.script:
                return self.script.pop(0)
        return (self.respond or _default_reply)(prompt)

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _authorized(self) -> bool:
                if fake.api_key and self.headers.get("authorization") != f"Bearer {fake.api_key}":
                    self._error(401, "Incorrect API key provided.", "invalid_request_error")
                    return False
                return True

            def do_GET(self):
                if self.path != "/v1/models":
                    return self._error(404, f"no route {self.path}", "invalid_request_error")
                if self._authorized():
                    self._json(200, {"object": "list", "data": [
                        {"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in fake.models]})

            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                if not self._authorized():
                    return
                if self.path == "/v1/embeddings":
                    return self._embeddings(request)
                if self.path != "/v1/chat/completions":
                    return self._error(404, f"no route {self.path}", "invalid_request_error")
                if request.get("model") not in fake.models:
                    return self._error(404, f"The model `{request.get('model')}` does not exist.", "model_not_found")
                fake.requests.append(request)
                form = _form(request)
                if form in fake.refuses and fake.refuses_with == 400:
                    return self._error(400, f"{_FIELD[form]} is not supported by this model", "invalid_request_error")
                if form in fake.refuses:  # llama-cpp-python: its request model's validation error, as a 500
                    return self._error(fake.refuses_with, _LLAMA_CPP_REFUSAL[form], "internal_server_error")
                item = fake._reply_to(request["messages"][-1]["content"])
                if isinstance(item, Fault):
                    return self._fault(item)
                content, calls = (None, [_tool_call(item)]) if form == "tool" else (item, None)
                finish = "tool_calls" if calls else "stop"
                if request.get("stream"):
                    return self._stream(request, content, calls, finish)
                self._json(200, {
                    "id": f"chatcmpl-{len(fake.requests)}", "object": "chat.completion", "created": int(time.time()),
                    "model": request["model"],
                    "choices": [{"index": 0, "finish_reason": finish, "logprobs": None,
                                 "message": {"role": "assistant", "content": content, "tool_calls": calls}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}})

            def _embeddings(self, request):
                fake.embedding_requests.append(request)
                with fake._lock:
                    fault = fake.embedding_script.pop(0) if fake.embedding_script else None
                if fault:
                    return self._fault(fault)
                if request.get("model") not in fake.models:
                    return self._error(404, f"The model `{request.get('model')}` does not exist.", "model_not_found")
                texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
                vectors = np.asarray(fake.embed(texts), dtype=np.float32)
                as_base64 = request.get("encoding_format") == "base64"
                self._json(200, {"object": "list", "model": request["model"], "data": [
                    {"object": "embedding", "index": i,
                     "embedding": base64.b64encode(v.tobytes()).decode() if as_base64 else v.tolist()}
                    for i, v in enumerate(vectors)], "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)}})

            def _stream(self, request, content, calls, finish):
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                base = {"id": f"chatcmpl-{len(fake.requests)}", "object": "chat.completion.chunk",
                        "created": int(time.time()), "model": request["model"]}

                def chunk(delta, finish_reason=None):
                    payload = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
                    self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
                    self.wfile.flush()

                chunk({"role": "assistant", "content": ""})
                if calls:  # the call's id and name first, then its arguments in pieces
                    call = calls[0]
                    chunk({"tool_calls": [{"index": 0, "id": call["id"], "type": "function",
                                           "function": {"name": call["function"]["name"], "arguments": ""}}]})
                    for piece in _pieces(call["function"]["arguments"]):
                        chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
                else:
                    for piece in _pieces(content):
                        time.sleep(fake.chunk_seconds)
                        chunk({"content": piece})
                chunk({}, finish)
                self.wfile.write(b"data: [DONE]\n\n")

            def _fault(self, fault: Fault):
                if fault.hang_seconds:
                    time.sleep(fault.hang_seconds)
                    return
                if fault.body is not None:
                    self.send_response(fault.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(fault.body)))
                    self.end_headers()
                    self.wfile.write(fault.body)
                    return
                self._error(fault.status, fault.message, "server_error", fault.headers)

            def _error(self, status, message, kind, headers=None):
                self._json(status, {"error": {"message": message, "type": kind, "param": None, "code": None}},
                           headers)

            def _json(self, status, payload, headers=None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler


_FIELD = {"json_schema": "response_format json_schema", "json_object": "response_format json_object",
          "json_object_schema": "response_format json_object with a schema", "tool": "tool_choice"}
# What llama-cpp-python 0.3.36 answers, with HTTP 500, to a field its request model does not take.
_LLAMA_CPP_REFUSAL = {
    form: f"[{{'type': 'literal_error', 'loc': ('body', '{field}', 'type'), 'msg': \"Input should be 'text' or "
          f"'json_object'\", 'input': '{form}'}}]"
    for form, field in (("json_schema", "response_format"), ("tool", "tool_choice"),
                        ("json_object_schema", "response_format"), ("json_object", "response_format"))}


def _form(request: dict) -> str:
    if request.get("tools"):
        return "tool"
    response_format = request.get("response_format") or {}
    if response_format.get("type") == "json_object" and "schema" in response_format:
        return "json_object_schema"
    return response_format.get("type") or "prompt"


def _default_reply(prompt: str) -> str:
    """The seed's summary prompts get a valid summary (as from FakeAnthropic); any other prompt a
    summary of its first words."""
    try:
        return FakeAnthropic.default_reply(prompt)
    except ValueError:
        return json.dumps({"summary": " ".join(prompt.split()[:8])})


def _tool_call(arguments: str) -> dict:
    return {"id": "call_1", "type": "function", "function": {"name": "reply", "arguments": arguments}}


def _pieces(text: str, size: int = 7) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]
