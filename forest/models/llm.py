"""Claude through the `anthropic` SDK, for prompts that must answer with one JSON object."""
from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any

from forest.errors import InvalidInput
from forest.validation import parse_json

log = logging.getLogger("forest.models.llm")

# One time budget for a call, its retries included: below the personal write queue's lease (600 s),
# so a write waiting on Claude never outlives its claim. The SDK retries nothing itself: its
# retries nested in these made 6 attempts of llm_timeout_seconds each.
CALL_BUDGET_SECONDS = 150.0

# Only the fence marks: the object is found by its braces, so the whitespace around them may stay
# (a "\s*" before "```$" rescans a run of blanks from each of its positions: quadratic).
_FENCE = re.compile(r"^```(?:json)?|```$", re.MULTILINE)


class LLMError(Exception):
    """Claude could not give a valid reply after the allowed retries."""


class ClaudeJSON:
    """Sends a prompt, parses the reply as JSON, validates it, retries on bad output."""

    def __init__(self, api_key: str, model: str, retries: int = 2, base_url: str | None = None,
                 timeout: float = 60.0) -> None:
        import anthropic

        self.model = model
        self.retries = retries
        # base_url None lets the SDK read ANTHROPIC_BASE_URL (how tests reach a local server).
        self.timeout = timeout
        self._client = anthropic.Anthropic(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)

    def ask(self, prompt: str, validate: Callable[[dict[str, Any]], str | None],
            max_tokens: int = 1024) -> dict[str, Any]:
        """`validate` returns None when the reply is acceptable, else what is wrong with it. The
        attempts share CALL_BUDGET_SECONDS: each may take llm_timeout_seconds, or what is left."""
        import anthropic

        deadline = time.monotonic() + CALL_BUDGET_SECONDS
        problem = "no attempt made"
        for attempt in range(self.retries + 1):
            left = deadline - time.monotonic()
            if left <= 0:
                problem += f" (the call's {CALL_BUDGET_SECONDS:.0f} s are spent)"
                break
            try:
                message = self._client.messages.create(
                    model=self.model, max_tokens=max_tokens, timeout=min(self.timeout, left),
                    messages=[{"role": "user", "content": prompt}])
            except anthropic.APIError as exc:
                problem = f"API error: {exc}"
                log.warning("Claude call failed (attempt %d): %s", attempt + 1, exc)
                continue
            text = "".join(block.text for block in message.content if block.type == "text")
            try:
                reply = parse_json_object(text)
            except ValueError as exc:
                problem = str(exc)
            else:
                problem = validate(reply) or ""
                if not problem:
                    return reply
            log.warning("Claude gave unusable output (attempt %d): %s", attempt + 1, problem)
        raise LLMError(problem)


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a reply, tolerating a code fence or prose around it."""
    stripped = _FENCE.sub("", text.strip())
    start, end = stripped.find("{"), stripped.rfind("}")
    if start < 0 or end <= start:
        raise ValueError(f"reply is not a JSON object: {text[:120]!r}")
    try:
        value = parse_json(stripped[start : end + 1], "reply")
    except InvalidInput as exc:
        raise ValueError(f"{exc}: {text[:120]!r}") from None
    if not isinstance(value, dict):
        raise ValueError("reply is JSON but not an object")
    return value
