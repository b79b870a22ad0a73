"""A Chroma failure is an error, never "no vectors": search, delete and doctor must not act on it as empty."""
import pytest
from chromadb.errors import InternalError

from conftest import topic_text
from forest.vectors import VectorStoreError


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
