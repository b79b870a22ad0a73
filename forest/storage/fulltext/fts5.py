"""Full-text search (SQLite FTS5, BM25) over node text, with our own tokenization in front.

FTS5's unicode61 tokenizer splits "GPT-4" into "gpt" + "4" and keeps a run of Chinese characters
as one token, so "火山" would never match "大多数火山位于". The indexed body is therefore our
tokenizer's output (forest.text.tokenize: words, CJK character bigrams) joined by spaces, and a
query is built the same way: each user term becomes one phrase-quoted FTS5 phrase, so "GPT-4"
matches the adjacent tokens gpt 4 (whole) and "GPT" matches it too (part), and no user input is
ever parsed as FTS5 syntax.

The top hits are FTS5's own BM25 ranking, pruned: when the rarest phrases decide the answer, the
rows holding only common phrases are never scored (top_hits).

Personal memories have an index of their own (personal_memory_text: the memory, and the
conversation said before it), with the functions forest.storage.fulltext.postgres has for it.
"""
from __future__ import annotations

import math
import sqlite3
from collections.abc import Collection, Iterable, Sequence

from forest.records import LEAF
from forest.text import STOPWORDS, tokenize


def index_text(node_type: str, summary: str, content: str) -> str:
    """What FTS5 indexes for a node: a leaf's text and summary; a summary node's summary only
    (its content repeats its leaves')."""
    text = f"{summary}\n{content}" if node_type == LEAF else summary
    return " ".join(tokenize(text or ""))


def indexed_text(node_type: str, title: str | None, summary: str, content: str) -> str:
    """What a node's full-text row holds: index_text with the title first (what the SQLite trigger
    of migration 7 computes; PostgreSQL's rows are written from here)."""
    return index_text(node_type, f"{title}\n{summary}" if title is not None else summary, content)


def query_phrases(query: str) -> list[str]:
    """The query's searchable terms, each as the space-joined tokens of one FTS5 phrase, in order,
    without repeats (a term of stopwords only is dropped)."""
    phrases = []
    for term in query.split():
        tokens = tokenize(term)
        if tokens and not all(t in STOPWORDS for t in tokens):
            phrase = " ".join(tokens)
            if phrase not in phrases:
                phrases.append(phrase)
    return phrases


def phrase_match(phrases: list[str]) -> str | None:
    """An FTS5 MATCH expression: every phrase quoted (never parsed as FTS5 syntax), joined by OR."""
    return " OR ".join('"{}"'.format(p.replace('"', '""')) for p in phrases) or None


def match_query(query: str) -> str | None:
    """An FTS5 MATCH expression: the query's terms as quoted phrases joined by OR; None if the
    query has no searchable term."""
    return phrase_match(query_phrases(query))


# --- BM25 top hits ---------------------------------------------------------------------------
# FTS5's bm25() (fts5_aux.c) sums over the query's phrases
#     idf * f * (k1 + 1) / (f + k1 * (1 - b + b * D / avgdl)),   k1 = 1.2, b = 0.75,
# f the phrase's count in the row, D the row's length, idf = log((N - n + 0.5) / (n + 0.5)) over
# the N rows of node_text of which n hold the phrase, or 1e-6 when that is not positive (n >= N/2).
# So a phrase adds less than idf * (k1 + 1) to any row, and almost nothing if it is common.
BM25_K1 = 1.2
# The pruned ranking scores the rows of the rarest phrases, at most RARE_ROWS of them (in the
# whole store): it costs about three times as much a row as ranking everything (it reads every
# rare row's score), so it pays only when the common phrases match many more rows.
RARE_ROWS = 2_000
# Id ranges of a model_id's archives closer than this are ranked in one statement (each statement
# pays FTS5's idf count over the whole table); at most MAX_SPANS statements.
SPAN_GAP = 5_000
MAX_SPANS = 8
# Ranking every match reads this many times the hits wanted before it checks which are visible.
LIMIT_DEPTH = 4
# The nodes `n` a model_id sees: those of its archives that finished building (one ? for the model_id);
# every read of nodes for a model_id joins it, here and in forest.storage.archives.
VISIBLE_ARCHIVE = "archives a ON a.id = n.archive_id AND a.model_id = ? AND a.status = 'ready'"
VISIBLE_NODES = f"JOIN {VISIBLE_ARCHIVE}"
_VISIBLE_TEXT = f"FROM node_text JOIN memory_nodes n ON n.id = node_text.rowid {VISIBLE_NODES} WHERE node_text MATCH ?"


