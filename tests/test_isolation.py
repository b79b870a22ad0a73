"""A model_id never sees another's data: every read path answers 'not found' or nothing."""
import pytest

from testkit.topics import topic_text
from forest import NotFound
from forest.storage.vectors.chroma import collection_name


@pytest.mark.slow
def test_every_read_path_is_isolated_by_model_id(forest):
    mine = forest.ingest_text("alice", "volcano notes", topic_text("volcanoes"))
    theirs = forest.ingest_text("bob", "jazz notes", topic_text("jazz"))
    bob_nodes = forest.tree("bob", theirs.id)
    bob_ids = [n.id for n in bob_nodes]
    bob_leaf = next(n for n in bob_nodes if n.node_type == "LEAF_CHUNK")
    bob_parent = next(n for n in bob_nodes if n.node_type == "SUMMARY_NODE")

    assert [a.id for a in forest.archives("alice")] == [mine.id]
    with pytest.raises(NotFound):
        forest.archive("alice", theirs.id)
    with pytest.raises(NotFound):
        forest.tree("alice", theirs.id)
    for node_id in (bob_leaf.id, bob_parent.id):
        with pytest.raises(NotFound):
            forest.node("alice", node_id)
        with pytest.raises(NotFound):
            forest.children("alice", node_id)
        with pytest.raises(NotFound):
            forest.explore("alice", node_id, "jazz")
    with pytest.raises(NotFound):
        forest.delete_archive("alice", theirs.id)
    assert forest.tree("bob", theirs.id)  # the refused delete removed nothing

    # Search for Bob's exact words from Alice's side finds only Alice's nodes.
    for hits in (forest.search("alice", "Miles Davis Kind of Blue bebop", top_k=20),
                 [r.node for r in forest.retrieve("alice", "Miles Davis Kind of Blue bebop", top_k=20)]):
        nodes = [getattr(h, "node", h) for h in hits]
        assert nodes and all(n.archive_id == mine.id and n.id not in bob_ids for n in nodes)
    context = forest.context("alice", "Charlie Parker bebop", budget_tokens=5000)
    assert context.leaves and all(l.node.archive_id == mine.id for l in context.leaves)

    # The vectors live in separate collections, one per model_id.
    assert collection_name("alice") != collection_name("bob")
    assert set(forest.vectors.ids("alice")).isdisjoint(bob_ids)
    assert set(forest.vectors.ids("bob")) == set(bob_ids)
    assert forest.model_ids() == ["alice", "bob"]


def test_delete_removes_the_archive_from_both_stores(forest):
    keep = forest.ingest_text("m", "keep", topic_text("jazz"))
    gone = forest.ingest_text("m", "gone", topic_text("volcanoes"))
    gone_ids = [n.id for n in forest.tree("m", gone.id)]
    forest.delete_archive("m", gone.id)
    assert [a.id for a in forest.archives("m")] == [keep.id]
    assert forest.db.query("SELECT COUNT(*) FROM memory_nodes WHERE archive_id = ?", (gone.id,))[0][0] == 0
    assert set(forest.vectors.ids("m")).isdisjoint(gone_ids)
    with pytest.raises(NotFound):
        forest.node("m", gone_ids[0])
    assert forest.doctor().healthy
