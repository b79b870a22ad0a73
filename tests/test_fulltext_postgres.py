"""Full-text search on PostgreSQL (forest.storage.fulltext_postgres) against SQLite FTS5 on the same
rows: with one tenant, the same hits in the same order with the same scores (QASPER leaves and
questions for node text; LoCoMo turns and questions for personal memory); with several tenants,
each tenant's hits are those of a store holding its rows alone; hostile queries match literally;
deleted rows leave the results."""
from __future__ import annotations

import math
import random

import numpy as np
import psycopg
import pytest

from eval_corpus import locomo_conversation, locomo_questions, qasper_papers, qasper_questions
from forest.personal.memory_store import PersonalStore, SaidBefore
from forest.records import LEAF, SUMMARY
from forest.storage import fulltext, fulltext_postgres as pg_text
from forest.storage.db import Database
from forest.text import tokenize

# What fulltext_postgres reads of the tables the database layer makes.
BASE_SCHEMA = """
CREATE TABLE archives (id BIGINT PRIMARY KEY, model_id TEXT NOT NULL, status TEXT NOT NULL);
CREATE TABLE memory_nodes (id BIGINT PRIMARY KEY, archive_id BIGINT NOT NULL REFERENCES archives (id) ON DELETE CASCADE);
CREATE TABLE personal_memories (id BIGINT PRIMARY KEY, user_id TEXT NOT NULL, agent_id TEXT, deleted_at DOUBLE PRECISION);
"""
LIMITS = (1, 8, 50)


@pytest.fixture
def pg(postgres_url):
    with psycopg.connect(postgres_url) as conn:
        with conn.transaction():
            conn.execute(BASE_SCHEMA)
            conn.execute(pg_text.SCHEMA)
        yield conn


class Stores:
    """The same archives in a SQLite store (FTS5 through migrations 4 and 7) and in PostgreSQL."""

    def __init__(self, sqlite: Database, pg) -> None:
        self.sqlite, self.pg = sqlite, pg
        self.next_node = 1

    def add_archive(self, archive_id: int, model_id: str, nodes: list[tuple[str, str | None, str, str]],
                    status: str = "ready", sqlite: bool = True) -> list[int]:
        """nodes: (node type, title, summary, content); their ids."""
        ids = list(range(self.next_node, self.next_node + len(nodes)))
        self.next_node += len(nodes)
        if sqlite:
            with self.sqlite.transaction() as conn:
                conn.execute("INSERT INTO archives (id, model_id, name, status) VALUES (?, ?, ?, ?)",
                             (archive_id, model_id, f"a{archive_id}", status))
                conn.executemany("INSERT INTO memory_nodes (id, archive_id, path, depth, node_type, content, summary, "
                                 "title) VALUES (?, ?, ?, 0, ?, ?, ?, ?)",
                                 [(i, archive_id, f"{i}/", t, c, s, title) for i, (t, title, s, c) in zip(ids, nodes)])
        with self.pg.transaction():
            self.pg.execute("INSERT INTO archives (id, model_id, status) VALUES (%s, %s, %s)", (archive_id, model_id, status))
            self.pg.cursor().executemany("INSERT INTO memory_nodes (id, archive_id) VALUES (%s, %s)",
                                         [(i, archive_id) for i in ids])
            # What migration 7's trigger gives FTS5.
            pg_text.write_node_text(self.pg, [
                (i, model_id, fulltext.index_text(t, (f"{title}\n" if title is not None else "") + s, c))
                for i, (t, title, s, c) in zip(ids, nodes)])
        return ids

    def sqlite_hits(self, model_id: str, phrases: list[str], limit: int, archive_ids=None) -> list[tuple[int, float]]:
        if not phrases:  # its callers ask only with phrases (FTS5 refuses an empty MATCH)
            return []
        with self.sqlite.transaction() as conn:
            return [tuple(r) for r in fulltext.top_hits(conn, model_id, phrases, limit, archive_ids)]

    def pg_hits(self, model_id: str, phrases: list[str], limit: int, archive_ids=None) -> list[tuple[int, float]]:
        with self.pg.transaction():
            self.pg.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            return pg_text.top_hits(self.pg, model_id, phrases, limit, archive_ids)