def top_hits(conn: sqlite3.Connection, model_id: str, phrases: list[str], limit: int,
             archive_ids: Collection[int] | None = None) -> list[tuple[int, float]]:
    """(node id, -bm25) of the model_id's `limit` best visible matches of the OR of `phrases`, best
    first, ties by id; only those in `archive_ids`, if given. Call it inside a transaction: its
    statements must read one snapshot."""
    if archive_ids is None:
        return _rank_text(conn, model_id, phrases, limit)
    return _rank_in_archives(conn, model_id, phrases, limit, archive_ids)


def _rank_text(conn, model_id: str, phrases: list[str], limit: int) -> list[tuple[int, float]]:
    """(node id, -bm25) of the model_id's `limit` best visible matches of the OR of `phrases`.

    Ranking every match is O(matches): ~0.8 us a row, 80 ms for words in all of 100k rows. When
    the rarest phrases (together in at most RARE_ROWS rows) give `limit` visible rows scoring at
    least the most the other, common phrases can add up to, no row holding only common phrases
    can enter the answer (MaxScore, Turtle & Flood 1995). The rare rows' exact scores come from
    FTS5 itself: "(common) AND (rare)" for the rows holding both (the same phrases, so the same
    idf, and the same sum), "rare" alone for the others (an absent phrase adds 0). Otherwise
    every match is ranked, within the id ranges of the model_id's archives when it holds under
    half the index, so another model_id's rows cost only FTS5's per-phrase counts.
    """
    rows = _fts_row_count(conn)
    if rows == 0:
        return []
    half = (rows + 1) // 2  # a phrase in at least half the rows gets the idf floor
    cap = min(RARE_ROWS + 1, half)
    hits = {p: _count(conn, p, cap) for p in phrases}  # exact below cap; at cap, a lower bound
    if sum(hits.values()) <= RARE_ROWS:
        return _rank_all(conn, model_id, phrases, limit, None)
    rare: set[str] = set()
    for phrase in sorted(phrases, key=lambda p: hits[p]):
        if sum(hits[p] for p in rare) + hits[phrase] > RARE_ROWS:
            break
        rare.add(phrase)
    if any(hits[p] for p in rare):
        common = [p for p in phrases if p not in rare]
        ranked = _rank_rare(conn, model_id, [p for p in phrases if p in rare], common)
        if len(ranked) >= limit and _common_below(conn, rows, half, cap, common, hits, ranked[limit - 1][1]):
            return ranked[:limit]
    return _rank_all(conn, model_id, phrases, limit, _id_spans(conn, model_id, half))


def _rank_in_archives(conn, model_id: str, phrases: list[str], limit: int,
                      archive_ids: Collection[int]) -> list[tuple[int, float]]:
    """(node id, -bm25) of the best visible matches within the archives: every match of theirs
    ranked (a question over a few papers), the idf still that of the whole index, as elsewhere."""
    archive_ids = sorted({int(a) for a in archive_ids})
    if not archive_ids:
        return []
    marks = ",".join("?" * len(archive_ids))
    return conn.execute(f"SELECT node_text.rowid, -bm25(node_text) {_VISIBLE_TEXT} AND n.archive_id IN ({marks}) "
                        "ORDER BY bm25(node_text), node_text.rowid LIMIT ?",
                        (model_id, phrase_match(phrases), *archive_ids, limit)).fetchall()


def _count(conn, phrase: str, cap: int) -> int:
    """Rows holding the phrase, counted up to `cap`."""
    return conn.execute("SELECT count(*) FROM (SELECT 1 FROM node_text WHERE node_text MATCH ? LIMIT ?)",
                        (phrase_match([phrase]), cap)).fetchone()[0]


