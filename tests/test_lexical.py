"""BM25 full-text search (SQLite FTS5) and hybrid search on the real stores."""
import sqlite3

import pytest

from testkit.topics import topic_text
from forest import InvalidInput
from forest.storage.fulltext.fts5 import match_query
from forest.storage.sql.migrations import LATEST_VERSION

TERMS = ("## Models\n\nWe compare GPT-4 with ResNet-50 features and a Mixture-of-Experts layer; BERT-base "
         "is the baseline.\n\n## Volcanoes\n\n" + topic_text("volcanoes"))


def test_queries_are_phrase_quoted_and_never_fts5_syntax():
    assert match_query("GPT-4") == '"gpt-4"'
    assert match_query('the "NEAR" AND (x* OR y) -z') == '"near" OR "x" OR "y" OR "z"'
    assert match_query("what is the") is None
    assert match_query("火山喷发") == '"火山 山喷 喷发"'


def test_hyphenated_names_are_found_whole_and_by_parts(forest):
    forest.ingest_text("m", "terms", TERMS, chunk_size=300)
    for query in ("GPT-4", "gpt", "ResNet-50", "resnet", "Mixture-of-Experts", "experts", "BERT-base"):
        hits = forest.search("m", query, top_k=3, mode="bm25")
        assert hits and "GPT-4" in hits[0].node.content, query
        assert hits[0].relevance_score == 1.0
    assert forest.search("m", '"unbalanced quote AND (', mode="bm25") == []
    assert forest.search("m", "GPT-5", mode="bm25") == []  # "gpt 5" is not the phrase "gpt 4"


def test_chinese_two_character_words_are_searchable(forest):
    forest.ingest_text("zh", "笔记", "火山是地幔中的岩浆到达地表形成的。大多数火山位于板块边界。\n\n"
                                     "光合作用是植物利用光能的过程。叶绿体吸收红光和蓝光。", chunk_size=50)
    hits = forest.search("zh", "火山", mode="bm25")
    assert hits and all("火山" in h.node.content or "火山" in h.node.summary for h in hits)
    assert forest.search("zh", "叶绿体", mode="bm25")[0].node.content.count("叶绿体") >= 1


def test_hybrid_fuses_both_and_isolation_holds(forest):
    forest.ingest_text("alice", "terms", TERMS, chunk_size=300)
    forest.ingest_text("bob", "secret", "GPT-4 appears in Bob's private notes too.")
    hybrid = forest.search("alice", "GPT-4 baseline", top_k=4, mode="hybrid")
    assert hybrid and "GPT-4" in hybrid[0].node.content
    assert all(0 <= h.relevance_score <= 1 for h in hybrid)
    assert all(h.node.archive_id != forest.archives("bob")[0].id for h in hybrid)
    assert all("Bob" not in h.node.content for h in forest.search("alice", "GPT-4 private notes", mode="bm25"))
    with pytest.raises(InvalidInput, match="search mode"):
        forest.search("alice", "x", mode="fuzzy")


def test_deleted_archives_leave_the_index(forest):
    archive = forest.ingest_text("m", "terms", TERMS, chunk_size=300)
    forest.delete_archive("m", archive.id)
    assert forest.db.query("SELECT COUNT(*) FROM node_text")[0][0] == 0


def test_a_schema_3_store_is_indexed_when_it_upgrades(tmp_path, make_forest):
    old = make_forest(data_dir=tmp_path / "store")
    old.ingest_text("m", "terms", TERMS, chunk_size=300)
    old.close()
    raw = sqlite3.connect(tmp_path / "store" / "forest.sqlite3")
    # Back to schema 3: without the FTS index (4), research memory (5), personal memory (6) and
    # titles and merge history (7).
    raw.executescript("DROP TRIGGER node_text_insert; DROP TRIGGER node_text_delete; DROP TABLE node_text; "
                      "DROP TABLE workspace_items; DROP TABLE session_messages; DROP TABLE episodic_events; "
                      "DROP TABLE semantic_knowledge; DROP TABLE personal_memory_history; "
                      "DROP TABLE personal_triples; DROP TABLE personal_memories; DROP TABLE personal_write_queue; "
                      "DROP TABLE personal_tags; DROP TABLE archive_merges; "
                      "ALTER TABLE memory_nodes DROP COLUMN title; ALTER TABLE memory_nodes DROP COLUMN heading_path; "
                      "DROP TABLE pending_erasures; ALTER TABLE archives DROP COLUMN library; "
                      "ALTER TABLE archives DROP COLUMN cite_as; PRAGMA user_version = 3;")
    raw.close()
    upgraded = make_forest(data_dir=tmp_path / "store")
    assert upgraded.db.schema_version == LATEST_VERSION
    assert upgraded.search("m", "ResNet-50", mode="bm25")