@pytest.fixture
def stores(tmp_path, pg):
    return Stores(Database(tmp_path / "forest.db"), pg)


def paper_nodes(leaves: tuple[str, ...], paper_id: str) -> list[tuple[str, str | None, str, str]]:
    """The paper's leaves, and a summary node over them with a title (a title is indexed first)."""
    nodes = [(LEAF, None, "", leaf) for leaf in leaves]
    return nodes + [(SUMMARY, f"Paper {paper_id}", " ".join(leaves[:2])[:300], "")]


def assert_same(want: list[tuple[int, float]], got: list[tuple[int, float]], what: str) -> None:
    assert [i for i, _ in got] == [i for i, _ in want], what
    for (_, a), (_, b) in zip(want, got):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=0), (what, a, b)


def queries(papers, count: int, seed: int) -> list[str]:
    """QASPER's questions, and word sets drawn from the papers: rare words, common ones, both."""
    rng = random.Random(seed)
    words = sorted({w for _, leaves in papers for leaf in leaves for w in tokenize(leaf)})
    made = [" ".join(rng.sample(words, rng.randint(1, 4))) for _ in range(count)]
    common = ["model", "data", "results", "learning", "language", "table", "performance"]
    made += [" ".join(rng.sample(common, 2) + rng.sample(words, rng.randint(0, 2))) for _ in range(count)]
    return list(rng.sample(qasper_questions(), count)) + made


def test_one_tenant_ranks_as_fts5(stores, monkeypatch):
    papers = qasper_papers()[:25]
    for archive_id, (paper_id, leaves) in enumerate(papers, 1):
        stores.add_archive(archive_id, "m", paper_nodes(leaves, paper_id))
    stores.add_archive(99, "m", paper_nodes(qasper_papers()[30][1], "building"), status="building")
    archives = list(range(1, len(papers) + 1))
    rng = random.Random(3)
    checked = 0
    for rare_rows in (pg_text.RARE_ROWS, 30):  # the pruned ranking (MaxScore) at two depths
        monkeypatch.setattr(pg_text, "RARE_ROWS", rare_rows)
        for query in queries(papers, 60, seed=rare_rows):
            phrases = fulltext.query_phrases(query)
            for limit in LIMITS:
                assert_same(stores.sqlite_hits("m", phrases, limit), stores.pg_hits("m", phrases, limit), query)
                chosen = rng.sample(archives, rng.randint(1, 4))
                assert_same(stores.sqlite_hits("m", phrases, limit, chosen),
                            stores.pg_hits("m", phrases, limit, chosen), f"{query} in {chosen}")
                checked += 1
    assert checked == 2 * 180 * len(LIMITS)
    assert stores.pg_hits("m", ["model"], 5, [99]) == [] and stores.pg_hits("other", ["model"], 5) == []


def test_each_tenant_scores_as_if_alone(tmp_path, pg):
    """Two model_ids in PostgreSQL, each against a SQLite store of its own rows: another tenant's
    rows (some of them the same papers) change nothing in a tenant's scores."""
    papers = qasper_papers()
    chosen = {"a": papers[:12], "b": papers[8:30]}
    alone: dict[str, Stores] = {}
    next_node, archive_id, before = 1, 0, {}
    for model_id, mine in chosen.items():
        store = alone[model_id] = Stores(Database(tmp_path / model_id / "forest.db"), pg)
        store.next_node = next_node  # node ids are unique in the one PostgreSQL
        for paper_id, leaves in mine:
            archive_id += 1
            store.add_archive(archive_id, model_id, paper_nodes(leaves, paper_id))
        next_node = store.next_node
        if model_id == "a":
            before = {q: store.pg_hits("a", fulltext.query_phrases(q), 8) for q in queries(mine, 20, seed=1)}
    for query, hits in before.items():
        assert alone["a"].pg_hits("a", fulltext.query_phrases(query), 8) == hits, query
    for model_id, store in alone.items():
        for query in queries(chosen[model_id], 40, seed=2):
            phrases = fulltext.query_phrases(query)
            for limit in LIMITS:
                assert_same(store.sqlite_hits(model_id, phrases, limit), store.pg_hits(model_id, phrases, limit),
                            f"{model_id}: {query}")
