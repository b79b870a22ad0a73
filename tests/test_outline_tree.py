"""Trees that read like the paper: the outline as merge barriers, condensed n-ary levels, titles and
summaries on every summary node, text stored once, and `rebuild` over stored leaves."""
import json
import sqlite3

import numpy as np
import pytest

from testkit.topics import topic_text
from forest.tree.outline import document_lead, heading_paths
from forest.ingest.document import Heading
from forest.records import SEPARATOR
from forest.ingest import text_document
from test_build import assert_tree_invariants
from test_grow import assert_consistent

ABSTRACT = ("We study how plants, volcanoes and music can share one memory tree. "
            "Our method keeps each section together and summarizes it from its own text.")
PAPER = f"""# Three Topics in One Tree

## Abstract

{ABSTRACT}

## 1 Introduction

{topic_text("photosynthesis")}

## 2 Method

The method has two parts, described below.

### 2.1 Volcano data

{topic_text("volcanoes")}

### 2.2 Jazz data

{topic_text("jazz")}

## 3 Results

{topic_text("photosynthesis", "volcanoes")}
"""


def tree(forest, model_id, archive_id):
    nodes = forest.tree(model_id, archive_id)
    return nodes, {n.id: n for n in nodes}, [n for n in nodes if n.is_leaf]


def test_heading_paths_follow_the_outline_even_through_headings_without_text():
    headings = [Heading("1 Intro", level=1), Heading("2 Method", level=1), Heading("2.1 Data", level=2),
                Heading("2.1.1 Cleaning", level=3), Heading("2.2 Model", level=2), Heading("3 Results", level=1)]
    sections = [None, "1 Intro", "2.1 Data", "2.1.1 Cleaning", "2.2 Model", "2.2 Model", "3 Results"]
    assert heading_paths(sections, headings) == [
        (), ("1 Intro",), ("2 Method", "2.1 Data"), ("2 Method", "2.1 Data", "2.1.1 Cleaning"),
        ("2 Method", "2.2 Model"), ("2 Method", "2.2 Model"), ("3 Results",)]


def test_the_lead_is_the_abstract_else_the_first_real_prose():
    authors = "Ann Lee1, Bo Chen2\nUniversity of Somewhere1, Institute of Elsewhere2\nEmail: {ann,bo}@example.org"
    body = ("Named entity recognition is a task of natural language processing. It has been studied for "
            "many languages, and modern neural taggers reach strong results on most benchmark corpora.")
    inline = authors + "\nAbstract—In this work, we build datasets for Armenian. We also train baselines on them."
    assert document_lead([inline, body], [(), ("I Introduction",)]).startswith("In this work, we build datasets")
    assert document_lead([authors, body], [(), ("I Introduction",)]) == body   # author lines are not prose
    assert document_lead([authors, "Our abstract. It says a lot.", body],
                         [(), ("Abstract",), ("1 Intro",)]) == "Our abstract. It says a lot."


@pytest.mark.slow
def test_sections_become_titled_nodes_and_no_node_mixes_two_sections(forest):
    archive = forest.ingest_text("m", "paper", PAPER, chunk_size=300, threshold=0.0)
    assert archive.roots == 1
    nodes, by_id, leaves = tree(forest, "m", archive.id)
    assert_tree_invariants(forest, "m", archive.id, PAPER)
    titles = {n.title: n for n in nodes if not n.is_leaf}
    # every section of more than one leaf is a node titled by its heading path, over exactly its leaves
    for path in {tuple(leaf.headings) for leaf in leaves if leaf.headings}:
        held = sorted(leaf.leaf_index for leaf in leaves if tuple(leaf.headings[: len(path)]) == path)
        if len(held) > 1:
            node = titles[" › ".join(path)]
            assert list(range(node.first_leaf, node.last_leaf + 1)) == held
    method = titles["2 Method"]
    assert {c.title for c in forest.children("m", method.id) if not c.is_leaf} == {
        "2 Method › 2.1 Volcano data", "2 Method › 2.2 Jazz data"}
    # no summary node below the section level mixes leaves of two sections
    for node in nodes:
        if not node.is_leaf and node.title not in {" › ".join(leaf.headings) for leaf in leaves} \
                and node.parent_id is not None:
            under = {tuple(leaf.headings) for leaf in leaves if node.first_leaf <= leaf.leaf_index <= node.last_leaf}
            assert len(under) == 1, f"{node.title} mixes {under}"


