"""Growing and reshaping forests on the real stores: append a document, join archives."""
import contextlib

import numpy as np
import pytest

import pdf_factory
from testkit.topics import topic_text
from forest import ForestError, InvalidInput, NotFound
from forest.records import SUMMARY
from forest.storage.vectors.chroma import collection_name
from forest.ingest import text_document


def assert_consistent(forest, model_id, archive_id):
    """Every path and depth follows parent_id, leaves are numbered 0..n-1 in one row, every node
    has a vector whose metadata agrees with SQLite, and doctor finds nothing."""
    nodes = {n.id: n for n in forest.tree(model_id, archive_id)}
    for n in nodes.values():
        if n.parent_id is None:
            assert (n.path, n.depth) == (f"{n.id}/", 0)
        else:
            parent = nodes[n.parent_id]
            assert (n.path, n.depth) == (f"{parent.path}{n.id}/", parent.depth + 1)
            assert parent.first_leaf <= n.first_leaf <= n.last_leaf <= parent.last_leaf
    leaves = sorted(n.leaf_index for n in nodes.values() if n.is_leaf)
    assert leaves == list(range(len(leaves)))
    orders = sorted(n.merge_order for n in nodes.values() if n.node_type == SUMMARY and n.merge_order)
    assert orders == sorted(set(orders))
    # the merge history: numbered 1..M, each step two adjacent runs of leaves, and every summary
    # node the step that made it
    history = forest.merge_history(model_id, archive_id)
    assert [m.merge_order for m in history] == list(range(1, len(history) + 1))
    assert all(m.first_leaf < m.split_leaf <= m.last_leaf for m in history)
    made = {m.node_id: m for m in history if m.node_id is not None}
    assert set(made) == {n.id for n in nodes.values() if n.node_type == SUMMARY}
    for node_id, step in made.items():
        node = nodes[node_id]
        assert (step.merge_order, step.first_leaf, step.last_leaf) == (node.merge_order, node.first_leaf, node.last_leaf)
    collection = forest.vectors._client.get_collection(collection_name(model_id))
    stored = collection.get(ids=[str(i) for i in nodes], include=["metadatas"])
    assert len(stored["ids"]) == len(nodes)
    for node_id, meta in zip(stored["ids"], stored["metadatas"]):
        node = nodes[int(node_id)]
        assert (meta["archive_id"], meta["depth"], meta["node_type"]) == (archive_id, node.depth, node.node_type)
    assert forest.doctor().healthy
    return nodes


@pytest.mark.slow
def test_append_keeps_every_node_and_continues_merging(forest):
    archive = forest.ingest_text("m", "notes", topic_text("volcanoes"), threshold=0.0)
    before = {n.id: n for n in forest.tree("m", archive.id)}
    [old_root] = [n for n in before.values() if n.parent_id is None]
    events = []
    grown = forest.append_document("m", archive.id, text_document("more", "## Lava\n\n" + topic_text("volcanoes", "jazz")),
                                   progress=events.append)
    assert grown.id == archive.id and grown.leaves > archive.leaves and grown.roots == 1  # threshold 0: one tree
    after = assert_consistent(forest, "m", archive.id)
    for node_id, node in before.items():  # same ids, same content, same leaf numbers; only paths grow
        assert after[node_id].content == node.content and after[node_id].leaf_index == node.leaf_index
        assert after[node_id].path.endswith(node.path)
    assert after[old_root.id].parent_id is not None
    new_leaves = sorted((n for n in after.values() if n.is_leaf and n.id not in before), key=lambda n: n.leaf_index)
    assert new_leaves[0].leaf_index == archive.leaves and new_leaves[0].section == "Lava"
    recorded = grown.settings["documents"][-1]
    assert recorded == {"name": "more", "title": None, "source": None, "pages": None,
                        "first_leaf": archive.leaves, "last_leaf": grown.leaves - 1, "sha256": recorded["sha256"],
                        "leaf_context": True}
    assert len(recorded["sha256"]) == 64 and recorded["sha256"] != grown.settings["documents"][0]["sha256"]
    assert {"summarize", "embed", "merge", "store"} <= {e.stage for e in events}
    hit = next(h for h in forest.search("m", "Charlie Parker bebop", top_k=5) if h.node.is_leaf)
    assert hit.node.id in {n.id for n in new_leaves}


