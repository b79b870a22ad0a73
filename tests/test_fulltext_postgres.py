"""Full-text search on PostgreSQL (forest.storage.fulltext.postgres) against SQLite FTS5 on the same
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
from forest.storage.fulltext import fts5 as fulltext, postgres as pg_text
from forest.storage.sql.migrations import FULLTEXT_POSTGRES_V10  # the full-text tables as the migrations make them
from forest.storage.sql.sqlite import SQLiteDatabase
from forest.text import tokenize

# What fulltext.postgres reads of the tables the database layer makes.
BASE_SCHEMA = """
CREATE TABLE archives (id BIGINT PRIMARY KEY, model_id TEXT NOT NULL, status TEXT NOT NULL);
CREATE TABLE memory_nodes (id BIGINT PRIMARY KEY,
                           archive_id BIGINT NOT NULL REFERENCES archives (id) ON DELETE CASCADE);
CREATE TABLE personal_memories (id BIGINT PRIMARY KEY, user_id TEXT NOT NULL, agent_id TEXT,
                                deleted_at DOUBLE PRECISION);
"""
LIMITS = (1, 8, 50)


@pytest.fixture
def pg(postgres_url):
    # Each search runs in a transaction of its own, reading one snapshot.
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        with conn.transaction():
            conn.execute(BASE_SCHEMA)
            conn.execute(FULLTEXT_POSTGRES_V10)
        yield conn


class Stores:
    """The same archives in a SQLite store (FTS5 through migrations 4 and 7) and in PostgreSQL."""

    def __init__(self, sqlite: SQLiteDatabase, pg) -> None:
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
            self.pg.execute("INSERT INTO archives (id, model_id, status) VALUES (%s, %s, %s)",
                            (archive_id, model_id, status))
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
            return pg_text.top_hits(self.pg, model_id, phrases, limit, archive_ids)


@pytest.fixture
def stores(tmp_path, pg):
    return Stores(SQLiteDatabase(tmp_path / "forest.db"), pg)


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


@pytest.mark.slow
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


@pytest.mark.slow
def test_each_tenant_scores_as_if_alone(tmp_path, pg):
    """Two model_ids in PostgreSQL, each against a SQLite store of its own rows: another tenant's
    rows (some of them the same papers) change nothing in a tenant's scores."""
    papers = qasper_papers()
    chosen = {"a": papers[:12], "b": papers[8:30]}
    alone: dict[str, Stores] = {}
    next_node, archive_id, before = 1, 0, {}
    for model_id, mine in chosen.items():
        store = alone[model_id] = Stores(SQLiteDatabase(tmp_path / model_id / "forest.db"), pg)
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


class Memories:
    """The same memories in a SQLite store (PersonalStore) and in PostgreSQL."""

    def __init__(self, sqlite: SQLiteDatabase, pg) -> None:
        self.sqlite, self.pg, self.store = sqlite, pg, PersonalStore(sqlite)

    def add_conversation(self, user_id: str, turns: list[str], agents: tuple[str, ...] = ("a1", "a2"),
                         sqlite: bool = True) -> list[int]:
        """Each turn a memory, said after the one before (its context); agents take turns."""
        ids, previous = [], None
        with self.sqlite.transaction() as conn, self.pg.transaction():
            for n, turn in enumerate(turns):
                context = previous and SaidBefore(previous[0], previous[1])
                agent = agents[n % len(agents)]
                if sqlite:
                    memory_id = self.store.add(conn, user_id, turn, np.zeros(4, np.float32), "e", {"agent_id": agent},
                                               {}, 1.0 + n, "test", context=context)
                else:  # ids beyond SQLite's, as another tenant's rows would have
                    memory_id = 1_000_000 + len(ids) + 1
                self.pg.execute("INSERT INTO personal_memories (id, user_id, agent_id) VALUES (%s, %s, %s)",
                                (memory_id, user_id, agent))
                pg_text.write_memory_text(self.pg, [(memory_id, user_id, " ".join(tokenize(turn)),
                                                     " ".join(tokenize(context.text if context else "")))])
                ids.append(memory_id)
                previous = (memory_id, turn)
        return ids

    def sqlite_hits(self, user_id: str, query: str, limit: int, agent: str | None = None) -> list[tuple[int, float]]:
        return self.store.lexical(user_id, query, limit, {"agent_id": agent} if agent else None)

    def pg_hits(self, user_id: str, query: str, limit: int, agent: str | None = None) -> list[tuple[int, float]]:
        where, params = "user_id = ? AND deleted_at IS NULL", [user_id]
        if agent:
            where, params = f"{where} AND agent_id = ?", params + [agent]
        with self.pg.transaction():
            return pg_text.memory_hits(self.pg, user_id, fulltext.query_phrases(query), limit, where, params)


