"""Full-text search on PostgreSQL that ranks as SQLite FTS5's bm25() ranks (forest.storage.fulltext.fts5),
with each tenant's statistics its own.

The index holds FTS5's own lexemes (forest.storage.fulltext.lexemes) with their positions, as tsvector
values built here (PostgreSQL's parser is never used: its result depends on the server's locale),
under a GIN index. A query phrase is FTS5's: its lexemes consecutive, every occurrence counted,
overlapping ones too. The score is fts5Bm25Function's formula in its order of floating-point
operations, so with one tenant in the store the scores are FTS5's bm25() to the last bit. N, n and
avgdl are the tenant's (model_id for node text, user_id for personal memory): one tenant's rows
never move another's scores. Triggers keep them as FTS5 keeps its own, so a query reads them
instead of counting rows: each tenant's rows and tokens (the _totals tables) and each lexeme's
rows (the _lexemes tables).

A row a tsvector cannot hold exactly (a lexeme more than 256 times, more than 16383 tokens in a
column, over a tsvector's size) gets empty tsvectors and its postings in the _overflow table;
such rows are scored in Python with the same formula.

Ranking reads term at a time, as FTS5 reads its doclists: each phrase's rows through the GIN
index. It is pruned (MaxScore, Turtle & Flood 1995, as forest.storage.fulltext.fts5 prunes): the rows
of the rarest phrases, and those holding every common phrase, are scored first; a common phrase
adds less than its idf x (k1 + 1) to any row, so then only the rows holding a set of common
phrases that could reach the best scores found are read, and often none.
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from forest.storage.fulltext.fts5 import CONTEXT_WEIGHT
from forest.storage.fulltext.lexemes import lexemes
from forest.storage.sql.postgres import pyformat

if TYPE_CHECKING:
    from psycopg import Connection

# fts5Bm25Function's constants, combined as C combines them (k1 + 1.0, 1 - b).
BM25_K1 = 1.2
BM25_B = 0.75
IDF_FLOOR = 1e-6
# tsvector's limits: positions 1..16383, 256 positions a lexeme, 1 MB of lexemes and positions.
MAX_POSITION = 16383
MAX_POSITIONS = 256
MAX_TSVECTOR_BYTES = 1_000_000
# Longer lexemes (and any that is not UTF-8) are stored as '#' + SHA-256: no FTS5 token holds '#'.
MAX_LEXEME_BYTES = 255
# MaxScore: the rows of the rarest phrases, at most RARE_ROWS of them, are scored first; then
# only the rows holding sets of common phrases that could reach their score (at most MAX_SETS
# sets, of at most MAX_SETS common phrases).
RARE_ROWS = 2_000
MAX_SETS = 32
# Ranking a model_id's nodes reads this many times the hits wanted before it checks which are
# visible (the check joins each row to its node and archive).
LIMIT_DEPTH = 4
# The nodes a model_id sees: those of its archives that finished building.
_VISIBLE = ("SELECT n.id FROM memory_nodes n JOIN archives a ON a.id = n.archive_id AND a.model_id = %s "
            "AND a.status = 'ready'")


@dataclass(frozen=True)
class _Index:
    table: str
    key: str
    tenant: str
    columns: tuple[str, ...]
    weights: tuple[float, ...]
    porter: bool

    def statistics(self) -> str:
        """SQL of a tenant's rows and tokens, the rows of each of some lexemes, and its overflow
        rows' postings of those lexemes (parameters: lexemes, lexemes, tenant)."""
        return (f"SELECT t.rows, t.tokens, "
                f"(SELECT coalesce(jsonb_object_agg(l.lexeme, l.rows), '{{}}') FROM {self.table}_lexemes l "
                f"WHERE l.{self.tenant} = t.{self.tenant} AND l.lexeme = ANY(%s)), "
                f"(SELECT coalesce(jsonb_agg(jsonb_build_array(o.{self.key}, r.length, o.col, o.lexeme, o.positions)), "
                f"'[]') FROM {self.table}_overflow o JOIN {self.table} r USING ({self.key}) "
                f"WHERE r.{self.tenant} = t.{self.tenant} AND o.lexeme = ANY(%s)) "
                f"FROM {self.table}_totals t WHERE t.{self.tenant} = %s")