@pytest.mark.slow
def test_the_root_reads_the_title_and_the_abstract_and_summaries_are_not_copied_up(forest):
    archive = forest.ingest_text("m", "paper", PAPER, chunk_size=300, threshold=0.0)
    nodes, by_id, _ = tree(forest, "m", archive.id)
    [root] = [n for n in nodes if n.parent_id is None]
    assert root.title == "Three Topics in One Tree"
    assert root.summary == ABSTRACT
    summaries = [n.summary for n in nodes if not n.is_leaf]
    assert len(set(summaries)) == len(summaries)     # no summary repeated up the tree
    for node in nodes:
        if not node.is_leaf and node.parent_id is not None:
            assert node.summary != by_id[node.parent_id].summary
    results = next(n for n in nodes if n.title == "3 Results")
    assert 150 < len(results.summary) <= 400     # several sentences for a bigger subtree


@pytest.mark.slow
def test_a_chinese_paper_keeps_its_language_in_titles_and_summaries(forest):
    text = ("# 植物与火山\n\n## 摘要\n\n本文研究光合作用与火山喷发。我们按章节组织记忆树。\n\n## 光合作用\n\n"
            + "光合作用是植物利用光能把二氧化碳和水转化为有机物并释放氧气的过程。叶绿体中的叶绿素吸收红光和蓝光。" * 6
            + "\n\n## 火山\n\n" + "火山是地幔中的岩浆到达地表形成的。大多数火山位于板块边界，例如环太平洋火山带。" * 6)
    archive = forest.ingest_text("zh", "中文", text, chunk_size=120)
    nodes, _, _ = tree(forest, "zh", archive.id)
    [root] = [n for n in nodes if n.parent_id is None]
    assert root.title == "植物与火山" and root.summary.startswith("本文研究光合作用与火山喷发")
    for node in nodes:
        if not node.is_leaf:
            assert node.title and sum("\u4e00" <= c <= "\u9fff" for c in node.title) >= len(node.title) * 0.5
            assert sum("\u4e00" <= c <= "\u9fff" for c in node.summary) > len(node.summary) * 0.5


@pytest.mark.slow
def test_a_document_without_headings_keeps_the_similarity_rule(forest):
    text = topic_text("photosynthesis", "volcanoes", "jazz") + "\n\n" + topic_text("photosynthesis", "jazz")
    loose = forest.ingest_text("m", "loose", text, chunk_size=200, threshold=0.0)
    strict = forest.ingest_text("m", "strict", text, chunk_size=200, threshold=0.99, on_duplicate="keep")
    assert loose.roots == 1 and strict.roots == strict.leaves     # nothing clears 0.99
    assert_tree_invariants(forest, "m", loose.id, text)
    nodes, _, leaves = tree(forest, "m", loose.id)
    assert loose.depth <= 3 and len(leaves) > 10
    assert all(n.title for n in nodes if not n.is_leaf)


