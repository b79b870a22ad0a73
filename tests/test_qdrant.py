"""What is Qdrant's own in forest.storage.vectors.qdrant (the shared contract is tests/test_vector_stores.py):
the engine end to end on it, one collection shared by model_ids yet isolated even against forged
ids, failures as errors, batching. On qdrant-client's local mode: no Qdrant server binary installs
here, and the server path makes the same client calls."""
from __future__ import annotations

import socket
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from qdrant_client.http.exceptions import ResponseHandlingException

from testkit.processes import free_port
from testkit.topics import topic_text
from forest.errors import ConfigError, ForestError
from forest.storage.vectors import qdrant
from forest.storage.vectors.base import VectorStoreError
from forest.storage.vectors.qdrant import QdrantVectorStore

DIM = 8
QUERIES = ["how do plants fix carbon?", "what makes an eruption explosive?", "who played bebop?"]


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def meta(model_id: str, archive_id: int = 1) -> dict:
    return {"model_id": model_id, "archive_id": archive_id, "node_type": "LEAF_CHUNK", "depth": 1}


@pytest.fixture
def store(tmp_path):
    made = QdrantVectorStore(str(tmp_path / "qdrant"), embedder_name="test-embedder", dim=DIM)
    yield made
    made.close()


@pytest.fixture
def vectors() -> np.ndarray:
    return unit(np.random.default_rng(3).normal(size=(30, DIM)))


def payload(store: QdrantVectorStore, point_id: int) -> dict:
    """A point's payload as stored, read past the store's model_id filter."""
    return store._client.retrieve(store.collection, [point_id], with_payload=True)[0].payload


def on_qdrant(make_forest, tmp_path):
    forest = make_forest(tmp_path / "qdrant-store", vector_store="qdrant",
                         qdrant_url=str(tmp_path / "qdrant"), chunk_size=300, chunk_overlap=0)
    assert isinstance(forest.vectors, QdrantVectorStore)
    return forest


@pytest.mark.slow
def test_the_engine_on_qdrant_finds_what_it_finds_on_chroma(make_forest, tmp_path):
    chroma = make_forest(tmp_path / "chroma-store", chunk_size=300, chunk_overlap=0)
    forest = on_qdrant(make_forest, tmp_path)
    text = topic_text("photosynthesis", "volcanoes", "jazz")
    for engine in (chroma, forest):
        engine.ingest_text("alice", "notes", text)
        engine.ingest_text("alice", "plants", topic_text("photosynthesis"))
    for query in QUERIES:
        want, got = chroma.search("alice", query, top_k=6), forest.search("alice", query, top_k=6)
        assert got and [h.node.id for h in got] == [h.node.id for h in want]
        assert np.allclose([h.relevance_score for h in got], [h.relevance_score for h in want], atol=1e-3)
        want_reps, got_reps = chroma.retrieve("alice", query), forest.retrieve("alice", query)
        assert got_reps and [(r.node.id, r.kind, r.hit_ids) for r in got_reps] == [
            (r.node.id, r.kind, r.hit_ids) for r in want_reps]
        want_ctx, got_ctx = chroma.context("alice", query, 400), forest.context("alice", query, 400)
        assert got_ctx.leaves and [s.node.id for s in got_ctx.leaves] == [s.node.id for s in want_ctx.leaves]


@pytest.mark.slow
def test_doctor_repairs_a_lost_point_and_deleting_an_archive_leaves_none(make_forest, tmp_path):
    forest = on_qdrant(make_forest, tmp_path)
    kept = forest.ingest_text("alice", "volcanoes", topic_text("volcanoes"))
    gone = forest.ingest_text("alice", "jazz", topic_text("jazz"))
    forest.ingest_text("bob", "jazz", topic_text("jazz"))
    assert forest.doctor().healthy
    lost = forest.tree("alice", kept.id)[-1].id
    forest.vectors.delete("alice", [lost])  # behind the engine's back
    report = forest.doctor()
    assert report.missing_vectors == {"alice": [lost]}
    forest.doctor(repair_drift=True)
    assert forest.doctor().healthy and lost in forest.vectors.ids("alice")

    bob_before = sorted(forest.vectors.ids("bob"))
    forest.delete_archive("alice", gone.id)
    stored = forest.vectors._client.scroll(forest.vectors.collection, limit=10_000, with_payload=True)[0]
    assert not [p for p in stored if p.payload["archive_id"] == gone.id]  # no point left, whoever's
    assert sorted(forest.vectors.ids("alice")) == sorted(n.id for n in forest.tree("alice", kept.id))
    assert sorted(forest.vectors.ids("bob")) == bob_before and forest.doctor().healthy