def _fts_row_count(conn) -> int:
    """N of bm25(): the first varint of FTS5's averages record (node_text_data, id 1)."""
    row = conn.execute("SELECT block FROM node_text_data WHERE id = 1").fetchone()
    block = bytes(row[0]) if row and row[0] else b""
    value = 0
    for i, byte in enumerate(block[:9]):  # SQLite varint: 7 bits a byte, big-endian; a 9th byte gives 8
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    return value


def _max_contribution(rows: int, hits: int, half: int) -> float:
    """More than a phrase in `hits` rows (or more, if hits >= half) adds to any row's bm25."""
    idf = 1e-6 if hits >= half else math.log((rows - hits + 0.5) / (hits + 0.5))
    return (idf if idf > 0 else 1e-6) * (BM25_K1 + 1)


def _common_below(conn, rows: int, half: int, cap: int, common: list[str], hits: dict[str, int],
                  floor: float) -> bool:
    """Whether a row holding only common phrases scores less than `floor`. A count that reached
    `cap` is a lower bound; such a phrase is counted on just far enough for its idf to fit an
    equal share of the floor, and up to half the rows if that falls short."""
    floor /= 1 + 1e-9

    def bound() -> float:
        return sum(_max_contribution(rows, hits[p], half) for p in common)

    open_ = [p for p in common if cap <= hits[p] < half]
    if bound() < floor or not open_:
        return bound() < floor
    settled = sum(_max_contribution(rows, hits[p], half) for p in common if p not in open_)
    need = _rows_for(rows, half, (floor - settled) / len(open_))
    for phrase in open_:
        hits[phrase] = _count(conn, phrase, need)
    if bound() >= floor:
        for phrase in open_:
            if need <= hits[phrase] < half:
                hits[phrase] = _count(conn, phrase, half)
    return bound() < floor


def _rows_for(rows: int, half: int, share: float) -> int:
    """The fewest rows a phrase must be in for its _max_contribution to be below `share`
    (half if even the idf floor is not)."""
    if share <= 0:
        return half
    e = math.exp(share / (BM25_K1 + 1))
    need = max(1, min(half, math.ceil((rows + 0.5 - 0.5 * e) / (1 + e))))
    while need < half and _max_contribution(rows, need, half) >= share:
        need += 1
    return need


def _rank_rare(conn, model_id: str, rare: list[str], common: list[str]) -> list[tuple[int, float]]:
    """Every visible row holding a rare phrase with its exact score for rare + common, best first."""
    scores = dict(conn.execute(f"SELECT node_text.rowid, -bm25(node_text) {_VISIBLE_TEXT}",
                               (model_id, phrase_match(rare))).fetchall())
    both = f"({phrase_match(common)}) AND ({phrase_match(rare)})"
    for node_id, score in conn.execute("SELECT rowid, -bm25(node_text) FROM node_text WHERE node_text MATCH ?",
                                       (both,)):
        if node_id in scores:
            scores[node_id] = score
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))


def _rank_all(conn, model_id: str, phrases: list[str], limit: int,
              spans: list[tuple[int, int]] | None) -> list[tuple[int, float]]:
    """FTS5's own ranking of every match (within the id spans if given), best first, ties by id.

    The ranking reads node_text alone (joining each match to its node and archive costs as much
    again), LIMIT_DEPTH x limit deep; the model_id's visible rows among those are its best if
    there are `limit` of them (or the ranking ran out). Otherwise the ranking joins.
    """
    if spans == []:  # the model_id has no visible archive
        return []
    match = phrase_match(phrases)
    between = "" if spans is None else "AND rowid BETWEEN ? AND ?"
    depth = limit * LIMIT_DEPTH
    ranked, complete = [], True
    for span in spans or [()]:
        rows = conn.execute(f"SELECT rowid, -bm25(node_text) FROM node_text WHERE node_text MATCH ? {between} "
                            "ORDER BY bm25(node_text), rowid LIMIT ?", (match, *span, depth)).fetchall()
        ranked += rows
        complete = complete and len(rows) < depth
    ranked.sort(key=lambda pair: (-pair[1], pair[0]))
    ranked = ranked[:depth]
    visible = _visible(conn, model_id, [node_id for node_id, _ in ranked])
    found = [(node_id, score) for node_id, score in ranked if node_id in visible]
    if len(found) >= limit or complete:
        return found[:limit]
    sql = (f"SELECT node_text.rowid, -bm25(node_text) {_VISIBLE_TEXT} {between.replace('rowid', 'node_text.rowid')} "
           "ORDER BY bm25(node_text), node_text.rowid LIMIT ?")
    ranked = [row for span in spans or [()] for row in conn.execute(sql, (model_id, match, *span, limit))]
    return sorted(ranked, key=lambda pair: (-pair[1], pair[0]))[:limit]