NODE_TEXT = _Index("node_text", "node_id", "model_id", ("body",), (1.0,), porter=False)
MEMORY_TEXT = _Index("personal_memory_text", "memory_id", "user_id", ("body", "context"), (1.0, CONTEXT_WEIGHT),
                     porter=True)


# --- writing -----------------------------------------------------------------------------------

# Each write updates the tenant's statistics rows, and a row updated many times in one transaction
# gets slower to update each time (its versions pile up until the transaction ends): write a
# transaction's rows in one call, not one call a row.

def write_node_text(conn: Connection, rows: Iterable[tuple[int, str, str]]) -> None:
    """Index nodes: (node id, model_id, text) each, the text what FTS5 indexes for the node
    (forest.storage.fulltext.fts5.index_text of its type, its title + newline + summary, and its
    content). An earlier row of a node is replaced."""
    _write(conn, NODE_TEXT, [(node_id, model_id, (text,)) for node_id, model_id, text in rows])


def write_memory_text(conn: Connection, rows: Iterable[tuple[int, str, str, str]]) -> None:
    """Index memories: (memory id, user_id, body, context) each, body and context what FTS5
    indexes (our tokens joined by spaces). An earlier row of a memory is replaced."""
    _write(conn, MEMORY_TEXT, [(memory_id, user_id, (body, context)) for memory_id, user_id, body, context in rows])


def delete_node_text(conn: Connection, node_ids: Collection[int]) -> None:
    conn.execute("DELETE FROM node_text WHERE node_id = ANY(%s)", (list(node_ids),))


MEMORY_TEXT_ID = "memory_id"   # the column of personal_memory_text naming its memory


def delete_memory_text(conn: Connection, memory_ids: Collection[int]) -> None:
    conn.execute("DELETE FROM personal_memory_text WHERE memory_id = ANY(%s)", (list(memory_ids),))


def _write(conn: Connection, index: _Index, rows: list[tuple[int, str, tuple[str, ...]]]) -> None:
    if not rows:
        return
    conn.execute(f"DELETE FROM {index.table} WHERE {index.key} = ANY(%s)", ([row_id for row_id, _, _ in rows],))
    records, overflow = [], []
    for row_id, tenant, texts in rows:
        columns = [[_key(lexeme) for lexeme in lexemes(text, index.porter)] for text in texts]
        vectors = [_tsvector(keys) for keys in columns]
        if any(vector is None for vector in vectors):
            vectors = [""] * len(columns)
            overflow += [(row_id, col, key, positions) for col, keys in enumerate(columns)
                         for key, positions in _positions(keys).items()]
        records.append((row_id, tenant, *vectors, sum(map(len, columns))))
    names = ", ".join((index.key, index.tenant, *index.columns, "length"))
    with conn.cursor().copy(f"COPY {index.table} ({names}) FROM STDIN") as copy:
        for record in records:
            copy.write_row(record)
    if overflow:
        columns = f"{index.key}, col, lexeme, positions"
        with conn.cursor().copy(f"COPY {index.table}_overflow ({columns}) FROM STDIN") as copy:
            for record in overflow:
                copy.write_row(record)


def _key(lexeme: str) -> str:
    """The lexeme as stored: itself, or '#' and its SHA-256 if it is long or not UTF-8 (a token
    FTS5 cut inside a character, its stray bytes as surrogates)."""
    try:
        data = lexeme.encode()
    except UnicodeEncodeError:
        data = lexeme.encode(errors="surrogateescape")
    else:
        if len(data) <= MAX_LEXEME_BYTES:
            return lexeme
    return "#" + hashlib.sha256(data).hexdigest()


