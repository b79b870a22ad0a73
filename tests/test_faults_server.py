"""Fault injection on the server stack (PostgreSQL + pgvector, real processes; the machinery is
testkit/faults.py and testkit/server_faults.py, and bench/bench_faults.py --stack server
runs it with 100+ kills): a writer SIGKILLed in the middle of each operation, `forest serve`
workers SIGKILLed while clients write through REST and MCP, `forest personal worker` processes
SIGKILLed while they share one queue, and PostgreSQL restarted under load. Afterwards nothing was
lost, written twice or left half-built, and `forest doctor` finds the store healthy or repairs it."""
from __future__ import annotations

import asyncio
import os
import random
import signal
import threading
import time

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from testkit.processes import free_port
from testkit.topics import topic_text
from testkit import faults, server_faults
from forest import MemoryForest
from forest.serving.http import ThreadServer
from forest.storage.sql.postgres import PostgresDatabase
from forest.storage.vectors.pgvector import PgVectorStore


@pytest.fixture(scope="module")
def ctx():
    return faults.context()


@pytest.fixture(scope="module")
def server(postgres):
    return faults.Server(postgres)


@pytest.mark.parametrize("operation", list(faults.OPERATIONS))
def test_a_writer_killed_anywhere_leaves_a_whole_server_store(ctx, server, tmp_path, operation):
    """As on the embedded stack: killed right after each durable write in turn (a committed
    PostgreSQL transaction, a pgvector write) and at random moments, the store is the one before
    or the one after, never between."""
    line = faults.baseline(ctx, operation, tmp_path, server)
    try:
        violations = faults.kill_anywhere(ctx, line, tmp_path, operation)
    finally:
        line.discard()
    assert violations == []


# --- what only the server stack has ------------------------------------------------------------
def test_serve_workers_killed_mid_write_lose_and_double_nothing(server, tmp_path):
    """`forest serve --workers 2` SIGKILLed worker by worker while REST and MCP clients write
    documents and personal input: every write a client was told succeeded is stored once, none
    twice, none half-built, doctor repairs what the kills left; every failed call failed at once
    and was answered when sent again."""
    outcome = server_faults.kill_serve_workers(server, tmp_path, kills=2, rng=random.Random(2))
    assert outcome.faults == 2 and outcome.writes > 0
    assert outcome.violations == []


def test_a_serve_process_killed_after_each_write_of_a_call_loses_no_reply_it_cannot_repeat(ctx, server, tmp_path):
    """Killed right after each durable write of an `add_document` (REST) and of a `process_memory`
    (MCP) and its queued write: the kills that took a reply made the client send the call again,
    and each write is stored once."""
    outcome = server_faults.kill_serve_after_each_write(ctx, server, tmp_path,
                                                        (("document", "rest"), ("memory", "mcp")))
    assert outcome.faults >= 4 and outcome.failed_calls >= 2
    assert outcome.violations == []


def test_queue_workers_killed_while_they_share_the_queue_write_each_input_once(server, tmp_path):
    """`forest personal worker` processes share one queue; one holding claimed input is SIGKILLed,
    three times: its claims are taken over by another worker (not after the lease), and every
    queued input is written exactly once."""
    outcome = server_faults.kill_queue_workers(server, tmp_path, kills=3, rng=random.Random(3))
    assert outcome.faults == 3 and outcome.writes >= 3 * 48
    assert outcome.violations == []


def test_postgres_restarted_under_load_loses_and_doubles_nothing(server, tmp_path):
    """A fast restart, then a crash (stop -m immediate, start) while clients write through two
    serve workers and two queue workers write: no process dies, the calls it cut fail in one line,
    the next calls work, nothing is lost or doubled and doctor finds no drift."""
    outcome = server_faults.restart_database(server, tmp_path, restarts=2, rng=random.Random(4))
    assert outcome.faults == 2 and outcome.writes > 0
    assert outcome.violations == []


# --- what these runs found, each fixed (each test fails on the code before) --------------------
def test_one_mcp_session_outlives_the_serve_workers_that_answered_it(postgres_url, tmp_path):
    """`forest serve --workers 2`: each worker is SIGKILLed in turn (the supervisor starts another)
    and one MCP session's calls go on being answered by whichever worker takes them. (Sessions
    lived in one worker's memory: the other workers, and a worker started after a crash, answered
    "Session not found", and a client that sent a write again wrote it twice.)"""
    serve = server_faults.Serve(faults.Store(str(tmp_path / "store"), postgres_url), tmp_path, workers=2)
    try:
        serve.wait_ready()

        async def session_across_kills() -> list[bool]:
            http = create_mcp_http_client()
            async with (http, streamable_http_client(f"{serve.endpoint}/mcp", http_client=http) as (read, write),
                        ClientSession(read, write) as session):
                await session.initialize()
                answered = [not (await session.call_tool("list_archives", {"model_id": "lab"})).is_error]
                for pid in serve.workers():
                    os.kill(pid, signal.SIGKILL)
                    serve.started += 1
                    await asyncio.to_thread(serve.wait_ready)
                    note = {"model_id": "lab", "session_id": "s", "kind": "finding", "text": f"after {pid}"}
                    answered.append(not (await session.call_tool("add_research_note", note)).is_error)
                return answered

        assert asyncio.run(session_across_kills()) == [True, True, True]
    finally:
        serve.stop()


