"""Any server that speaks the OpenAI API (DeepSeek, SiliconFlow, Ollama, vLLM, llama.cpp's server,
LM Studio, OpenAI itself) through the official `openai` client: an LLM and an embedder.

Servers differ in how far they take structured output, so the LLM starts with the strongest form
and steps down for good when the server says it does not know one: a JSON-schema response format,
then a forced call of a tool with the schema as its parameters, then JSON mode with the schema
beside it (llama.cpp's form: a grammar made from the schema), then plain JSON mode, then the prompt
alone (the prompts spell out the structure); every answer is validated the same way whichever.
What a server (base URL and model) took is kept for the process, so later clients of it start there.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any

import httpcore2
import httpx2
import numpy as np
import openai
from pydantic import BaseModel

from forest.config import without_password
from forest.errors import ConfigError, InvalidInput, ModelUnavailable
from forest.limits import MAX_EMBEDDING_DIM
from forest.models.embedders import Embedder
from forest.models.llm import CALL_BUDGET_SECONDS, LLMError, Rejected, ServerFault, StructuredLLM, call_api
from forest.models.retry import CALL_DEADLINE, Transient, Unusable, with_retries

FORMATS = ("json_schema", "tool", "json_object_schema", "json_object", "prompt")
REPLY_TOOL = "reply"
# The request fields each form adds, as a server names them when it refuses one (vLLM, Ollama,
# DeepSeek, llama.cpp; llama-cpp-python names the field's path: ('body', 'response_format', 'type')).
_FIELDS = {"json_schema": ("json_schema", "response_format"), "tool": ("tool",),
           "json_object_schema": ("json_object", "response_format", "schema"),
           "json_object": ("json_object", "response_format")}
# The forms each server (its URL and model) has not refused yet, strongest first: shared by every
# client of it in this process, so a form refused once is not asked again by the next.
_LADDERS: dict[tuple[str, str], list[str]] = {}
_LADDERS_LOCK = threading.Lock()
log = logging.getLogger("forest.models")
# Unrelated texts: their mean cosine is the embedder's floor when the setting leaves it open.
FLOOR_PROBES = ("The recipe calls for two cups of flour and a pinch of salt.",
                "Quarterly revenue rose four percent on strong cloud sales.",
                "The goalkeeper saved a penalty in the final minute.",
                "Mitochondria produce most of the cell's chemical energy.",
                "The train to the airport leaves every fifteen minutes.",
                "He painted the fence a pale shade of green last summer.",
                "Volcanic ash grounded flights across northern Europe.",
                "The sonnet follows a strict rhyme scheme of fourteen lines.")


def _client(base_url: str, api_key: str | None, timeout: float) -> openai.OpenAI:
    # Local servers take any key; the client insists on one.
    return openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout, max_retries=0,
                         http_client=openai.DefaultHttpxClient(transport=_DeadlineTransport()))


class _DeadlineTransport(httpx2.HTTPTransport):
    """Every connect, read and write bounded by what is left of its call's budget (CALL_DEADLINE),
    not only by the per-read timeout: a server sending a byte every few seconds, in the headers, the
    body or a stream, is cut off when the budget ends. httpcore takes a phase's timeout once and
    reuses it for each read, so the bound is put on the socket streams themselves."""

    def __init__(self) -> None:
        super().__init__()
        # private, but the one place every socket operation of the client passes
        self._pool._network_backend = _DeadlineBackend(self._pool._network_backend)


def _left(timeout: float | None) -> float | None:
    deadline = CALL_DEADLINE.get()
    if deadline is None:
        return timeout
    left = max(0.001, deadline - time.monotonic())
    return left if timeout is None else min(timeout, left)


class _DeadlineBackend(httpcore2.NetworkBackend):
    def __init__(self, backend: httpcore2.NetworkBackend) -> None:
        self.backend = backend

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore2.NetworkStream:
        return _DeadlineStream(self.backend.connect_tcp(host, port, _left(timeout), local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore2.NetworkStream:
        return _DeadlineStream(self.backend.connect_unix_socket(path, _left(timeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self.backend.sleep(seconds)


class _DeadlineStream(httpcore2.NetworkStream):
    def __init__(self, stream: httpcore2.NetworkStream) -> None:
        self.stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.stream.read(max_bytes, _left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.stream.write(buffer, _left(timeout))

    def close(self) -> None:
        self.stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore2.NetworkStream:
        return _DeadlineStream(self.stream.start_tls(ssl_context, server_hostname, _left(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self.stream.get_extra_info(info)


class OpenAILLM(StructuredLLM):
    provider = "openai"

    def __init__(self, base_url: str, model: str, api_key: str | None = None, retries: int = 2,
                 timeout: float = 60.0, stream: bool = True, max_tokens: int | None = None) -> None:
        self.model = model
        self.retries = retries
        self.timeout = timeout
        self.max_tokens = max_tokens  # a cap on every reply's tokens (llm_max_tokens), below each use's own
        # Streamed, a request's timeout bounds each silence rather than the whole reply: a slow local
        # model writing a long answer is not cut off while it still writes.
        self.stream = stream
        self.url = without_password(base_url.rstrip("/"))  # what messages and logs show
        self._client = _client(base_url.rstrip("/"), api_key, timeout)
        with _LADDERS_LOCK:
            self._formats = _LADDERS.setdefault((self.url, model), list(FORMATS))

    @property
    def structured_output(self) -> str:
        """How replies are asked for now (steps down as the server refuses a form)."""
        return self._formats[0]

    @property
    def refused_forms(self) -> tuple[str, ...]:
        return FORMATS[:FORMATS.index(self._formats[0])]

    def _complete(self, prompt: str, reply_type: type[BaseModel], max_tokens: int, seconds_left: float) -> Any:
        form = self._formats[0]
        max_tokens = min(max_tokens, self.max_tokens or max_tokens)
        deadline = time.monotonic() + seconds_left
        try:
            return self._request(form, prompt, reply_type, max_tokens, deadline)
        except (Rejected, ServerFault) as exc:
            # Only the server's own words about this form's field, in a 4xx or a 5xx: "Unsupported
            # parameter: 'max_tokens'", "out of memory" or a URL with "tool" in it is no reason to
            # give up a form.
            said = exc.server_message.lower()
            if form == "prompt" or not any(field in said for field in _FIELDS[form]):
                raise
            self._step_down(form, exc.server_message)
            return self._complete(prompt, reply_type, max_tokens, max(0.001, deadline - time.monotonic()))

    def _step_down(self, form: str, said: str) -> None:
        with _LADDERS_LOCK:
            if self._formats[0] != form:  # another call gave it up meanwhile
                return
            self._formats.pop(0)
        self.counts["stepped_down"] += 1
        log.warning("the LLM server at %s (%s) refused structured output as %s (%s): asking as %s from now on",
                    self.url, self.label, form, said[:200], self._formats[0])

    def _request(self, form: str, prompt: str, reply_type: type[BaseModel], max_tokens: int, deadline: float) -> Any:
        schema = reply_type.model_json_schema()
        extra: dict[str, Any] = {}
        if form == "json_schema":
            extra["response_format"] = {"type": "json_schema",
                                        "json_schema": {"name": reply_type.__name__, "schema": schema}}
        elif form == "tool":
            extra["tools"] = [{"type": "function", "function": {
                "name": REPLY_TOOL, "description": "Give your reply in this structure.", "parameters": schema}}]
            extra["tool_choice"] = {"type": "function", "function": {"name": REPLY_TOOL}}
        elif form == "json_object_schema":
            extra["response_format"] = {"type": "json_object", "schema": schema}
        elif form == "json_object":
            extra["response_format"] = {"type": "json_object"}
        messages = [{"role": "user", "content": prompt}]

        def request():
            timeout = min(self.timeout, max(0.001, deadline - time.monotonic()))
            reply = self._client.chat.completions.create(model=self.model, messages=messages, max_tokens=max_tokens,
                                                         timeout=timeout, stream=self.stream, **extra)
            return _streamed(reply, deadline) if self.stream else _whole(reply)

        text, arguments, finish = call_api(openai, self.url, request)
        if finish == "content_filter":
            raise LLMError("the model declined to answer (content_filter)")
        if finish == "length":
            raise Unusable(f"the reply was cut off at max_tokens={max_tokens}")
        return arguments if arguments else text


def _whole(reply) -> tuple[str, str, str | None]:
    choice = reply.choices[0]
    calls = choice.message.tool_calls or []
    return (choice.message.content or "", "".join(c.function.arguments or "" for c in calls[:1]),
            choice.finish_reason)


def _streamed(chunks, deadline: float) -> tuple[str, str, str | None]:
    """The pieces of a streamed reply put together; the stream is closed when the call's budget
    ends (each read's timeout bounds a silence, not a slow model writing on and on)."""
    text: list[str] = []
    arguments: list[str] = []
    finish = None
    for chunk in chunks:
        if time.monotonic() > deadline:
            chunks.close()
            raise Transient("the reply was still being written when the call's time ran out")
        for choice in chunk.choices[:1]:
            delta = choice.delta
            if delta.content:
                text.append(delta.content)
            for call in delta.tool_calls or []:
                if call.index == 0 and call.function and call.function.arguments:
                    arguments.append(call.function.arguments)
            finish = choice.finish_reason or finish
    return "".join(text), "".join(arguments), finish


class OpenAIEmbedder(Embedder):
    """/v1/embeddings of an OpenAI-compatible server. The dimension is learned from the server;
    models that expect instructions (E5: "query: ", "passage: "; BGE's query instruction) get them
    from the prefix settings, since the API has no notion of a query."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 60.0,
                 retries: int = 2, query_prefix: str = "", passage_prefix: str = "",
                 similarity_floor: float | None = None) -> None:
        self.model = model
        self.url = without_password(base_url.rstrip("/"))  # what messages and logs show
        self.name = f"openai/{model}"
        self.retries = retries
        self.timeout = timeout
        self.query_prefix, self.passage_prefix = query_prefix, passage_prefix
        self._client = _client(base_url.rstrip("/"), api_key, timeout)
        probe = self._request(["dimension probe"])
        self.dim = int(probe.shape[1])
        if similarity_floor is None:  # the mean cosine of unrelated texts under this model
            probes = self._request([passage_prefix + t for t in FLOOR_PROBES])
            probes /= np.linalg.norm(probes, axis=1, keepdims=True)
            cosines = probes @ probes.T
            similarity_floor = float(cosines[~np.eye(len(probes), dtype=bool)].mean())
        self.similarity_floor = min(max(similarity_floor, 0.0), 0.95)

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        prefix = self.query_prefix if is_query else self.passage_prefix
        rows = self._request([prefix + t for t in texts])
        if rows.shape[1] != self.dim:
            raise ConfigError(f"the embedding server at {self.url} returned {rows.shape[1]}-dimensional vectors "
                              f"for {self.model}, not {self.dim}: is it serving another model?")
        return rows

    def _request(self, texts: list[str]) -> np.ndarray:
        def vectors(reply) -> np.ndarray:
            rows = sorted(reply.data, key=lambda item: item.index)
            if len(rows) != len(texts):
                raise Transient(f"{len(rows)} vectors for {len(texts)} texts")
            widths = {len(row.embedding) for row in rows}
            if len(widths) != 1 or not 0 < max(widths) <= MAX_EMBEDDING_DIM:
                raise Unusable(f"vectors of {', '.join(f'{w:,}' for w in sorted(widths))} dimensions (one width of "
                               f"1 to {MAX_EMBEDDING_DIM:,} is expected)")
            return np.asarray([row.embedding for row in rows], dtype=np.float32)

        def attempt(seconds_left: float) -> np.ndarray:
            return call_api(openai, self.url, lambda: vectors(self._client.embeddings.create(
                model=self.model, input=texts, encoding_format="float", timeout=min(self.timeout, seconds_left))))

        try:
            return with_retries(attempt, self.retries + 1, CALL_BUDGET_SECONDS, f"embedding at {self.url}")
        except Transient as exc:
            raise ModelUnavailable(f"the embedding server at {self.url} ({self.name}) did not answer: {exc}") \
                from None
        except Unusable as exc:
            raise ModelUnavailable(f"the embedding server at {self.url} ({self.name}) sent unusable vectors: {exc}") \
                from None
        except LLMError as exc:  # the input itself refused (too long, ...): sending it again will not help
            raise InvalidInput(f"the embedding server at {self.url} ({self.name}) refused the text: {exc}") from None
