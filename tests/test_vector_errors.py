"""A Chroma failure is an error, never "no vectors": search, delete and doctor must not act on it as empty."""
import pytest
from chromadb.errors import InternalError

from testkit.topics import topic_text
from forest.storage.vectors.base import VectorStoreError


def _failing_chroma(forest, monkeypatch):
    """The real Chroma client starts failing the way a server or disk error does (not "not found")."""
    forest.vectors._collections.clear()

    def broken(*args, **kwargs):
        raise InternalError("disk I/O error")

    monkeypatch.setattr(forest.vectors._client, "get_collection", broken)


def test_a_chroma_error_surfaces_instead_of_looking_empty(make_forest, monkeypatch):
    forest = make_forest()
    forest.ingest_text("alice", "volcanoes", topic_text("volcanoes"))
    assert forest.search("nobody", "lava") == []  # an absent collection is genuinely empty
    vectors_before = len(forest.vectors.ids("alice"))

    _failing_chroma(forest, monkeypatch)
    with pytest.raises(VectorStoreError, match="disk I/O error"):
        forest.search("alice", "lava")
    with pytest.raises(VectorStoreError):
        forest.vectors.delete("alice", [1, 2])
    # doctor --repair must not take the failure for "every vector missing" and re-embed everything
    with pytest.raises(VectorStoreError):
        forest.doctor(repair_drift=True)

    monkeypatch.undo()
    forest.vectors._collections.clear()
    assert len(forest.vectors.ids("alice")) == vectors_before
    assert forest.doctor().healthy
    assert forest.search("alice", "lava")


def test_a_chroma_error_mid_write_leaves_no_archive_and_doctor_cleans_up(make_forest, monkeypatch):
    forest = make_forest()
    forest.ingest_text("alice", "jazz", topic_text("jazz"))
    before = sorted(forest.vectors.ids("alice"))
    collection = forest.vectors._collection("alice", create=True)
    real_upsert = collection.upsert

    def half_then_fail(ids, embeddings, metadatas):  # half the batch lands, then the store fails
        half = len(ids) // 2
        if half:
            real_upsert(ids=ids[:half], embeddings=embeddings[:half], metadatas=metadatas[:half])
        raise InternalError("disk full")

    monkeypatch.setattr(collection, "upsert", half_then_fail)
    with pytest.raises(Exception, match="disk full"):
        forest.ingest_text("alice", "volcanoes", topic_text("volcanoes"))
    monkeypatch.undo()
    assert [a.name for a in forest.archives("alice")] == ["jazz"]
    forest.doctor(repair_drift=True)
    assert forest.doctor().healthy
    assert sorted(forest.vectors.ids("alice")) == before
