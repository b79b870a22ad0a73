"""The rate limit (setting rate_limit, e.g. "30/minute"): ASGI middleware around the whole HTTP app,
so MCP, REST, the OpenAI-compatible chat and any route added later are counted alike; /health is not.

A budget belongs to one client address and, when the server checks an API token, to that token:
two addresses never share one, nor would two tokens. Without a configured token the Authorization
header is checked by nobody, so it does not name a budget (a client could otherwise pick a new one
per call). With redis_url the count lives in Valkey (forest.storage.valkey.SlidingWindow), shared
by every process and worker; without, each process counts its own calls.

Valkey not answering: calls go through (fail open), or get 503 with rate_limit_fail_closed.
"""
from __future__ import annotations

import hashlib
import math
from typing import Any

from starlette.responses import JSONResponse

from forest.config import Settings
from forest.storage.valkey import Decision, LocalWindow, SlidingWindow, link

EXEMPT_PATHS = frozenset({"/health"})
CREDENTIAL_SCHEMES = ("bearer ", "token ")  # mem0's clients send "Token <key>"


class RateLimit:
    def __init__(self, app: Any, settings: Settings, token: str | None) -> None:
        limit, period = settings.rate_limit_window
        self.app = app
        self.state = app.state
        self.tokens_checked = bool(token)
        self.fail_closed = settings.rate_limit_fail_closed
        self.valkey = link(settings.redis_url) if settings.redis_url else None
        self.window = SlidingWindow(self.valkey, limit, period) if self.valkey else LocalWindow(limit, period)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path") in EXEMPT_PATHS:
            return await self.app(scope, receive, send)
        decision = await self._count(self.budget_key(scope))
        if decision is None:
            reply = JSONResponse({"error": "the rate limit's Valkey does not answer: try again shortly"},
                                 status_code=503, headers={"Retry-After": "1"})
        elif not decision.allowed:
            wait = max(1, math.ceil(decision.retry_after))
            reply = JSONResponse({"error": f"rate limit reached: try again in {wait} s"}, status_code=429,
                                 headers={"Retry-After": str(wait)})
        else:
            return await self.app(scope, receive, send)
        return await reply(scope, receive, send)

    def budget_key(self, scope: dict) -> str:
        """The client's address, and the (hashed) token it was let in with when one is checked."""
        client = scope.get("client")
        address = client[0] if client else "unknown"
        if not self.tokens_checked:
            return address
        authorization = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"authorization"), "")
        scheme = next((s for s in CREDENTIAL_SCHEMES if authorization.lower().startswith(s)), "")
        credential = authorization[len(scheme):].strip()
        return f"{hashlib.sha256(credential.encode()).hexdigest()[:16]}|{address}"

    async def _count(self, key: str) -> Decision | None:
        """This call counted; None when Valkey does not answer and the limit fails closed."""
        if self.valkey is None:
            return await self.window.hit(key)
        if not self.valkey.resting:
            try:
                decision = await self.window.hit(key)
            except Exception as exc:  # any client or network error is an outage
                self.valkey.failed(exc)
            else:
                self.valkey.answered()
                return decision
        return None if self.fail_closed else Decision(True)