@pytest.mark.slow
def test_explore_returns_titles_and_summaries_not_the_subtree_text(forest):
    archive = forest.ingest_text("m", "paper", PAPER, chunk_size=300, threshold=0.0)
    nodes, _, _ = tree(forest, "m", archive.id)
    [root] = [n for n in nodes if n.parent_id is None]
    from forest.serving.tools import ForestTools

    tools = ForestTools(forest)
    explored = tools.explore_memory_node("m", root.id, "volcano eruptions", threshold=0.0)["children"]
    for child in explored:
        if child["node_type"] == "SUMMARY_NODE":
            assert "content" not in child and child["title"] and child["summary"] and child["leaf_count"] >= 2
        else:
            assert child["content"]
    assert len(json.dumps(explored)) < 4000
    full = tools.get_memory_node("m", root.id, full_text=True)["node"]
    assert full["content"] == SEPARATOR.join(n.content for n in sorted(
        (n for n in nodes if n.is_leaf), key=lambda n: n.leaf_index))
    assert "content" not in tools.get_memory_node("m", root.id)["node"]


@pytest.mark.slow
def test_rebuild_replans_over_stored_leaves_without_embedding_them(forest, embedder, monkeypatch):
    archive = forest.ingest_text("m", "paper", PAPER, chunk_size=300, threshold=0.0)
    nodes, _, leaves = tree(forest, "m", archive.id)
    leaf_vectors = forest.vectors.get_vectors("m", [n.id for n in leaves])
    old_summaries = {n.id for n in nodes if not n.is_leaf}
    embedded = []
    original = embedder._embed
    monkeypatch.setattr(embedder, "_embed", lambda texts, q: embedded.extend(texts) or original(texts, q))

    forest.rebuild_archive("m", archive.id)
    after, _, after_leaves = tree(forest, "m", archive.id)
    assert {n.id: n.content for n in after_leaves} == {n.id: n.content for n in leaves}
    stored = forest.vectors.get_vectors("m", [n.id for n in after])
    assert all(np.array_equal(stored[i], v) for i, v in leaf_vectors.items())     # leaf vectors untouched
    assert not {n.content for n in leaves} & set(embedded)                          # no leaf embedded again
    assert not old_summaries & {n.id for n in after}                                # summary nodes replaced
    assert set(forest.vectors.ids("m")) == {n.id for n in after}                    # old vectors gone
    assert_tree_invariants(forest, "m", archive.id, PAPER)
    assert_consistent(forest, "m", archive.id)


@pytest.mark.slow
def test_a_store_of_binary_trees_migrates_and_rebuilds(tmp_path, make_forest):
    """A schema-6 store (what migrations 7-11 add taken away: summary nodes holding their subtree's
    text, no titles, no merge history) upgrades in place, and `forest rebuild` gives its archives the outline tree."""
    old = make_forest(data_dir=tmp_path / "store")
    archive = old.ingest_text("m", "paper", PAPER, chunk_size=300, threshold=0.0)
    leaf_ids = {n.id for n in old.tree("m", archive.id) if n.is_leaf}
    old.close()
    raw = sqlite3.connect(tmp_path / "store" / "forest.sqlite3")
    raw.executescript("""
        UPDATE memory_nodes SET content = (SELECT group_concat(l.content, char(10) || '---' || char(10))
            FROM (SELECT content FROM memory_nodes l WHERE l.archive_id = memory_nodes.archive_id
                  AND l.node_type = 'LEAF_CHUNK' AND l.leaf_index BETWEEN memory_nodes.first_leaf
                  AND memory_nodes.last_leaf ORDER BY l.leaf_index) l)
            WHERE node_type = 'SUMMARY_NODE';
        DROP TABLE archive_merges; DROP TRIGGER node_text_insert;
        CREATE TRIGGER node_text_insert AFTER INSERT ON memory_nodes BEGIN
            INSERT INTO node_text (rowid, body) VALUES (new.id, forest_index_text(new.node_type, new.summary, new.content));
        END;
        ALTER TABLE memory_nodes DROP COLUMN title; ALTER TABLE memory_nodes DROP COLUMN heading_path;
        DROP TABLE personal_memory_text; DROP TABLE personal_triple_sources;
        DROP INDEX idx_write_queue_user_time; ALTER TABLE personal_memories DROP COLUMN context;
        ALTER TABLE personal_write_queue DROP COLUMN embedding; ALTER TABLE personal_write_queue DROP COLUMN embedder;
        ALTER TABLE personal_write_queue DROP COLUMN context;
        ALTER TABLE personal_memories DROP COLUMN embedder;
        ALTER TABLE personal_write_queue DROP COLUMN claim; ALTER TABLE personal_write_queue DROP COLUMN lease_until;
        ALTER TABLE episodic_events DROP COLUMN embedder;
        ALTER TABLE personal_memories DROP COLUMN context_id; DROP TABLE pending_erasures;
        ALTER TABLE archives DROP COLUMN library; ALTER TABLE archives DROP COLUMN cite_as;
        DROP INDEX idx_triples_user_open;
        ALTER TABLE personal_triples DROP COLUMN valid_from; ALTER TABLE personal_triples DROP COLUMN valid_to;
        PRAGMA user_version = 6;""")
    raw.close()
    upgraded = make_forest(data_dir=tmp_path / "store")
    nodes = upgraded.tree("m", archive.id)
    assert all(n.content == "" for n in nodes if not n.is_leaf)             # text stored once
    assert all(n.headings == [n.section] for n in nodes if n.is_leaf and n.section)
    history = upgraded.merge_history("m", archive.id)
    assert {m.node_id for m in history} == {n.id for n in nodes if not n.is_leaf}
    upgraded.rebuild_archive("m", archive.id)
    rebuilt = upgraded.tree("m", archive.id)
    assert {n.id for n in rebuilt if n.is_leaf} == leaf_ids
    assert all(n.title for n in rebuilt if not n.is_leaf)
    assert upgraded.doctor().healthy