@pytest.mark.slow
def test_append_reuses_stored_vectors_and_embeds_only_new_text(forest, embedder, monkeypatch):
    archive = forest.ingest_text("m", "notes", topic_text("photosynthesis"))
    old_leaves = {n.content for n in forest.tree("m", archive.id) if n.is_leaf}
    embedded = []
    original = embedder._embed
    monkeypatch.setattr(embedder, "_embed", lambda texts, q: embedded.extend(texts) or original(texts, q))
    forest.append_document("m", archive.id, text_document("jazz", topic_text("jazz")))
    assert embedded and not old_leaves & set(embedded)


def test_append_keeps_unrelated_roots_apart_and_old_ones_untouched(forest):
    archive = forest.ingest_text("m", "notes", topic_text("jazz"), threshold=0.99)
    before = {n.id: (n.path, n.depth) for n in forest.tree("m", archive.id)}
    forest.append_document("m", archive.id, text_document("more", topic_text("photosynthesis")))  # 0.99 is kept
    after = assert_consistent(forest, "m", archive.id)
    assert all((after[i].path, after[i].depth) == place for i, place in before.items())  # nothing cleared 0.99


@pytest.mark.slow
def test_a_failed_append_changes_nothing(forest, embedder, monkeypatch, tmp_path):
    archive = forest.ingest_text("m", "notes", topic_text("volcanoes"))
    before = [(n.id, n.path, n.parent_id) for n in forest.tree("m", archive.id)]
    vectors_before = sorted(forest.vectors.ids("m"))
    (tmp_path / "empty.pdf").write_bytes(b"")
    with pytest.raises(InvalidInput, match="empty"):
        forest.append_file(tmp_path / "empty.pdf", "m", archive.id)
    monkeypatch.setattr(forest.store, "graft", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("disk full")))
    with pytest.raises(RuntimeError, match="disk full"):
        forest.append_document("m", archive.id, text_document("jazz", topic_text("jazz")))
    assert [(n.id, n.path, n.parent_id) for n in forest.tree("m", archive.id)] == before
    assert sorted(forest.vectors.ids("m")) == vectors_before
    with pytest.raises(NotFound):
        forest.append_document("someone-else", archive.id, text_document("jazz", topic_text("jazz")))


@pytest.mark.slow
def test_appending_a_pdf_cites_its_pages(forest, tmp_path):
    archive = forest.ingest_text("m", "notes", topic_text("volcanoes"))
    forest.append_file(pdf_factory.two_column_paper(tmp_path / "pools.pdf"), "m", archive.id)
    nodes = forest.tree("m", archive.id)
    leaf = next(n for n in nodes if n.is_leaf and "Anemones" in n.content)
    assert leaf.citation == "p. 2, §3 Results"
    # A node over both documents claims no page range (page 2 of one file is not page 2 of the other).
    for node in nodes:
        leaves = [n for n in nodes if n.is_leaf and node.first_leaf <= n.leaf_index <= node.last_leaf]
        if {n.page_start is None for n in leaves} == {True, False}:
            assert (node.page_start, node.page_end, node.section) == (None, None, None)


