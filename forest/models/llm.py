"""LLMs that must answer with data: one interface for every provider, one retry policy, one time
budget per call.

A caller names the shape it needs as a pydantic model (forest.models.replies). A provider sends
that model's JSON schema the way its API takes it (Claude: a forced tool call; an OpenAI-compatible
server: a JSON-schema response format, a forced tool call, JSON mode, or the prompt alone, as far
as the server goes) and the answer is validated against the model; an answer that is not valid is
asked for again with what was wrong with it. Then:

- the answers stayed unusable (malformed, refused, not what was asked): LLMError, and the caller
  takes its offline path and labels it so;
- the server stayed down, timed out, or refused the key or model: ModelUnavailable naming its URL,
  which fails the call (an ingest leaves nothing; the personal write queue keeps the input).
"""
from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from forest.errors import InvalidInput, ModelUnavailable, one_line
from forest.models.retry import Transient, Unusable, retry_after_seconds, retryable_status, with_retries
from forest.validation import parse_json

# One time budget for a call, its retries included: below the personal write queue's lease (600 s),
# so a write waiting on a model never outlives its claim.
CALL_BUDGET_SECONDS = 150.0
REPAIR = ("\n\nYour previous reply could not be used: {problem}\n"
          "Reply again with only the JSON object, in the structure asked for.")

# Only the fence marks: the object is found by its braces, so the whitespace around them may stay
# (a "\s*" before "```$" rescans a run of blanks from each of its positions: quadratic).
_FENCE = re.compile(r"^```(?:json)?|```$", re.MULTILINE)

R = TypeVar("R", bound=BaseModel)
T = TypeVar("T")


class LLMError(Exception):
    """The model's answers could not be used after the allowed attempts."""


class Rejected(LLMError):
    """The server refused the request itself (HTTP 400, 413, 422): `server_message` is its own words."""

    def __init__(self, message: str, server_message: str) -> None:
        super().__init__(message)
        self.server_message = server_message


class ServerFault(Transient):
    """The server answered with a 5xx: tried again, unless `server_message` (its own words) shows it
    failed on a field of the request (llama-cpp-python answers a response_format it does not know
    with a 500)."""

    def __init__(self, message: str, server_message: str, retry_after: float | None = None) -> None:
        super().__init__(message, retry_after)
        self.server_message = server_message


class StructuredLLM(ABC):
    """A provider: `_complete` makes one request; `ask` validates, repairs and retries."""

    provider: str     # the registered name: "claude", "openai"
    model: str
    url: str          # where it answers, without secrets
    retries: int
    timeout: float    # seconds one request may take
    structured_output = "tool"   # how a reply's structure is asked for (a provider may step down: openai_api)
    refused_forms: tuple[str, ...] = ()  # the forms of structured output the server refused, if any

    @property
    def counts(self) -> Counter[str]:
        """What its calls took so far (bench/bench_local_llm.py reports them): "asked" (calls),
        "repaired" (answered after a reply that could not be used), "loosened" (a reply taken with raw
        control characters in its strings), "stepped_down" (a form of structured output given up)."""
        return self.__dict__.setdefault("_counts", Counter())

    @property
    def label(self) -> str:
        """What a summary, step or verdict it made is labelled with: "<provider>:<model>"."""
        return f"{self.provider}:{self.model}"

    def describe(self) -> dict[str, str]:
        return {"provider": self.provider, "model": self.model, "url": self.url}

    @abstractmethod
    def _complete(self, prompt: str, reply_type: type[BaseModel], max_tokens: int, seconds_left: float) -> Any:
        """One request, over within `seconds_left` (each wait for the server at most self.timeout):
        the reply as JSON text, or as the object a tool call carried. Raises
        Transient (no answer), Unusable, LLMError (a refusal, or a request the server rejects) or
        ModelUnavailable (the key or the model is refused)."""

    def ask(self, prompt: str, reply_type: type[R], max_tokens: int = 1024,
            context: dict[str, Any] | None = None) -> R:
        """The reply, validated against `reply_type` (with `context` for its call-dependent rules)."""
        problem: list[str] = []
        self.counts["asked"] += 1

        def attempt(seconds_left: float) -> R:
            asked = prompt + REPAIR.format(problem=problem[-1]) if problem else prompt
            raw = self._complete(asked, reply_type, max_tokens, seconds_left)
            try:
                if isinstance(raw, dict):
                    value = raw
                else:
                    value, loosened = json_object(raw)
                    self.counts["loosened"] += loosened
                reply = reply_type.model_validate(value, context=context)
                self.counts["repaired"] += bool(problem)
                return reply
            except ValidationError as exc:
                problem.append(validation_problem(exc))
            except ValueError as exc:
                problem.append(str(exc))
            raise Unusable(problem[-1])

        try:
            return with_retries(attempt, self.retries + 1, CALL_BUDGET_SECONDS, f"{self.label} at {self.url}")
        except Unusable as exc:
            raise LLMError(str(exc)) from None
        except Transient as exc:
            raise ModelUnavailable(f"the LLM server at {self.url} ({self.label}) did not answer: {exc}") from None


