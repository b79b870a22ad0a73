"""Vector snapshots (forest.storage.vectors.snapshots): an engine made for a command reads them instead of
opening Chroma, and never a stale one: writes discard them, none is taken while a writer is at
work, and a damaged or foreign one is passed over for Chroma."""
import numpy as np
import pytest

from testkit.topics import topic_text
from forest import MemoryForest, load_settings
from forest.errors import ConfigError
from forest.storage.locks import WriterLock
from forest.storage.ownership import open_embedded
from forest.storage.vectors.chroma import collection_name

QUESTION = "Which musicians played bebop in New York?"


def command_forest(data_dir, embedder) -> MemoryForest:
    """The engine a `forest` command makes: it reads and takes vector snapshots."""
    return MemoryForest(load_settings({"data_dir": data_dir}, environ={}), embedder=embedder,
                        vector_snapshots=True, chunk_size=300, chunk_overlap=0)


def snapshot_file(data_dir, model_id):
    return data_dir / "chroma.snapshots" / f"{collection_name(model_id)}.npz"


@pytest.fixture
def snapshotted(tmp_path, embedder):
    """A store whose "alice" archive was ingested by a command, with what Chroma answered then."""
    data_dir = tmp_path / "store"
    first = command_forest(data_dir, embedder)
    first.ingest_text("alice", "notes", topic_text("photosynthesis", "volcanoes", "jazz"))
    from_chroma = {"context": first.context("alice", QUESTION, 200).to_dict(),
                   "hits": first.vectors.query("alice", embedder.embed_query(QUESTION), 50),
                   "ids": sorted(first.vectors.ids("alice"))}
    first.close()
    return data_dir, from_chroma


@pytest.mark.slow
def test_the_next_command_reads_the_snapshot_a_command_left_and_gets_what_chroma_gave(snapshotted, embedder):
    data_dir, from_chroma = snapshotted
    assert snapshot_file(data_dir, "alice").exists()
    second = command_forest(data_dir, embedder)
    try:
        assert second.context("alice", QUESTION, 200).to_dict() == from_chroma["context"]
        hits = second.vectors.query("alice", embedder.embed_query(QUESTION), 50)
        # exact search over every vector: at this size Chroma's HNSW index finds the same, in order
        assert [i for i, _ in hits] == [i for i, _ in from_chroma["hits"]]
        assert np.allclose([s for _, s in hits], [s for _, s in from_chroma["hits"]], atol=1e-5)
        assert second.vectors._client is None  # Chroma was never opened
    finally:
        second.close()


@pytest.mark.slow
def test_a_write_discards_the_snapshot_before_it_reaches_chroma(snapshotted, embedder):
    data_dir, from_chroma = snapshotted
    engine = command_forest(data_dir, embedder)
    try:
        engine.ingest_text("alice", "more",
                           "Hard bop grew out of bebop in the 1950s with Art Blakey's Jazz Messengers.")
        assert not snapshot_file(data_dir, "alice").exists()
        leaves = engine.context("alice", "Who led the Jazz Messengers?", 200).leaves
        assert "Blakey" in leaves[0].node.content  # read from Chroma, which has the new vectors
        ids = sorted(engine.vectors.ids("alice"))
        assert len(ids) > len(from_chroma["ids"])
    finally:
        engine.close()
    # the command's close took the snapshot again, with the new vectors
    with np.load(snapshot_file(data_dir, "alice")) as saved:
        assert sorted(saved["ids"].tolist()) == ids


def test_no_snapshot_is_taken_while_a_writer_is_at_work(tmp_path, embedder):
    data_dir = tmp_path / "store"
    engine = command_forest(data_dir, embedder)
    engine.ingest_text("alice", "notes", topic_text("jazz"))
    with WriterLock(data_dir):  # another writer, holding the lock for its whole write
        engine.close()
    assert not snapshot_file(data_dir, "alice").exists()


@pytest.mark.slow
def test_a_damaged_snapshot_is_passed_over_for_chroma(snapshotted, embedder):
    data_dir, from_chroma = snapshotted
    snapshot_file(data_dir, "alice").write_bytes(b"PK\x03\x04 torn by a crash")
    engine = command_forest(data_dir, embedder)
    try:
        assert engine.context("alice", QUESTION, 200).to_dict() == from_chroma["context"]
    finally:
        engine.close()


@pytest.mark.slow
def test_a_snapshot_answers_only_the_embedder_that_made_it(snapshotted):
    data_dir, _ = snapshotted
    other = open_embedded(data_dir / "chroma", "another-embedder", 384, use_snapshots=True)
    try:
        with pytest.raises(ConfigError, match="were made by"):  # Chroma's answer, as without snapshots
            other.query("alice", np.ones(384, dtype=np.float32), 5)
    finally:
        other.close()


@pytest.mark.slow
def test_long_running_engines_neither_take_nor_read_snapshots(snapshotted, make_forest):
    data_dir, from_chroma = snapshotted
    engine = make_forest(data_dir=data_dir)  # as the workbench and `forest serve` make theirs
    assert engine.vectors._client is not None
    engine.ingest_text("bob", "notes", topic_text("volcanoes"))
    engine.close()
    assert snapshot_file(data_dir, "alice").exists() and not snapshot_file(data_dir, "bob").exists()
