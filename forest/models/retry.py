"""One retry policy for every call to a model server (LLM or embedder), over tenacity.

A call is tried again when the server did not answer (no connection, a timeout, 408/409/429/5xx:
`Transient`, waiting what Retry-After asks when it says) or when its answer was not the data asked
for (`Unusable`, tried again at once). All attempts share one time budget, so a call never
outlives the personal write queue's lease. The SDKs retry nothing themselves (max_retries=0): their
retries nested in these multiplied the attempts.
"""
from __future__ import annotations

import contextvars
import email.utils
import logging
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

from tenacity import (RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt, stop_before_delay,
                      wait_random_exponential)

log = logging.getLogger("forest.models")

T = TypeVar("T")
_BACKOFF = wait_random_exponential(multiplier=0.5, max=8.0)
# The SDKs' own classification: statuses worth another attempt on the same server.
RETRYABLE_STATUSES = frozenset({408, 409, 429})


# When the call under way must be over (time.monotonic()): with_retries sets it, and a client's
# transport shortens every read and write to it (forest.models.openai_api), so a server that drips a
# byte now and then cannot hold a call past its budget.
CALL_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("forest_call_deadline", default=None)


class Transient(Exception):
    """The server did not answer this attempt; another may succeed."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Unusable(Exception):
    """The answer is not the data asked for; the next attempt is told why."""


def retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUSES or status >= 500


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Retry-After as seconds (a number, or an HTTP date); None when absent or unreadable."""
    value = (headers or {}).get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value) if email.utils.parsedate_tz(value) else None
        return max(0.0, when.timestamp() - time.time()) if when else None


def _wait(state: RetryCallState) -> float:
    error = state.outcome.exception() if state.outcome else None
    if isinstance(error, Transient):
        return error.retry_after if error.retry_after is not None else _BACKOFF(state)
    return 0.0


def with_retries(attempt: Callable[[float], T], attempts: int, budget_seconds: float, what: str) -> T:
    """`attempt(seconds_left)` until it returns: `attempts` tries at most, none started (nor a wait
    begun) that would end after the budget. The last Transient or Unusable is raised as it is."""
    deadline = time.monotonic() + budget_seconds

    def logged(state: RetryCallState) -> None:
        log.warning("%s failed (attempt %d, next in %.1f s): %s", what, state.attempt_number,
                    state.upcoming_sleep, state.outcome.exception() if state.outcome else "")

    retrying = Retrying(stop=stop_after_attempt(attempts) | stop_before_delay(budget_seconds), wait=_wait,
                        retry=retry_if_exception_type((Transient, Unusable)), before_sleep=logged, reraise=True)
    outer = CALL_DEADLINE.get()
    token = CALL_DEADLINE.set(deadline if outer is None else min(outer, deadline))
    try:
        return retrying(lambda: attempt(max(0.001, deadline - time.monotonic())))
    except Transient as exc:
        if time.monotonic() < deadline or "time ran out" in str(exc):
            raise
        raise Transient(f"{exc} (the call's time ran out: {budget_seconds:g} s)", exc.retry_after) from None
    finally:
        CALL_DEADLINE.reset(token)