@pytest.mark.slow
def test_similar_archives_and_join_under_a_super_root(forest):
    volcano = forest.ingest_text("m", "volcano notes", topic_text("volcanoes"))
    more_volcano = forest.ingest_text("m", "more volcanoes", topic_text("volcanoes"), on_duplicate="keep")
    jazz = forest.ingest_text("m", "jazz notes", topic_text("jazz"))
    forest.ingest_text("other", "private", topic_text("volcanoes"))
    pairs = forest.similar_archives("m")
    assert len(pairs) == 3 and pairs[0].similarity >= pairs[-1].similarity
    assert {pairs[0].left, pairs[0].right} == {volcano.id, more_volcano.id}
    assert forest.similar_archives("m", threshold=1.0) == []

    before = {n.id: n for a in (volcano, jazz) for n in forest.tree("m", a.id)}
    joined = forest.join_archives("m", [volcano.id, jazz.id], name="earth and music")
    assert (joined.id, joined.name, joined.roots) == (volcano.id, "earth and music", 1)
    assert joined.leaves == volcano.leaves + jazz.leaves
    assert [a.id for a in forest.archives("m")] == [volcano.id, more_volcano.id]
    nodes = assert_consistent(forest, "m", joined.id)
    [root] = [n for n in nodes.values() if n.parent_id is None]
    assert root.id not in before and sorted(c.id for c in forest.children("m", root.id)) == sorted(
        n.id for n in before.values() if n.parent_id is None)
    assert set(before) < set(nodes)
    jazz_leaf = next(n for n in nodes.values() if n.is_leaf and "Parker" in n.content)
    assert jazz_leaf.leaf_index >= volcano.leaves
    assert [d["name"] for d in joined.settings["documents"]] == ["volcano notes", "jazz notes"]
    rep = forest.retrieve("m", "Charlie Parker bebop and lava flows", top_k=8)
    assert any(r.node.archive_id == joined.id for r in rep)


def test_join_refuses_other_model_ids_and_single_archives(forest):
    mine = forest.ingest_text("m", "mine", topic_text("jazz"))
    theirs = forest.ingest_text("other", "theirs", topic_text("jazz"))
    with pytest.raises(NotFound):
        forest.join_archives("m", [mine.id, theirs.id])
    with pytest.raises(InvalidInput, match="two different archives"):
        forest.join_archives("m", [mine.id, mine.id])
    assert forest.archive("other", theirs.id).leaves == theirs.leaves
    stored = forest.vectors.get_vectors("m", [n.id for n in forest.tree("m", mine.id)])
    assert all(abs(np.linalg.norm(v) - 1) < 1e-3 for v in stored.values())


@pytest.mark.slow
def test_an_append_from_another_process_in_between_is_detected(forest, make_forest):
    archive = forest.ingest_text("m", "notes", topic_text("volcanoes"))
    other = make_forest(data_dir=forest.settings.data_dir)  # a second engine on the same store
    # Writers take turns through the data directory's writer lock, so this interleaving needs a
    # writer that skips it (an older forest): the check at graft time is the second line of defence.
    other._build_lock = contextlib.nullcontext()
    real_graft = forest.store.graft

    def graft_after_the_other_one(*args, **kwargs):
        other.append_document("m", archive.id, text_document("theirs", topic_text("jazz")))
        return real_graft(*args, **kwargs)

    forest.store.graft = graft_after_the_other_one
    with pytest.raises(ForestError, match="changed while"):
        forest.append_document("m", archive.id, text_document("mine", topic_text("photosynthesis")))
    forest.store.graft = real_graft
    nodes = assert_consistent(forest, "m", archive.id)
    grown = forest.archive("m", archive.id)
    assert grown.settings["documents"][-1]["name"] == "theirs"
    assert grown.settings["documents"][-1]["first_leaf"] == archive.leaves
    assert not any("chlorophyll" in n.content for n in nodes.values())


def test_writes_that_summarize_nothing_never_make_the_summarizer(forest, make_forest):
    """Export, delete and search on an engine that has built nothing: the summarizer (and the LLM
    behind it, which a broken configuration would fail to make) is never made."""
    archive = forest.ingest_text("m", "notes", topic_text("volcanoes"))
    other = make_forest(data_dir=forest.settings.data_dir)
    assert other.export_archive("m", archive.id)["archive"]["name"] == "notes"
    assert other.search("m", "volcanoes", mode=None)   # None: the search_mode setting
    other.delete_archive("m", archive.id)
    assert "summarizer" not in other.__dict__ and "llm" not in other.__dict__