@pytest.fixture
def memories(tmp_path, pg):
    return Memories(SQLiteDatabase(tmp_path / "forest.db"), pg)


@pytest.mark.slow
@pytest.mark.parametrize("rare_rows", [pg_text.RARE_ROWS, 40])
def test_personal_memory_ranks_as_fts5_with_context_at_half_weight(memories, monkeypatch, rare_rows):
    """A LoCoMo conversation, each turn a memory with the turn before as its context (porter
    stemmed, context weighing 0.5), asked LoCoMo's questions (also pruned, as a larger store
    would be); then another user's conversation beside it changes nothing."""
    monkeypatch.setattr(pg_text, "RARE_ROWS", rare_rows)
    memories.add_conversation("u", locomo_conversation(0))
    asked = locomo_questions(0)
    before = {}
    for query in asked:
        for limit in LIMITS:
            want = memories.sqlite_hits("u", query, limit)
            before[query, limit] = memories.pg_hits("u", query, limit)
            assert_same(want, before[query, limit], query)
        assert_same(memories.sqlite_hits("u", query, 8, "a2"), memories.pg_hits("u", query, 8, "a2"), query)
    assert sum(1 for hits in before.values() if hits) > len(asked)  # most questions find something
    memories.add_conversation("v", locomo_conversation(1), sqlite=False)
    for (query, limit), hits in before.items():
        assert memories.pg_hits("u", query, limit) == hits, query


def test_phrases_count_as_fts5_counts_them(stores):
    """Rows of three words in random order, queried with random phrases ("beta-alpha-beta" is the
    phrase beta alpha beta): overlapping and repeated occurrences count as in FTS5."""
    rng = random.Random(9)
    vocabulary = ["alpha", "beta", "gamma"]
    stores.add_archive(1, "m", [(LEAF, None, "", " ".join(rng.choices(vocabulary, k=rng.randint(1, 60))))
                                for _ in range(400)])
    for _ in range(150):
        query = " ".join("-".join(rng.choices(vocabulary, k=rng.randint(1, 4))) for _ in range(rng.randint(1, 3)))
        phrases = fulltext.query_phrases(query)
        assert_same(stores.sqlite_hits("m", phrases, 10), stores.pg_hits("m", phrases, 10), query)


HOSTILE = ["it's", "O'Brien's \"quoted\" 'single'", "back\\slash \\\\ \\'", "a & b | c ! d <-> e ( f ) : g * h",
           "x:* y:A z:1 'w':*", "!!! ||| &&& <-> <2> ()", "'' \"\" ''' \\", "NEAR(a b) AND OR NOT ^x a*",
           "火山 位于 大多数火山位于板块边界", "東京タワー 서울 日本語のテキスト", "café naïve Ünïcödé ﬁnance",
           "x" * 10_000, " ".join(["word"] * 2_000), "gpt-4 o'clock 3.14 e=mc^2 C++ C# .NET"]
HOSTILE_ROWS = ["it's O'Brien's quoted single back slash text", "a b c d e f g h and x y z w",
                "大多数火山位于板块边界 东京タワー 서울 日本語のテキスト", "cafe naive unicode finance",
                "gpt-4 at o'clock with 3.14 and e=mc^2 in C++ or C# on .NET", "word " * 50]


def test_hostile_queries_run_and_match_literally(stores, memories):
    leaves = list(qasper_papers()[0][1])
    stores.add_archive(1, "m", [(LEAF, None, "", text) for text in HOSTILE_ROWS + leaves])
    memories.add_conversation("u", HOSTILE_ROWS * 3 + leaves)
    words = sorted({w for _, paper in qasper_papers()[:6] for leaf in paper for w in leaf.split()})
    pasted = " ".join(random.Random(2).sample(words, 1500))[:10_000]  # a page of words, most in no row
    for query in HOSTILE + [" ".join(HOSTILE), pasted]:
        phrases = fulltext.query_phrases(query)
        for limit in LIMITS:
            assert_same(stores.sqlite_hits("m", phrases, limit), stores.pg_hits("m", phrases, limit), query[:80])
            assert_same(memories.sqlite_hits("u", query, limit), memories.pg_hits("u", query, limit), query[:80])
    assert stores.pg_hits("m", fulltext.query_phrases("大多数火山位于板块边界"), 1)[0][0] == 3
    assert [i for i, _ in stores.pg_hits("m", fulltext.query_phrases("O'Brien's"), 8)] == [1]