def test_forged_ids_never_read_change_or_delete_another_model_id_s_points(store, vectors):
    store.upsert("alice", [1, 2], vectors[:2], [meta("alice"), meta("alice")])
    store.upsert("bob", [3], vectors[2:3], [meta("bob")])
    assert store.get_vectors("bob", [1, 2, 3]).keys() == {3}
    store.update_metadata("bob", [1, 3], [meta("bob", archive_id=9), meta("bob", archive_id=9)])
    assert payload(store, 1) == meta("alice") and payload(store, 3) == meta("bob", archive_id=9)
    store.delete("bob", [1, 2])
    assert sorted(store.ids("alice")) == [1, 2]
    with pytest.raises(VectorStoreError, match=r"node ids \[2\] hold another model_id's vectors"):
        store.upsert("bob", [4, 2], vectors[5:7], [meta("bob"), meta("bob")])
    assert store.ids("bob") == [3]  # refused before anything was written
    assert np.allclose(store.get_vectors("alice", [2])[2], vectors[1], atol=1e-6)
    assert payload(store, 2) == meta("alice")
    with pytest.raises(VectorStoreError, match="names model_id 'alice', not 'bob'"):
        store.upsert("bob", [5], vectors[:1], [meta("alice")])  # a payload would move it to alice
    with pytest.raises(VectorStoreError, match="names model_id 'alice', not 'bob'"):
        store.update_metadata("bob", [3], [meta("alice")])
    assert payload(store, 3)["model_id"] == "bob" and store.ids("alice") == [1, 2]


def test_a_point_another_model_id_wrote_after_the_check_is_left_as_it_is(store, vectors, monkeypatch):
    store.upsert("alice", [1], vectors[:1], [meta("alice")])
    monkeypatch.setattr(store._client, "retrieve", lambda *args, **kwargs: [])  # the check sees nothing yet
    store.upsert("bob", [1, 2], vectors[5:7], [meta("bob"), meta("bob")])
    monkeypatch.undo()
    assert payload(store, 1) == meta("alice") and np.allclose(store.get_vectors("alice", [1])[1], vectors[0])
    assert store.ids("bob") == [2]


def test_model_ids_come_back_as_stored_even_when_they_look_like_uuids(store, vectors):
    # local mode's facet rewrites values that parse as UUIDs; these must not change or merge
    names = ["alice", "550E8400-E29B-41D4-A716-446655440000", "550e8400e29b41d4a716446655440000"]
    for i, name in enumerate(names):
        store.upsert(name, [i + 1], vectors[i:i + 1], [meta(name)])
    assert store.model_ids() == sorted(names)
    assert all(store.ids(name) == [i + 1] for i, name in enumerate(names))
    store.delete("alice", [1])
    assert store.model_ids() == sorted(names[1:])


def test_large_writes_and_reads_go_in_batches(store, vectors, monkeypatch):
    calls: list[tuple[str, int]] = []
    client = store._client
    for method in ("upsert", "retrieve", "delete", "scroll"):
        real = getattr(client, method)

        def counted(*args, _real=real, _method=method, **kwargs):
            calls.append((_method, kwargs.get("limit", 0)))
            return _real(*args, **kwargs)

        monkeypatch.setattr(client, method, counted)
    monkeypatch.setattr(qdrant, "WRITE_BATCH", 7)
    monkeypatch.setattr(qdrant, "ID_BATCH", 4)
    monkeypatch.setattr(qdrant, "PAGE", 9)
    ids = list(range(100, 130))
    store.upsert("alice", ids, vectors, [meta("alice") for _ in ids])
    assert [m for m, _ in calls].count("upsert") == 5 and [m for m, _ in calls].count("retrieve") == 8
    got = store.get_vectors("alice", ids)
    assert sorted(got) == ids and np.allclose(np.stack([got[i] for i in ids]), vectors, atol=1e-6)
    calls.clear()
    assert sorted(store.ids("alice")) == ids and calls.count(("scroll", 9)) == 4  # 9 + 9 + 9 + 3
    store.delete("alice", ids[:-1])
    assert store.ids("alice") == [129]


