"""Valkey (or Redis) beside the servers: what every serve process and worker shares when
`redis_url` is set (docs/server-stack.md#valkey-beside-the-servers).

- `ValkeyLink`: one process's connections to the server, and whether it answers. A failed call
  marks it down for RETRY_SECONDS, during which nothing waits on it; the outage is logged once,
  and once more when it answers again.
- `SharedVectorCache`: query vectors by embedder and text, with a TTL (the embedders' shared tier).
- `SlidingWindow`: the rate limit's count, atomic in one Lua script; `LocalWindow` is the same
  count inside one process, for `rate_limit` without Valkey.

The `redis` client is imported only here, when a link is first used: without `redis_url` nothing
of it loads.
"""
from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import logging
import threading
import time
import uuid
import weakref
from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from forest.config import without_password
from forest.errors import ConfigError

log = logging.getLogger("forest.storage.valkey")

# A dead or unreachable Valkey must never stall a call: connecting and each reply get this long
# (a local or same-rack Valkey answers in well under 1 ms), and no retries.
TIMEOUT_SECONDS = 0.05
# After a failure nothing is sent for this long; then the next call tries again.
RETRY_SECONDS = 1.0
PREFIX = "forest:"


class ValkeyLink:
    """Lazily made clients (one blocking, one per event loop for the ASGI middleware) and the
    server's health as this process last saw it."""

    def __init__(self, url: str) -> None:
        if importlib.util.find_spec("redis") is None:  # said at start, not as an outage on every call
            raise ConfigError('redis_url needs the redis client: pip install "memory-forest[valkey]"')
        self.url = url
        self.shown_url = without_password(url)
        self._sync: Any = None
        self._async: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._down = False

    def client(self) -> Any:
        if self._sync is None:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry

            with self._lock:
                self._sync = self._sync or redis.Redis.from_url(
                    self.url, socket_timeout=TIMEOUT_SECONDS, socket_connect_timeout=TIMEOUT_SECONDS,
                    retry=Retry(NoBackoff(), 0), health_check_interval=0)
        return self._sync

    def async_client(self) -> Any:
        """The asyncio client of the running loop (an asyncio connection belongs to its loop: the
        workbench's endpoint and uvicorn each run their own)."""
        loop = asyncio.get_running_loop()
        client = self._async.get(loop)
        if client is None:
            import redis.asyncio
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff

            client = self._async[loop] = redis.asyncio.Redis.from_url(
                self.url, socket_timeout=TIMEOUT_SECONDS, socket_connect_timeout=TIMEOUT_SECONDS,
                retry=Retry(NoBackoff(), 0), health_check_interval=0)
        return client

    @property
    def resting(self) -> bool:
        """Whether a recent failure says not to try now."""
        return time.monotonic() < self._down_until

    def failed(self, error: Exception) -> None:
        with self._lock:
            self._down_until = time.monotonic() + RETRY_SECONDS
            if self._down:
                return
            self._down = True
        log.warning("Valkey at %s does not answer (%s: %s): until it does, queries are embedded here and "
                    "the rate limit lets calls through (503 if rate_limit_fail_closed)", self.shown_url,
                    type(error).__name__, error)

    def answered(self) -> None:
        if self._down:
            with self._lock:
                was_down, self._down = self._down, False
            if was_down:
                log.warning("Valkey at %s answers again: the query cache and the rate limit are back", self.shown_url)


@lru_cache(maxsize=None)
def link(url: str) -> ValkeyLink:
    """The process's one link per URL, so that an outage is told once whoever noticed it."""
    return ValkeyLink(url)


class SharedVectorCache:
    """Vectors shared by every process on the link, by `namespace` (the embedder's identity) and
    text, kept `ttl_seconds` from their last write. Stored as the float32 bytes themselves (1.5 KB
    for 384 dimensions): no encoding to parse, and a hit is bit for bit what was embedded.
    Every failure is a miss: the caller embeds, as without Valkey."""

    def __init__(self, valkey: ValkeyLink, namespace: str, ttl_seconds: int) -> None:
        self.valkey = valkey
        self.prefix = f"{PREFIX}qv:{_digest(namespace)[:16]}:"
        self.ttl_seconds = ttl_seconds

    def key(self, text: str) -> str:
        return self.prefix + _digest(text)

    def get(self, text: str, dim: int) -> np.ndarray | None:
        if self.valkey.resting:
            return None
        try:
            raw = self.valkey.client().get(self.key(text))
        except Exception as exc:  # any client or network error: embed instead
            self.valkey.failed(exc)
            return None
        self.valkey.answered()
        if raw is None or len(raw) != dim * 4:
            return None
        return np.frombuffer(raw, dtype=np.float32).copy()

    def put(self, text: str, vector: np.ndarray) -> None:
        if self.valkey.resting:
            return
        try:
            self.valkey.client().set(self.key(text), np.asarray(vector, dtype=np.float32).tobytes(),
                                     ex=self.ttl_seconds)
        except Exception as exc:
            self.valkey.failed(exc)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    retry_after: float = 0.0  # seconds until one more call would be let through


# Sliding window log, not GCRA: "30/minute" then means at most 30 calls in any 60 s, exactly, which
# is what a reader of the setting expects (GCRA lets a burst of 30 and then one every 2 s, so 50
# calls over 10 s would pass 35). The cost is one sorted-set entry per call in the window, bounded
# by the limit. The clock is the server's (TIME), so processes on hosts with skewed clocks agree.
_SLIDING_WINDOW = """
local key, limit, window, member = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
if redis.call('ZCARD', key) < limit then
  redis.call('ZADD', key, now, member)
  redis.call('PEXPIRE', key, math.ceil(window / 1000))
  return 0
end
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
return math.max(1, tonumber(oldest[2]) + window - now)
"""


class SlidingWindow:
    """At most `limit` calls per `period_seconds` per key, counted in Valkey for every process."""

    def __init__(self, valkey: ValkeyLink, limit: int, period_seconds: float) -> None:
        self.valkey = valkey
        self.limit = limit
        self.window_us = int(period_seconds * 1_000_000)
        self._scripts: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

    async def hit(self, key: str) -> Decision:
        """Count one call; raises the client's error when Valkey does not answer."""
        client = self.valkey.async_client()
        script = self._scripts.get(client)
        if script is None:
            script = self._scripts[client] = client.register_script(_SLIDING_WINDOW)
        wait_us = int(await script(keys=[f"{PREFIX}rl:{key}"], args=[self.limit, self.window_us, uuid.uuid4().hex]))
        return Decision(wait_us <= 0, wait_us / 1_000_000)


class LocalWindow:
    """The same sliding window kept in this process (rate_limit without redis_url): each process,
    and each `--workers` worker, then counts only the calls it answers."""

    MAX_KEYS = 10_000

    def __init__(self, limit: int, period_seconds: float) -> None:
        self.limit = limit
        self.period = period_seconds
        self._calls: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    async def hit(self, key: str) -> Decision:
        now = time.monotonic()
        with self._lock:
            if len(self._calls) > self.MAX_KEYS:  # forget clients whose window has passed
                self._calls = {k: q for k, q in self._calls.items() if q and q[-1] > now - self.period}
            calls = self._calls.setdefault(key, deque())
            while calls and calls[0] <= now - self.period:
                calls.popleft()
            if len(calls) < self.limit:
                calls.append(now)
                return Decision(True)
            return Decision(False, calls[0] + self.period - now)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