def _positions(keys: list[str]) -> dict[str, list[int]]:
    """Each lexeme's 0-based positions (FTS5's offsets)."""
    positions: dict[str, list[int]] = {}
    for offset, key in enumerate(keys):
        positions.setdefault(key, []).append(offset)
    return positions


def _tsvector(keys: list[str]) -> str | None:
    """The tsvector literal of a column (positions 1-based), or None if a tsvector cannot hold it
    exactly. Lexemes are quoted, so no text is read as tsvector syntax."""
    if len(keys) > MAX_POSITION:
        return None
    positions = _positions(keys)
    if any(len(p) > MAX_POSITIONS for p in positions.values()) or \
            sum(len(k.encode()) + 4 + 2 * len(p) for k, p in positions.items()) > MAX_TSVECTOR_BYTES:
        return None
    return " ".join(f"{_quote(key)}:{','.join(str(p + 1) for p in offsets)}" for key, offsets in positions.items())


def _quote(key: str) -> str:
    return "'" + key.replace("\\", "\\\\").replace("'", "''") + "'"


# --- searching ---------------------------------------------------------------------------------

def top_hits(conn: Connection, model_id: str, phrases: list[str], limit: int,
             archive_ids: Collection[int] | None = None) -> list[tuple[int, float]]:
    """(node id, -bm25) of the model_id's `limit` best visible matches of the OR of `phrases`
    (forest.storage.fulltext.fts5.query_phrases), best first, ties by id; only those in
    `archive_ids`, if given. Call it inside a transaction (REPEATABLE READ): its statements
    must read one snapshot."""
    if archive_ids is not None:
        archive_ids = sorted({int(a) for a in archive_ids})
        if not archive_ids:
            return []
        scope = (f"{_VISIBLE} WHERE n.archive_id = ANY(%s)", (model_id, archive_ids))
        return _Search(conn, NODE_TEXT, model_id, phrases).top(limit, scope, depth=False)
    return _Search(conn, NODE_TEXT, model_id, phrases).top(limit, (_VISIBLE, (model_id,)), depth=True)


def memory_hits(conn: Connection, user_id: str, phrases: list[str], limit: int, where: str,
                params: Sequence) -> list[tuple[int, float]]:
    """(memory id, -bm25 with context weighing CONTEXT_WEIGHT) of the user's `limit` best matches among the
    memories `SELECT id FROM personal_memories WHERE {where}` (with `params`; `?` placeholders)
    selects, best first, ties by id. Call it inside a transaction (REPEATABLE READ)."""
    scope = (f"SELECT id FROM personal_memories WHERE {pyformat(where)}", tuple(params))
    return _Search(conn, MEMORY_TEXT, user_id, phrases).top(limit, scope, depth=False)