def test_a_qdrant_failure_is_an_error_never_an_empty_store(make_forest, tmp_path, monkeypatch):
    forest = on_qdrant(make_forest, tmp_path)
    forest.ingest_text("alice", "volcanoes", topic_text("volcanoes"))
    held = sorted(forest.vectors.ids("alice"))

    def down(*args, **kwargs):  # what the client raises when the server goes away mid-request
        raise ResponseHandlingException(ConnectionError("[Errno 111] Connection refused\nretry later"))

    for method in ("query_points", "scroll", "delete", "facet"):
        monkeypatch.setattr(forest.vectors._client, method, down)
    for call in (lambda: forest.search("alice", "lava"), lambda: forest.vectors.ids("alice"),
                 lambda: forest.vectors.delete("alice", held), lambda: forest.doctor(repair_drift=True)):
        with pytest.raises(VectorStoreError, match=r"^the Qdrant store at .+ failed: .*refused retry later$"):
            call()
    monkeypatch.undo()
    assert sorted(forest.vectors.ids("alice")) == held and forest.doctor().healthy


def test_an_unreachable_server_fails_at_once_in_one_line():
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    started = time.monotonic()
    with pytest.raises(ForestError) as refused:
        QdrantVectorStore(url, embedder_name="test-embedder", dim=DIM)
    assert time.monotonic() - started < 2
    assert str(refused.value).startswith(f"cannot use the Qdrant store at {url}: ")
    assert "\n" not in str(refused.value)


def test_a_server_that_never_answers_fails_within_the_timeout():
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        with pytest.raises(ForestError, match=f"^cannot use the Qdrant store at {url}: "):
            QdrantVectorStore(url, embedder_name="test-embedder", dim=DIM)
        assert time.monotonic() - started < qdrant.TIMEOUT_SECONDS + 2


@pytest.mark.parametrize("url", ["localhost:6333", "ftp://example.org/qdrant", "http://:6333",
                                 "http://host:port"])
def test_a_wrong_url_is_refused_not_taken_for_a_directory(url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="qdrant_url"):
        QdrantVectorStore(url, embedder_name="test-embedder", dim=DIM)
    assert list(tmp_path.iterdir()) == []


def test_the_engine_names_the_url_it_cannot_reach(make_forest):
    url = f"http://127.0.0.1:{free_port()}"
    forest = make_forest(vector_store="qdrant", qdrant_url=url)
    with pytest.raises(ForestError, match=f"Qdrant store at {url}"):
        forest.search("alice", "lava")


def test_a_local_directory_is_one_process_s_at_a_time(store, tmp_path):
    with pytest.raises(ForestError, match="one process at a time"):
        QdrantVectorStore(str(tmp_path / "qdrant"), embedder_name="test-embedder", dim=DIM)
    store.close()
    again = QdrantVectorStore(str(tmp_path / "qdrant"), embedder_name="test-embedder", dim=DIM)
    again.close()
    with pytest.raises(VectorStoreError, match="closed"):
        again.ids("alice")


def test_a_collection_of_another_dimension_or_embedder_is_refused(store, tmp_path, vectors):
    store.upsert("alice", [1], vectors[:1], [meta("alice")])
    store.close()
    path = str(tmp_path / "qdrant")
    with pytest.raises(ConfigError, match="of 8 dimensions, but the embedder test-embedder makes 16"):
        QdrantVectorStore(path, embedder_name="test-embedder", dim=16)
    # "flag/e5" and "flag:e5" sanitise to one collection name: the second is refused, not mixed in
    QdrantVectorStore(str(tmp_path / "other"), embedder_name="flag/e5", dim=DIM).close()
    with pytest.raises(ConfigError, match="belongs to the embedder flag/e5, not flag:e5"):
        QdrantVectorStore(str(tmp_path / "other"), embedder_name="flag:e5", dim=DIM)


def test_threads_share_a_local_store(store, vectors):
    """The engine calls its store from several threads (background ingests, the server); local
    mode's SQLite and index are one thread's unless the store takes turns."""
    def work(worker: int) -> list[int]:
        model_id = f"m{worker}"
        for i in range(20):
            store.upsert(model_id, [worker * 100 + i], vectors[i % 30:i % 30 + 1], [meta(model_id)])
            store.query(model_id, vectors[0], 3)
        return sorted(store.ids(model_id))

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, range(4)))
    assert results == [[w * 100 + i for i in range(20)] for w in range(4)]