def test_the_first_call_after_a_restart_does_not_wait_out_the_dead_connections(postgres, postgres_url):
    """A restart closes every pooled connection: the first call after it finds them all dead at
    once and connects again. (It tried them one by one, psycopg_pool sleeping 1, 2, 4, 8 s... in
    between: 30 s for six idle connections, when the server was back in one.)"""
    db = PostgresDatabase(postgres_url)
    vectors = PgVectorStore(postgres_url, embedder_name="test-embedder", dim=4)
    try:
        _fill(db._pool, 6)
        _fill(vectors._pool, 4)
        postgres.restart()
        began = time.monotonic()
        with db.transaction() as conn:
            conn.execute("SELECT 1")
        assert vectors.ids("m") == []
        assert time.monotonic() - began < 4.0
    finally:
        vectors.close()
        db.close()


def _fill(pool, size: int) -> None:
    """`size` connections open and idle in the pool (taken at once by as many threads)."""
    together = threading.Barrier(size)

    def take() -> None:
        with pool.connection():
            together.wait(30)

    threads = [threading.Thread(target=take) for _ in range(size)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert pool.get_stats()["pool_available"] == size


def test_a_call_while_the_database_is_down_gets_one_line_and_the_next_call_works(postgres, postgres_url, tmp_path,
                                                                                  embedder, monkeypatch):
    """REST and MCP: a write while PostgreSQL is down fails with one line saying so (HTTP 503: send
    it again) once the pool gives up waiting, and the same call works when the server is back.
    (The writer lock's connection came straight from the pool: its PoolTimeout reached clients as
    "internal error in add_document"; and a database outage was a 400, the caller's fault.)"""
    monkeypatch.setattr("forest.storage.sql.postgres.POOL_WAIT_SECONDS", 2.0)
    forest = MemoryForest(data_dir=tmp_path / "store", database_url=postgres_url, vector_store="pgvector",
                          embedder=embedder, chunk_size=300)
    server = ThreadServer(forest, port=free_port()).start()
    document = {"model_id": "lab", "name": "jazz", "text": topic_text("jazz")}
    note = {"model_id": "lab", "session_id": "s", "kind": "finding", "text": "Bebop came from New York."}
    try:
        forest.embedder.embed_query("loaded before the outage")
        postgres.stop(mode="immediate")
        try:
            down = [httpx.post(f"{server.url}/tools/{tool}", json=arguments, timeout=60)
                    for tool, arguments in (("add_document", document), ("add_research_note", note))]
            by_mcp = asyncio.run(_mcp_call(f"{server.url}/mcp", "add_research_note", note))
        finally:
            postgres.start()
        for reply in down:
            assert reply.status_code == 503, reply.text
            assert "PostgreSQL" in reply.json()["error"] and "\n" not in reply.json()["error"]
        assert by_mcp.is_error and "PostgreSQL" in by_mcp.content[0].text
        for tool, arguments in (("add_document", document), ("add_research_note", note)):
            assert _until_answered(f"{server.url}/tools/{tool}", arguments).status_code == 200
        assert [a.name for a in forest.archives("lab")] == ["jazz"]  # the failed calls kept nothing
        assert [n.text for n in forest.research.workspace("lab", "s")] == [note["text"]]
    finally:
        server.stop()
        forest.close()


def _until_answered(url: str, arguments: dict):
    """The call sent again while it gets 503 (the pool connects again at its next try, psycopg_pool
    backing off 1, 2, 4 s... while the server was down), each 503 one line."""
    deadline = time.monotonic() + 60
    while (reply := httpx.post(url, json=arguments, timeout=60)).status_code == 503 and time.monotonic() < deadline:
        assert "\n" not in reply.json()["error"]
        time.sleep(0.5)
    return reply


async def _mcp_call(url: str, tool: str, arguments: dict):
    http = create_mcp_http_client()
    async with (http, streamable_http_client(url, http_client=http) as (read, write),
                ClientSession(read, write) as session):
        await session.initialize()
        return await session.call_tool(tool, arguments)


def test_doctor_run_elsewhere_as_a_build_starts_leaves_it_alone(postgres_url, tmp_path, embedder, monkeypatch):
    """`forest doctor --repair` from another process in the moment a build's row is written: the
    build is already marked alive, so doctor leaves it and the build finishes. (The mark was taken
    after the row committed: doctor in between deleted the live build, which then failed with a
    database error.)"""
    server = {"database_url": postgres_url, "vector_store": "pgvector", "chunk_size": 300}
    builder = MemoryForest(data_dir=tmp_path / "builder", embedder=embedder, **server)
    elsewhere = MemoryForest(data_dir=tmp_path / "elsewhere", embedder=embedder, **server)
    hold, doctors = PostgresDatabase.hold, []

    def doctor_first(self, name):
        if self is builder.db and not doctors:
            doctors.append(elsewhere.doctor(repair_drift=True))
        return hold(self, name)

    monkeypatch.setattr(PostgresDatabase, "hold", doctor_first)
    try:
        archive = builder.ingest_text("lab", "jazz", topic_text("jazz"))
        assert doctors[0].stale_builds == []
        assert [a.id for a in elsewhere.archives("lab")] == [archive.id] and elsewhere.doctor().healthy
    finally:
        elsewhere.close()
        builder.close()
