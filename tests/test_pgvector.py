"""What is pgvector's own (forest.storage.vectors.pgvector), beyond the VectorStore contract that
tests/test_vector_stores.py holds it to: model_ids sharing one table, processes sharing the
database, a server that restarts, a URL that cannot be used. A real PostgreSQL with pgvector."""
from __future__ import annotations

import threading
import time
from urllib.parse import quote

import numpy as np
import psycopg
import pytest
from psycopg import sql

from forest.config import without_password
from forest.errors import ConfigError, ForestError
from forest.storage.vectors.base import VectorStoreError
from forest.storage.vectors.pgvector import SEARCH, PgVectorStore

DIM = 8


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


def meta(model_id: str) -> dict:
    return {"model_id": model_id, "archive_id": 1, "node_type": "LEAF_CHUNK", "depth": 1}


def with_options(url: str, options: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}options={quote(options)}"


@pytest.fixture
def store(postgres_url):
    made = PgVectorStore(postgres_url, embedder_name="test-embedder", dim=DIM)
    yield made
    made.close()


def fill_big_and_small(store: PgVectorStore) -> tuple[np.ndarray, list[int]]:
    """A big model_id's vectors surround the query, a small one's lie on the far side: the query
    and the small one's exact top 10."""
    rng = np.random.default_rng(0)
    query = unit(np.ones(DIM))
    big = unit(query + 0.3 * rng.normal(size=(1000, DIM)))
    small = unit(-query + 0.3 * rng.normal(size=(15, DIM)))
    store.upsert("big", list(range(1, 1001)), big, [meta("big")] * 1000)
    store.upsert("small", list(range(2001, 2016)), small, [meta("small")] * 15)
    return query, [2001 + i for i in sorted(range(15), key=lambda i: -float(small[i] @ query))[:10]]


def test_a_small_model_id_in_a_big_table_gets_its_full_top_k_from_the_index(postgres_url):
    """Sorting turned off for the session makes the planner take HNSW even for the small model_id
    (it would sort the btree's few rows): the HNSW scan meets the big one's vectors first, and the
    iterative scan goes on until top_k of the small one's pass the filter (without it: none)."""
    url = with_options(postgres_url, "-c enable_sort=off")
    store = PgVectorStore(url, embedder_name="test-embedder", dim=DIM)
    try:
        query, exact = fill_big_and_small(store)
        search = SEARCH.format(sql.Identifier(store.table))
        with store._pool.connection() as conn:  # the store's settings, without its exact fallback
            plan = " ".join(row[0] for row in conn.execute(sql.SQL("EXPLAIN ") + search, [query, "small", 10]))
            assert f"{store.table}_hnsw" in plan
            assert [row[0] for row in conn.execute(search, [query, "small", 10])] == exact
        assert [i for i, _ in store.query("small", query, 10)] == exact
    finally:
        store.close()


def test_a_search_the_index_gives_up_on_is_done_exactly(postgres_url):
    """hnsw.max_scan_tuples stops an iterative scan (20,000 tuples by default; 20 here) before the
    small model_id's vectors are met: the store searches its rows exactly instead."""
    store = PgVectorStore(with_options(postgres_url, "-c enable_sort=off -c hnsw.max_scan_tuples=20"),
                          embedder_name="test-embedder", dim=DIM)
    try:
        query, exact = fill_big_and_small(store)
        found = store.query("small", query, 10)
        assert [i for i, _ in found] == exact
        assert store.query("small", query, 50)[:10] == found  # a top_k above the model_id's 15
    finally:
        store.close()