@pytest.mark.slow
def test_deleted_rows_leave_the_results_and_the_statistics(stores, memories):
    papers = qasper_papers()[:6]
    ids = {}
    for archive_id, (paper_id, leaves) in enumerate(papers, 1):
        ids[archive_id] = stores.add_archive(archive_id, "m", paper_nodes(leaves, paper_id))
    asked = queries(papers, 15, seed=4)
    # One node deleted directly, an archive through the cascade from its nodes.
    gone = ids[2][:5] + ids[4]
    with stores.sqlite.transaction() as conn:
        conn.execute("DELETE FROM memory_nodes WHERE id IN (%s)" % ",".join(map(str, gone)))
        conn.execute("DELETE FROM archives WHERE id = 4")
    with stores.pg.transaction():
        pg_text.delete_node_text(stores.pg, ids[2][:5])
        stores.pg.execute("DELETE FROM archives WHERE id = 4")
    totals = stores.pg.execute("SELECT rows FROM node_text_totals WHERE model_id = 'm'").fetchone()[0]
    assert totals == sum(map(len, ids.values())) - len(gone)
    for query in asked:
        phrases = fulltext.query_phrases(query)
        for limit in LIMITS:
            got = stores.pg_hits("m", phrases, limit)
            assert not set(gone) & {i for i, _ in got}
            assert_same(stores.sqlite_hits("m", phrases, limit), got, query)
    kept = memories.add_conversation("u", locomo_conversation(2)[:300])
    with memories.sqlite.transaction() as conn, memories.pg.transaction():
        for memory_id in kept[::3]:
            memories.store.delete(conn, "u", memory_id, 2.0, "test")
        pg_text.delete_memory_text(memories.pg, kept[::3])
        memories.pg.execute("UPDATE personal_memories SET deleted_at = 2 WHERE id = ANY(%s)", (kept[::3],))
        # As PersonalStore.delete does: a memory said after a deleted one loses its context.
        for memory_id in kept[1::3]:
            memory = memories.sqlite.query_one("SELECT memory FROM personal_memories WHERE id = ?", (memory_id,))[0]
            pg_text.write_memory_text(memories.pg, [(memory_id, "u", " ".join(tokenize(memory)), "")])
    for query in locomo_questions(2)[:60]:
        got = memories.pg_hits("u", query, 8)
        assert not set(kept[::3]) & {i for i, _ in got}
        assert_same(memories.sqlite_hits("u", query, 8), got, query)


def test_rows_a_tsvector_cannot_hold_are_ranked_exactly(stores, memories):
    """A word 300 times in a row and 20,000 tokens in a row go to the overflow table; a 400-byte
    word and a token FTS5 cut in the middle of a character are stored hashed: all score as in FTS5."""
    rng = random.Random(7)
    filler = [w for leaf in qasper_papers()[1][1] for w in tokenize(leaf)]
    texts = ["zebra " * 300 + "striped horse", " ".join(rng.choice(filler) for _ in range(20_000)) + " zebra crossing",
             "longword" + "x" * 400 + " zebra", "ᚠ" * 11_000 + " zebra", "zebra crossing " * 3,
             " ".join(filler[:200])]
    ids = stores.add_archive(1, "m", [(LEAF, None, "", t) for t in texts + list(qasper_papers()[1][1])])
    overflow = {r[0] for r in stores.pg.execute("SELECT DISTINCT node_id FROM node_text_overflow")}
    assert overflow == {ids[0], ids[1]}
    for query in ["zebra", "zebra crossing", "striped horse zebra", "longword" + "x" * 400, "ᚠ" * 11_000,
                  "model zebra", " ".join(filler[:5]), "crossing"]:
        phrases = fulltext.query_phrases(query)
        for limit in LIMITS:
            assert_same(stores.sqlite_hits("m", phrases, limit), stores.pg_hits("m", phrases, limit), query[:40])
    memories.add_conversation("u", ["fine " * 500 + "day", "a fine day", "fine fine weather"] + texts[:2])
    for query in ["fine", "fine day", "weather", "zebra crossing"]:
        assert_same(memories.sqlite_hits("u", query, 8), memories.pg_hits("u", query, 8), query)
    with stores.pg.transaction():
        pg_text.delete_node_text(stores.pg, [ids[0]])
    assert stores.pg.execute("SELECT count(*) FROM node_text_overflow WHERE node_id = %s", (ids[0],)).fetchone()[0] == 0