class _Search:
    """One query over one tenant's rows: its phrases' lexemes, the tenant's statistics, each
    phrase's row count (exact where its idf needs it), and the ranking."""

    def __init__(self, conn: Connection, index: _Index, tenant: str, phrases: list[str]) -> None:
        self.conn, self.index, self.tenant = conn, index, tenant
        # A phrase FTS5 tokenizes to nothing matches nothing and adds nothing: left out. Two
        # phrases with the same lexemes ("run", "running" under porter) each count, as in FTS5.
        self.phrases = [keys for keys in (tuple(_key(t) for t in lexemes(p, index.porter)) for p in phrases) if keys]

    def top(self, limit: int, scope: tuple[str, tuple], depth: bool) -> list[tuple[int, float]]:
        """The `limit` best rows within `scope` (SQL selecting row ids as `id`, and its parameters).
        With `depth`, a ranking reads LIMIT_DEPTH x limit of the tenant's rows and checks the scope
        on those only, unless too few of them are in it."""
        if not self.phrases or limit <= 0:
            return []
        keys = sorted({key for keys in self.phrases for key in keys})
        row = self.conn.execute(self.index.statistics(), (keys, keys, self.tenant)).fetchone()
        if row is None:
            return []
        self.rows, tokens, lexeme_rows, overflow = row
        self.avgdl = tokens / self.rows
        self.half = (self.rows + 1) // 2  # a phrase in at least half the rows gets the idf floor
        self.overflow = _Overflow(self.index, self.phrases, overflow)
        # A one-lexeme phrase's tsvector rows are its lexeme's; a longer phrase's are counted.
        everything = list(range(len(self.phrases)))
        self.found = [lexeme_rows.get(keys[0], 0) if len(keys) == 1 else 0 for keys in self.phrases]
        self.upto = [math.inf if len(keys) == 1 else 0 for keys in self.phrases]
        self._count([i for i in everything if len(self.phrases[i]) > 1], min(RARE_ROWS + 1, self.half))
        hits = [self._hits(i) for i in everything]  # exact, or a lower bound over RARE_ROWS
        if sum(hits) > RARE_ROWS:
            rare: list[int] = []
            for i in sorted(everything, key=lambda i: hits[i]):
                if sum(hits[r] for r in rare) + hits[i] > RARE_ROWS:
                    break
                rare.append(i)
            common = [i for i in everything if i not in rare]
            # First the rows of the rare phrases, and those holding every common phrase if they
            # are few: the best of them set the floor that the other rows must be able to reach.
            groups = [(i,) for i in rare if hits[i]]
            if len(common) > 1 and self._holding([tuple(common)], RARE_ROWS + 1) <= RARE_ROWS:
                groups.append(tuple(common))
            ranked = self._ranked(groups, limit, scope, depth) if groups else []
            if len(ranked) >= limit:
                # The floor a hair lower, so the bounds hold against the scores' rounding too.
                reaching = self._reaching(common, ranked[limit - 1][1] / (1 + 1e-9))
                if reaching == []:
                    return ranked
                if reaching is not None:  # the rows of the rare phrases (again) and of these sets
                    return self._ranked([(i,) for i in rare] + reaching, limit, scope, depth)
        return self._ranked([(i,) for i in everything], limit, scope, depth)

    def _reaching(self, common: list[int], floor: float) -> list[tuple[int, ...]] | None:
        """The smallest sets of common phrases that could together reach `floor` in a row: a
        phrase adds less than its idf x (k1 + 1), so a row holding none of these sets scores
        below it. None if there are more than MAX_SETS phrases or sets (then every row is ranked)."""
        if len(common) > MAX_SETS:
            return None
        most = {i: self._idf(i) * (BM25_K1 + 1.0) for i in common}
        order = sorted(common, key=lambda i: -most[i])
        rest = [sum(most[i] for i in order[j:]) for j in range(len(order))]
        found: list[tuple[int, ...]] = []

        def extend(start: int, chosen: tuple[int, ...], total: float) -> None:
            # In falling order of bound, a set is kept as soon as it reaches: it is then smallest.
            for j in range(start, len(order)):
                if total + most[order[j]] >= floor:
                    found.append(chosen + (order[j],))
                elif total + rest[j] >= floor:
                    extend(j + 1, chosen + (order[j],), total + most[order[j]])
                if len(found) > MAX_SETS:
                    return

        extend(0, (), 0.0)
        return found if len(found) <= MAX_SETS else None

    def _count(self, phrases: list[int], upto: int) -> None:
        """Count the tenant's tsvector rows holding each phrase, up to `upto`, in one statement."""
        if not phrases:
            return
        counts = [self._counting([(i,)], upto) for i in phrases]
        found = self.conn.execute("SELECT " + ", ".join(sql for sql, _ in counts),
                                  [p for _, params in counts for p in params]).fetchone()
        for i, count in zip(phrases, found):
            self.found[i], self.upto[i] = count, upto

    def _holding(self, groups: list[tuple[int, ...]], upto: int) -> int:
        sql, params = self._counting(groups, upto)
        return self.conn.execute("SELECT " + sql, params).fetchone()[0]

    def _counting(self, groups: list[tuple[int, ...]], upto: int) -> tuple[str, list]:
        """SQL counting the tenant's tsvector rows that hold all the phrases of a group, up to
        `upto`, and its parameters."""
        condition, params = self._condition(groups)
        return (f"(SELECT count(*) FROM (SELECT FROM {self.index.table} t WHERE t.{self.index.tenant} = %s "
                f"AND {condition} LIMIT %s) s)", [self.tenant, *params, upto])

    def _condition(self, groups: list[tuple[int, ...]]) -> tuple[str, list]:
        """SQL true of a row `t` holding all the phrases of some group, and its parameters."""
        def has(i: int) -> str:
            return "(" + " OR ".join(f"t.{column} @@ %s::tsquery" for column in self.index.columns) + ")"
        sql = " OR ".join("(" + " AND ".join(map(has, group)) + ")" for group in groups)
        return f"({sql})", [_tsquery(self.phrases[i]) for group in groups for i in group for _ in self.index.columns]

    def _hits(self, i: int) -> int:
        return self.found[i] + self.overflow.hits(i)

    def _idf(self, i: int) -> float:
        """Phrase i's idf (its count must be exact: see _settle)."""
        n = min(self._hits(i), self.rows)  # outside one snapshot a later count may pass the totals
        idf = math.log((self.rows - n + 0.5) / (n + 0.5))
        return idf if idf > 0 else IDF_FLOOR

    def _settle(self) -> None:
        """Count on, up to half the rows, the phrases whose count stopped at its limit: a count of
        half the rows or more gives the idf floor whatever it is, any other must be exact."""
        self._count([i for i in range(len(self.phrases))
                     if self.found[i] >= self.upto[i] and self._hits(i) < self.half], self.half)

    def _ranked(self, groups: list[tuple[int, ...]], limit: int, scope: tuple[str, tuple],
                depth: bool) -> list[tuple[int, float]]:
        """The `limit` best rows in scope of those holding all the phrases of a group, scored on
        all phrases."""
        self._settle()
        idfs = [self._idf(i) for i in range(len(self.phrases))]
        scored = self.overflow.scored(groups, idfs, self.avgdl)
        inside = self._in_scope(scope, [row_id for row_id, _ in scored])
        found = [(row_id, score) for row_id, score in scored if row_id in inside]
        if depth:
            ranked = self._rank(groups, idfs, limit * LIMIT_DEPTH, scope, check=True)
            inside = [(row_id, score) for row_id, score, is_inside in ranked if is_inside]
            if len(inside) >= limit or len(ranked) < limit * LIMIT_DEPTH:
                found += inside
            else:
                found += self._rank(groups, idfs, limit, scope)
        else:
            found += self._rank(groups, idfs, limit, scope)
        return sorted(found, key=lambda pair: (-pair[1], pair[0]))[:limit]

    def _in_scope(self, scope: tuple[str, tuple], ids: list[int]) -> set[int]:
        if not ids:
            return set()
        return {r[0] for r in self.conn.execute(f"SELECT s.id FROM ({scope[0]}) s WHERE s.id = ANY(%s)",
                                                (*scope[1], ids))}

    def _rank(self, groups: list[tuple[int, ...]], idfs: list[float], limit: int,
              scope: tuple[str, tuple], check: bool = False) -> list[tuple]:
        """FTS5's bm25 of the tenant's rows in scope that hold all the phrases of a group, best
        `limit` first. Term at a time, as FTS5 reads its doclists: each phrase's rows through the
        GIN index, its count in each (ts_rank_cd with unit weights and no normalization adds 1 a
        cover, and a phrase's covers are its occurrences, overlapping ones too: FTS5's count),
        fts5Bm25Function's term; a row's terms summed in phrase order. With `check`, rows out of
        scope are ranked too, each with whether it is in scope."""
        index = self.index
        holds = " OR ".join(f"t.{column} @@ p.query" for column in index.columns)
        count = " + ".join(f"%s * ts_rank_cd('{{1,1,1,1}}', t.{column}, p.query)" for column in index.columns)
        where, where_params = f"t.{index.tenant} = %s", [self.tenant]
        if sorted(groups) != [(i,) for i in range(len(self.phrases))]:  # else every row holding a phrase
            condition, params = self._condition(groups)
            where, where_params = f"{where} AND {condition}", where_params + params
        if not check:
            where, where_params = f"{where} AND t.{index.key} IN ({scope[0]})", where_params + list(scope[1])
        # OFFSET 0: each count computed once, not once for each use in the term.
        sql = (f"SELECT id, sum(idf * ((f * %s) / (f + %s * (%s + %s * length / %s))) ORDER BY i) AS score "
               f"FROM (SELECT t.{index.key} AS id, t.length, p.i, p.idf, {count} AS f "
               f"FROM phrase p JOIN {index.table} t ON {holds} WHERE {where} OFFSET 0) posting "
               f"GROUP BY id ORDER BY score DESC, id LIMIT %s")
        params = [BM25_K1 + 1.0, BM25_K1, 1 - BM25_B, BM25_B, self.avgdl, *index.weights, *where_params, limit]
        if check:
            sql = (f"SELECT id, score, EXISTS (SELECT FROM ({scope[0]}) s WHERE s.id = r.id) FROM ({sql}) r "
                   "ORDER BY score DESC, id")
            params = [*scope[1], *params]
        table = "WITH phrase (i, query, idf) AS (SELECT * FROM unnest(%s::int[], %s::tsquery[], %s::float8[])) "
        params = [list(range(len(self.phrases))), [_tsquery(keys) for keys in self.phrases], idfs, *params]
        return [tuple(row) for row in self.conn.execute(table + sql, params)]