@pytest.mark.slow
def test_append_and_export_keep_the_outline_and_the_history(forest, make_forest, tmp_path):
    archive = forest.ingest_text("m", "paper", PAPER, chunk_size=300, threshold=0.0)
    second = "# Second Paper\n\n## Abstract\n\nA short abstract about lava and bebop.\n\n## Lava\n\n" + \
        topic_text("volcanoes") + "\n\n## Bebop\n\n" + topic_text("jazz")
    forest.append_document("m", archive.id, text_document("second", second, None), )
    nodes = assert_consistent(forest, "m", archive.id)
    titles = {n.title for n in nodes.values() if not n.is_leaf}
    assert {"Three Topics in One Tree", "Second Paper", "Lava", "Bebop", "2 Method › 2.1 Volcano data"} <= titles
    history = forest.merge_history("m", archive.id)
    assert [m.merge_order for m in history] == list(range(1, len(history) + 1))

    exported = forest.export_archive("m", archive.id)
    other = make_forest(data_dir=tmp_path / "other")
    copy = other.import_archive("m", exported)
    copied = other.tree("m", copy.id)
    assert sorted(n.title or "" for n in copied) == sorted(n.title or "" for n in nodes.values())
    assert len(other.merge_history("m", copy.id)) == len(history)


def test_a_real_fifteen_page_pdf_reads_like_its_table_of_contents(aqa_forest):
    forest, archive = aqa_forest
    nodes, _, leaves = tree(forest, "m", archive.id)
    assert archive.roots == 1 and archive.depth <= 5
    summaries = [n for n in nodes if not n.is_leaf]
    assert all(n.title and n.page_start and n.page_end for n in summaries)
    titles = {n.title for n in summaries}
    assert "5 Experiments › 5.5 Results" in titles and "5 Experiments" in titles
    [root] = [n for n in nodes if n.parent_id is None]
    assert root.title.startswith("Ask the Right Questions") and root.summary.startswith("We frame Question Answering")
    document_chars = sum(len(leaf.content) for leaf in leaves)
    assert sum(len(n.content) for n in nodes) == document_chars     # summary nodes store no text
    from forest.serving.tools import ForestTools

    explored = ForestTools(forest).explore_memory_node("m", root.id, "SearchQA", threshold=0.0)
    assert len(json.dumps(explored)) < 12_000   # was 56 KB: every child's subtree text