def recount(pg, table: str, tenant: str, words: str) -> tuple[set, set]:
    """(totals, lexeme counts) recounted from the index rows, and as the triggers keep them."""
    kept = (set(pg.execute(f"SELECT {tenant}, rows, tokens FROM {table}_totals").fetchall()),
            set(pg.execute(f"SELECT {tenant}, lexeme, rows FROM {table}_lexemes").fetchall()))
    counted = (set(pg.execute(f"SELECT {tenant}, count(*), sum(length) FROM {table} GROUP BY 1").fetchall()),
               set(pg.execute(f"SELECT {tenant}, lexeme, count(*) FROM {table}, unnest(tsvector_to_array({words})) "
                              "AS lexeme GROUP BY 1, 2").fetchall()))
    return kept, counted


def test_statistics_follow_every_write(pg):
    """The totals and lexeme counts the triggers keep equal a recount after inserts, replacements,
    an update, deletions and a cascade; a deleted tenant's rows and words leave nothing in them."""
    leaves = qasper_papers()[3][1] + qasper_papers()[4][1]
    with pg.transaction():
        pg.execute("INSERT INTO archives VALUES (1, 'a', 'ready'), (2, 'a', 'ready'), (3, 'b', 'building')")
        pg.execute("INSERT INTO memory_nodes SELECT i, 1 + i %% 3 FROM generate_series(1, %s) i", (len(leaves),))
        pg_text.write_node_text(pg, [(i, "a" if i % 3 < 2 else "b", fulltext.index_text(LEAF, "", leaf))
                                     for i, leaf in enumerate(leaves, 1)])
    kept, counted = recount(pg, "node_text", "model_id", "body")
    assert kept == counted and len(kept[1]) > 1000
    with pg.transaction():
        pg_text.write_node_text(pg, [(i, "a" if i % 3 < 2 else "b", "replaced text " * i) for i in range(1, 30)])
        pg.execute("UPDATE node_text SET model_id = 'c' WHERE node_id BETWEEN 30 AND 40")
        pg_text.delete_node_text(pg, range(41, 60))
        pg.execute("DELETE FROM archives WHERE id = 2")  # its nodes and their index rows go by cascade
    assert recount(pg, "node_text", "model_id", "body")[0] == recount(pg, "node_text", "model_id", "body")[1]
    with pg.transaction():
        pg.execute("DELETE FROM archives")
    assert pg.execute("SELECT (SELECT count(*) FROM node_text_totals) + (SELECT count(*) FROM node_text_lexemes)"
                      ).fetchone()[0] == 0
    turns = locomo_conversation(3)[:200]
    with pg.transaction():
        pg.execute("INSERT INTO personal_memories (id, user_id) SELECT i, 'u' || i %% 2 FROM generate_series(1, %s) i",
                   (len(turns),))
        pg_text.write_memory_text(pg, [(i, f"u{i % 2}", " ".join(tokenize(turn)), " ".join(tokenize(turns[i - 2])))
                                       for i, turn in enumerate(turns, 1)])
        pg_text.write_memory_text(pg, [(i, f"u{i % 2}", " ".join(tokenize(turns[-i])), "") for i in range(1, 50)])
        pg_text.delete_memory_text(pg, range(50, 80))
    kept, counted = recount(pg, "personal_memory_text", "user_id", "body || context")
    assert kept == counted and len(kept[0]) == 2
    with pg.transaction():
        pg.execute("DELETE FROM personal_memories WHERE user_id = 'u1'")
    kept, counted = recount(pg, "personal_memory_text", "user_id", "body || context")
    assert kept == counted and {row[0] for row in kept[0] | kept[1]} == {"u0"}