def _visible(conn, model_id: str, node_ids: list[int]) -> set[int]:
    found: set[int] = set()
    for start in range(0, len(node_ids), 500):
        chunk = node_ids[start : start + 500]
        found.update(r[0] for r in conn.execute(
            f"SELECT n.id FROM memory_nodes n CROSS JOIN {VISIBLE_ARCHIVE} WHERE n.id IN ({','.join('?' * len(chunk))})",
            (model_id, *chunk)))
    return found


def _id_spans(conn, model_id: str, half: int) -> list[tuple[int, int]] | None:
    """Node id ranges covering the model_id's visible archives (merged across small gaps); None
    when the model_id holds at least `half` the index's rows (ranking all of it costs at most 2x)."""
    visible = "SELECT id FROM archives WHERE model_id = ? AND status = 'ready'"
    if conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM memory_nodes WHERE archive_id IN ({visible}) LIMIT ?)",
                    (model_id, half)).fetchone()[0] >= half:
        return None
    ranges = conn.execute(f"SELECT MIN(id), MAX(id) FROM memory_nodes WHERE archive_id IN ({visible}) "
                          "GROUP BY archive_id ORDER BY 1", (model_id,)).fetchall()
    spans: list[list[int]] = []
    for low, high in ranges:
        if spans and low <= spans[-1][1] + SPAN_GAP:
            spans[-1][1] = max(spans[-1][1], high)
        else:
            spans.append([low, high])
    while len(spans) > MAX_SPANS:  # merge across the smallest gap
        i = min(range(len(spans) - 1), key=lambda k: spans[k + 1][0] - spans[k][1])
        spans[i : i + 2] = [[spans[i][0], spans[i + 1][1]]]
    return [(low, high) for low, high in spans]


# --- personal memories ------------------------------------------------------------------------
# A word of the memory's conversation context weighs half a word of the memory (chosen on LoCoMo's
# dev conversations against context and text weighed alike: docs/benchmarks.md).
CONTEXT_WEIGHT = 0.5
MEMORY_TEXT_ID = "rowid"   # the column of personal_memory_text naming its memory


def write_memory_text(conn: sqlite3.Connection, rows: Iterable[tuple[int, str, str, str]]) -> None:
    """Index memories: (memory id, user_id, body, context) each, body and context our tokens joined
    by spaces."""
    conn.executemany("INSERT INTO personal_memory_text (rowid, body, context) VALUES (?, ?, ?)",
                     [(memory_id, body, said) for memory_id, _, body, said in rows])


def delete_memory_text(conn: sqlite3.Connection, memory_ids: Collection[int]) -> None:
    conn.executemany("DELETE FROM personal_memory_text WHERE rowid = ?", [(i,) for i in memory_ids])


def memory_hits(conn: sqlite3.Connection, user_id: str, phrases: list[str], limit: int, where: str,
                params: Sequence) -> list[tuple[int, float]]:
    """(memory id, -bm25 with context weighing CONTEXT_WEIGHT) of the `limit` best matches among the
    memories `SELECT id FROM personal_memories WHERE {where}` (with `params`) selects, best first."""
    # The MATCH runs once, materialized, then the user's filter applies: with the filter inside
    # (rowid IN ...) SQLite ran the MATCH once per memory of the user.
    rows = conn.execute(
        f"WITH matched AS MATERIALIZED (SELECT rowid AS id, bm25(personal_memory_text, 1.0, {CONTEXT_WEIGHT}) "
        "AS score FROM personal_memory_text WHERE personal_memory_text MATCH ?) "
        f"SELECT id, score FROM matched WHERE id IN (SELECT id FROM personal_memories WHERE {where}) "
        "ORDER BY score LIMIT ?", (phrase_match(phrases), *params, limit)).fetchall()
    return [(r[0], -r[1]) for r in rows]

