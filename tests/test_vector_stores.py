"""The VectorStore contract, held against every backend the same way: what the engine relies on of
a vector store (forest.storage.vectors.base.VectorStore), and that one model_id never reaches another's
vectors. Each backend is the real thing: embedded Chroma, qdrant-client's local mode (no Qdrant
server binary installs here; the server path makes the same client calls), pgvector in a real
PostgreSQL."""
from __future__ import annotations

import numpy as np
import pytest

from forest.errors import ConfigError

DIM = 8
# Every backend's constructor, by name: (tmp_path, request) -> store; request gives other fixtures.
BACKENDS: dict = {}


def backend(name: str):
    def register(make):
        BACKENDS[name] = make
        return make
    return register


@backend("chroma")
def _chroma(tmp_path, request, embedder_name="test-embedder", dim=DIM):
    from forest.storage.vectors.chroma import ChromaVectorStore

    return ChromaVectorStore(path=tmp_path / "chroma", embedder_name=embedder_name, dim=dim)


@backend("qdrant")
def _qdrant(tmp_path, request, embedder_name="test-embedder", dim=DIM):
    from forest.storage.vectors.qdrant import QdrantVectorStore

    return QdrantVectorStore(str(tmp_path / "qdrant"), embedder_name=embedder_name, dim=dim)


@backend("pgvector")
def _pgvector(tmp_path, request, embedder_name="test-embedder", dim=DIM):
    from forest.storage.vectors.pgvector import PgVectorStore

    return PgVectorStore(request.getfixturevalue("postgres_url"), embedder_name=embedder_name, dim=dim)


@pytest.fixture(params=sorted(BACKENDS))
def make_store(request, tmp_path):
    made = []

    def make(**options):
        store = BACKENDS[request.param](tmp_path, request, **options)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def meta(model_id: str, archive_id: int = 1, node_type: str = "LEAF_CHUNK", depth: int = 1) -> dict:
    return {"model_id": model_id, "archive_id": archive_id, "node_type": node_type, "depth": depth}


@pytest.fixture
def vectors() -> np.ndarray:
    return unit(np.random.default_rng(7).normal(size=(40, DIM)))


def test_query_ranks_by_cosine_like_an_exact_search(make_store, vectors):
    store = make_store()
    ids = list(range(100, 140))
    store.upsert("alice", ids, vectors, [meta("alice") for _ in ids])
    query = unit(np.random.default_rng(8).normal(size=(1, DIM)))[0]
    found = store.query("alice", query, 10)
    exact = sorted(zip(ids, map(float, vectors @ query)), key=lambda pair: -pair[1])[:10]
    assert [i for i, _ in found] == [i for i, _ in exact]
    assert np.allclose([s for _, s in found], [s for _, s in exact], atol=1e-4)
    assert len(store.query("alice", query, 1000)) == 40  # more asked than held: all of them
    assert store.query("alice", query, 0) == []


def test_get_update_delete_and_ids(make_store, vectors):
    store = make_store()
    store.upsert("alice", [1, 2, 3], vectors[:3], [meta("alice") for _ in range(3)])
    got = store.get_vectors("alice", [1, 3, 99])
    assert sorted(got) == [1, 3] and np.allclose(got[3], vectors[2], atol=1e-6)
    store.upsert("alice", [2], vectors[10:11], [meta("alice")])  # an upsert replaces
    assert np.allclose(store.get_vectors("alice", [2])[2], vectors[10], atol=1e-6)
    store.update_metadata("alice", [1], [meta("alice", archive_id=7, node_type="SUMMARY_NODE", depth=0)])
    store.delete("alice", [1, 99])
    assert sorted(store.ids("alice")) == [2, 3]
    store.delete("alice", [2, 3])
    assert store.ids("alice") == [] and store.query("alice", vectors[0], 5) == []


def test_an_unknown_model_id_is_empty_not_an_error(make_store, vectors):
    store = make_store()
    assert store.query("nobody", vectors[0], 5) == []
    assert store.get_vectors("nobody", [1]) == {} and store.ids("nobody") == []
    store.delete("nobody", [1])  # nothing to delete: no error


def test_one_model_id_never_reaches_another_s_vectors(make_store, vectors):
    store = make_store()
    store.upsert("alice", [1, 2], vectors[:2], [meta("alice"), meta("alice")])
    store.upsert("bob", [3], vectors[2:3], [meta("bob")])
    assert [i for i, _ in store.query("bob", vectors[0], 10)] == [3]
    assert store.get_vectors("bob", [1, 2]) == {}
    store.delete("bob", [1, 2])
    store.update_metadata("bob", [1], [meta("bob")])
    assert sorted(store.ids("alice")) == [1, 2] and store.ids("bob") == [3]
    assert {"alice", "bob"} <= set(store.model_ids())
    assert [i for i, _ in store.query("alice", vectors[0], 10)][:1] == [1]


def test_vectors_of_another_embedder_are_refused(make_store, vectors):
    store = make_store()
    store.upsert("alice", [1], vectors[:1], [meta("alice")])
    store.close()
    other = make_store(embedder_name="another-embedder")
    with pytest.raises(ConfigError, match="another-embedder|test-embedder"):
        other.query("alice", vectors[0], 5)