class _Overflow:
    """The tenant's overflow rows that hold a query lexeme, with each phrase's weighted count in
    each (counted as FTS5 counts: every start where all the phrase's lexemes line up)."""

    def __init__(self, index: _Index, phrases: list[tuple[str, ...]], postings: list[list]) -> None:
        rows: dict[int, tuple[int, dict[tuple[int, str], set[int]]]] = {}
        for row_id, length, col, key, positions in postings:
            rows.setdefault(row_id, (length, {}))[1][col, key] = set(positions)
        self.rows = {}
        for row_id, (length, at) in rows.items():
            freqs = [sum(weight * sum(1 for p in at.get((col, phrase[0]), ())
                                      if all(p + k in at.get((col, key), ()) for k, key in enumerate(phrase)))
                         for col, weight in enumerate(index.weights)) for phrase in phrases]
            if any(freqs):
                self.rows[row_id] = (length, freqs)

    def hits(self, i: int) -> int:
        return sum(1 for _, freqs in self.rows.values() if freqs[i])

    def scored(self, groups: list[tuple[int, ...]], idfs: list[float], avgdl: float) -> list[tuple[int, float]]:
        """(row id, score) of the rows holding all the phrases of a group: fts5Bm25Function's
        arithmetic."""
        out = []
        for row_id, (length, freqs) in self.rows.items():
            if any(all(freqs[i] for i in group) for group in groups):
                score = 0.0
                for idf, f in zip(idfs, freqs):
                    score += idf * ((f * (BM25_K1 + 1.0)) / (f + BM25_K1 * (1 - BM25_B + BM25_B * length / avgdl)))
                out.append((row_id, score))
        return out


def _tsquery(phrase: tuple[str, ...]) -> str:
    """The tsquery of a phrase (its lexemes consecutive), every lexeme quoted: no text of the
    user's is read as tsquery syntax."""
    return " <-> ".join(_quote(key) for key in phrase)