def test_stores_creating_the_tables_at_once_do_not_fail(postgres_url):
    """Processes starting together on an empty database (threads here: each store has its own
    connections) make pgvector's extension, registry and tables once between them."""
    names = ["test-embedder"] * 3 + ["another-embedder"] * 3
    start = threading.Barrier(len(names))
    made, failed = [], []

    def make(name: str) -> None:
        start.wait()
        try:
            made.append(PgVectorStore(postgres_url, embedder_name=name, dim=DIM))
        except Exception as exc:  # the assertion below shows it
            failed.append(exc)

    threads = [threading.Thread(target=make, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert failed == []
        with psycopg.connect(postgres_url) as conn:
            registered = sorted(row[0] for row in conn.execute("SELECT embedder FROM forest_vector_tables"))
        assert registered == ["another-embedder", "test-embedder"]
        first = next(s for s in made if s.embedder_name == "test-embedder")
        first.upsert("alice", [1], unit(np.ones((1, DIM))), [meta("alice")])
        assert all(s.ids("alice") == [1] for s in made if s.embedder_name == "test-embedder")
    finally:
        for s in made:
            s.close()


def test_model_ids_lists_those_of_every_embedder(postgres_url, store):
    """As Chroma lists every collection: doctor then meets another embedder's model_id as a ConfigError."""
    other = PgVectorStore(postgres_url, embedder_name="another-embedder", dim=DIM)
    try:
        vector = unit(np.ones((1, DIM)))
        store.upsert("alice", [1], vector, [meta("alice")])
        store.upsert("bob", [2], vector, [meta("bob")])
        other.upsert("carol", [3], vector, [meta("carol")])
        assert store.model_ids() == other.model_ids() == ["alice", "bob", "carol"]
        with pytest.raises(ConfigError, match="made by another-embedder"):
            store.ids("carol")
    finally:
        other.close()


def test_an_upsert_of_an_id_another_model_id_holds_is_refused_whole(store):
    vectors = unit(np.random.default_rng(1).normal(size=(3, DIM)))
    store.upsert("alice", [1, 2], vectors[:2], [meta("alice")] * 2)
    with pytest.raises(VectorStoreError, match="1 of 2 node ids are held by another model_id") as refused:
        store.upsert("bob", [3, 1], vectors[[2, 2]], [meta("bob")] * 2)
    assert "alice" not in str(refused.value)  # another tenant is not named
    assert store.ids("bob") == []  # not even the free id 3
    assert np.allclose(store.get_vectors("alice", [1])[1], vectors[0], atol=1e-6)


def test_a_restart_fails_the_call_in_flight_in_one_line_and_the_next_call_works(postgres, postgres_url, store):
    vectors = unit(np.random.default_rng(2).normal(size=(2, DIM)))
    store.upsert("alice", [1, 2], vectors, [meta("alice")] * 2)
    holder = psycopg.connect(postgres_url)
    holder.execute(f"SELECT 1 FROM {store.table} WHERE node_id = 1 FOR UPDATE")  # the upsert waits for it
    failures = []

    def upsert() -> None:
        try:
            store.upsert("alice", [1], vectors[1:], [meta("alice")])
        except VectorStoreError as exc:
            failures.append(exc)

    writer = threading.Thread(target=upsert)
    writer.start()
    deadline = time.monotonic() + 30
    # The upsert's wait for the holder's lock: a backend the holder blocks (not an autovacuum or a
    # wait in another test's database), seen from a connection of its own in autocommit (a
    # transaction keeps its first snapshot of pg_stat_activity).
    with psycopg.connect(postgres_url, autocommit=True) as watcher:
        while not watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
                                  [holder.info.backend_pid]).fetchone()[0]:
            assert time.monotonic() < deadline, "the upsert never waited for the row lock"
            time.sleep(0.05)
    server = postgres.pid()
    postgres.restart()
    assert postgres.pid() not in (None, server), "the server was not restarted"
    writer.join(timeout=120)   # a restart on a loaded machine can take a while
    holder.close()
    assert not writer.is_alive(), "the upsert in flight neither failed nor returned after the restart"
    assert len(failures) == 1 and "\n" not in str(failures[0])
    assert str(failures[0]).startswith(f"the pgvector store at {without_password(postgres_url)} failed:")
    assert sorted(store.ids("alice")) == [1, 2]  # the pool replaced its dead connections
    assert np.allclose(store.get_vectors("alice", [1])[1], vectors[0], atol=1e-6)  # the failed upsert left nothing
    store.upsert("alice", [1], vectors[1:], [meta("alice")])
    assert np.allclose(store.get_vectors("alice", [1])[1], vectors[1], atol=1e-6)


@pytest.mark.parametrize("url", [
    "postgresql://forest:s3cret@127.0.0.1:1/forest",  # nothing listens
    "postgresql://forest:s3cret@/forest?host=/nonexistent-socket-dir",
    "postgresql://forest:s3cret@127.0.0.1:notaport/forest",  # not a URL libpq reads
])
def test_a_url_that_cannot_be_used_fails_at_once_in_one_line_without_its_password(url):
    start = time.monotonic()
    with pytest.raises(ForestError) as failed:
        PgVectorStore(url, embedder_name="test-embedder", dim=DIM)
    message = str(failed.value)
    assert time.monotonic() - start < 5
    assert "s3cret" not in message and "forest:***@" in message and "\n" not in message
    assert message.startswith("the pgvector store cannot use PostgreSQL at postgresql://forest:***@")