def call_api(sdk: Any, url: str, request: Callable[[], T]) -> T:
    """One request through the anthropic or openai SDK (`sdk`: the module; both name their errors
    alike), its failure in the retry policy's terms."""
    try:
        return request()
    except sdk.APIConnectionError as exc:  # its timeouts too
        raise Transient(one_line(exc, 300)) from None
    except sdk.APIStatusError as exc:
        raise status_failure(exc, url) from None
    except sdk.APIError as exc:  # an error event in the middle of a stream
        raise Transient(one_line(exc, 300)) from None
    # A body that is not the API's JSON, or not in its shape (HTML from a proxy, no choices): the
    # request's reading of the reply runs inside `request`, so these come from the server's answer.
    except (ValueError, AttributeError, IndexError, KeyError, TypeError) as exc:
        raise Transient(f"the server's reply is not the API's: {type(exc).__name__}: {one_line(exc, 200)}") from None


def status_failure(error: Any, url: str) -> Exception:
    """What an HTTP error status from a model server means here (`error`: the anthropic or openai
    SDK's APIStatusError; both carry status_code, body and response)."""
    message = one_line(api_message(error), 300)
    status = error.status_code
    if status >= 500:
        return ServerFault(f"HTTP {status}: {message}", message, retry_after_seconds(error.response.headers))
    if retryable_status(status):
        return Transient(f"HTTP {status}: {message}", retry_after_seconds(error.response.headers))
    if status in (401, 403, 404):
        return ModelUnavailable(f"the model server at {url} refused the call (HTTP {status}; check the key and "
                                f"the model name): {message}")
    return Rejected(f"the model server at {url} rejected the request (HTTP {status}): {message}", message)


def api_message(error: Any) -> str:
    """The server's own words from an error body ({"error": {"message": ...}}), else the SDK's."""
    body = getattr(error, "body", None)
    found = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(found, dict):
        found = found.get("message")
    return found if isinstance(found, str) and found.strip() else str(getattr(error, "message", error))


def validation_problem(error: ValidationError) -> str:
    """A pydantic error as one line a model can act on."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'reply'}: {e['msg']}" for e in error.errors()[:4])


def json_object(text: str) -> tuple[dict[str, Any], bool]:
    """The JSON object in a reply, tolerating a code fence or prose around it and raw control
    characters inside its strings, and whether it was taken only by allowing raw control characters
    (a carriage return, a tab) inside strings: invalid JSON, but what a grammar-constrained small
    model writes (llama.cpp), and nothing else about the reply is in doubt. Every other refusal of
    parse_json stands."""
    stripped = _FENCE.sub("", text.strip())
    start, end = stripped.find("{"), stripped.rfind("}")
    if start < 0 or end <= start:
        raise ValueError(f"reply is not a JSON object: {text[:120]!r}")
    candidate, loosened = stripped[start : end + 1], False
    try:
        value = parse_json(candidate, "reply")
    except InvalidInput as exc:
        try:
            value, loosened = parse_json(candidate, "reply", strict=False), True
        except InvalidInput:
            raise ValueError(f"{exc}: {text[:120]!r}") from None
    if not isinstance(value, dict):
        raise ValueError("reply is JSON but not an object")
    return value, loosened
