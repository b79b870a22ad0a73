"""Vector store in PostgreSQL with pgvector: the vectors live in the same database as the rows.

One table per embedder and dimension (an HNSW index needs a fixed dimension), shared by every
model_id: every statement is filtered by model_id, and an id held by one model_id is never read,
moved or overwritten through another. Many processes share the database and none owns it: the
tables are made by whichever store needs them first, under an advisory lock.

`forest_vector_tables` records each table's embedder, so a model_id whose vectors another embedder
made is refused as Chroma refuses it (checked once per model_id per process: docs/configuration.md
gives the cost). Figures and plans: bench/bench_pgvector.py.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.types import TypeInfo
from psycopg_pool import ConnectionPool

from forest.config import without_password
from forest.errors import ConfigError, DatabaseUnavailable, ForestError, one_line
from forest.storage.sql.postgres import check_connection
from forest.storage.vectors.base import VectorStore, VectorStoreError

REGISTRY = "forest_vector_tables"
# pg_advisory_xact_lock key under which every Memory Forest process makes pgvector's tables: two
# at once would otherwise race in CREATE EXTENSION / CREATE TABLE IF NOT EXISTS (a unique violation).
DDL_LOCK = 0x666F7265737476  # "forestv"
MAX_HNSW_DIM = 2000  # pgvector's HNSW index takes vectors of at most 2,000 dimensions
CONNECT_TIMEOUT = 5  # seconds; else libpq waits out TCP's own timeout (minutes) on a host that drops packets


def table_name(embedder_name: str, dim: int) -> str:
    """The embedder's table: readable, within PostgreSQL's 63 characters, distinct per (name, dim)."""
    slug = re.sub(r"[^a-z0-9]+", "_", embedder_name.lower()).strip("_")[:24]
    digest = hashlib.sha256(f"{embedder_name}\0{dim}".encode()).hexdigest()[:8]
    return f"forest_vectors_{slug}_{dim}_{digest}"


# The search: the table, then a vector, a model_id and top_k.
SEARCH = sql.SQL("SELECT node_id, embedding <=> %b AS distance FROM {} WHERE model_id = %s "
                 "ORDER BY distance LIMIT %s")
# A model_id filter drops most of what an HNSW scan meets in a big shared table: an iterative scan
# goes on until top_k rows pass it (strict_order keeps them sorted; pgvector 0.8). ef_search is
# the candidate list of each step: 20 per result asked, at least 200, finds about 0.9 of the exact
# top 10 where pgvector's default 40 finds 0.73 (bench/bench_pgvector.py). Set once per
# connection; a larger top_k raises it for its query.
MIN_PGVECTOR = (0, 8)
EF_SEARCH = 200
EF_PER_RESULT = 20
MAX_EF_SEARCH = 1000  # hnsw.ef_search's upper bound
# HNSW cannot serve a bitmap scan: without index scans the planner reads the model_id's rows
# through a bitmap of its btree (or the whole table, for a big one) and sorts them: exact.
EXACT = "SET LOCAL enable_indexscan = off"


class VectorStoreUnavailable(VectorStoreError, DatabaseUnavailable):
    """The server could not be reached, or the connection was lost mid-call (psycopg's
    OperationalError): the faces answer it as any unreachable database (the call may be sent again)."""


def _configure(conn: psycopg.Connection) -> None:
    """Each pooled connection: vectors in pgvector's binary format (numpy arrays), the search settings."""
    from pgvector.psycopg.vector import register_vector_info

    register_vector_info(conn, TypeInfo.fetch(conn, "vector"))
    conn.execute(f"SET hnsw.iterative_scan = strict_order; SET hnsw.ef_search = {EF_SEARCH}")


class PgVectorStore(VectorStore):
    def __init__(self, database_url: str, *, embedder_name: str, dim: int, pool_size: int = 4,
                 timeout: float = 10.0) -> None:
        """Connects at once, so a bad URL or an unreachable server fails here, in one line naming
        the URL without its password. `timeout`: the longest a call waits for a connection."""
        if not 0 < dim <= MAX_HNSW_DIM:
            raise ConfigError(f"pgvector's HNSW index takes 1 to {MAX_HNSW_DIM} dimensions; the embedder "
                              f"{embedder_name} makes {dim}")
        self.embedder_name = embedder_name
        self.dim = dim
        self.location = without_password(database_url)
        self.table = table_name(embedder_name, dim)
        self._t = sql.Identifier(self.table)
        self._checked: set[str] = set()  # model_ids whose vectors are known not to be another embedder's
        try:
            params = conninfo_to_dict(database_url)
            # Never prepared: a prepared statement's generic plan serves every model_id alike, and
            # the one a big model_id makes (a sequential scan) reads the whole table for a small one.
            options: dict[str, Any] = {"autocommit": True, "prepare_threshold": None}
            if "connect_timeout" not in params:
                options["connect_timeout"] = CONNECT_TIMEOUT
            with psycopg.connect(database_url, **options) as conn:
                self._create_tables(conn)
        except psycopg.Error as exc:
            unreachable = isinstance(exc, psycopg.OperationalError)
            raise (DatabaseUnavailable if unreachable else ForestError)(
                f"the pgvector store cannot use PostgreSQL at {self.location}: {one_line(exc)}") from None
        # `check` tests a connection before handing it out: after a server restart the pool's
        # connections are dead, and the next call gets a new one instead of failing (all of them
        # checked at once: forest.storage.sql.postgres.check_connection).
        self._pool = ConnectionPool(database_url, kwargs=options, min_size=1, max_size=pool_size,
                                    timeout=timeout, configure=_configure,
                                    check=lambda conn: check_connection(self._pool, conn), name="forest-pgvector",
                                    open=True)

    def _create_tables(self, conn: psycopg.Connection) -> None:
        """pgvector, the registry and this embedder's table, unless they are there (the usual case:
        one query; CREATE INDEX IF NOT EXISTS would lock the table against writers even then)."""
        installed = "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        version, there = conn.execute(f"SELECT ({installed}), to_regclass(%s) IS NOT NULL", [self.table]).fetchone()
        if not (version and there):
            self._create(conn)
            version = conn.execute(installed).fetchone()[0]
        if tuple(int(part) for part in re.findall(r"\d+", version)[:2]) < MIN_PGVECTOR:
            raise ConfigError(f"the pgvector store needs pgvector {'.'.join(map(str, MIN_PGVECTOR))} or later "
                              f"(iterative index scans); the database at {self.location} has {version}")

    def _create(self, conn: psycopg.Connection) -> None:
        t = self._t
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", [DDL_LOCK])
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(sql.SQL("CREATE TABLE IF NOT EXISTS {} (table_name TEXT PRIMARY KEY, "
                                 "embedder TEXT NOT NULL, dim INT NOT NULL)").format(sql.Identifier(REGISTRY)))
            # COLLATE "C": model_ids compare as bytes, cheaper than the database's collation.
            conn.execute(sql.SQL(
                'CREATE TABLE IF NOT EXISTS {} (node_id BIGINT PRIMARY KEY, model_id TEXT COLLATE "C" NOT NULL, '
                "archive_id BIGINT, node_type TEXT, depth INT, embedding vector({}) NOT NULL)"
            ).format(t, sql.Literal(self.dim)))
            # node_id too: ids() reads the index alone (a big model_id's: 3.5 times faster).
            conn.execute(sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (model_id, node_id)").format(
                sql.Identifier(self.table + "_model_id"), t))
            conn.execute(sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (embedding vector_cosine_ops)").format(
                sql.Identifier(self.table + "_hnsw"), t))
            conn.execute(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s) ON CONFLICT DO NOTHING").format(
                sql.Identifier(REGISTRY)), [self.table, self.embedder_name, self.dim])

    @contextmanager
    def _connection(self, model_id: str | None = None) -> Iterator[psycopg.Connection]:
        """A pooled connection (autocommit); every database failure becomes one VectorStoreError
        line. With a model_id, first refuses one whose vectors another embedder made."""
        try:
            with self._pool.connection() as conn:
                if model_id is not None and model_id not in self._checked:
                    self._check_embedder(conn, model_id)
                yield conn
        except psycopg.OperationalError as exc:
            raise VectorStoreUnavailable(f"the pgvector store at {self.location} failed: {one_line(exc)}") from exc
        except psycopg.Error as exc:
            raise VectorStoreError(f"the pgvector store at {self.location} failed: {one_line(exc)}") from exc

    def _check_embedder(self, conn: psycopg.Connection, model_id: str) -> None:
        others = conn.execute(sql.SQL("SELECT table_name, embedder, dim FROM {} WHERE table_name <> %s").format(
            sql.Identifier(REGISTRY)), [self.table]).fetchall()
        if others:
            held = sql.SQL(" UNION ALL ").join(
                sql.SQL("(SELECT {} FROM {} WHERE model_id = %s LIMIT 1)").format(
                    sql.Literal(f"{embedder} ({dim} dimensions)"), sql.Identifier(name))
                for name, embedder, dim in others)
            found = conn.execute(held, [model_id] * len(others)).fetchone()
            if found:
                raise ConfigError(
                    f"the vectors of model_id {model_id!r} were made by {found[0]}, but the configured "
                    f"embedder is {self.embedder_name} ({self.dim} dimensions); configure that embedder again, "
                    f"or re-embed the model_id with this one: forest reembed --model-id {model_id}")
        self._checked.add(model_id)

    def upsert(self, model_id, ids, vectors, metadatas):
        if len(ids) == 0:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        # COPY into a temporary table, then one INSERT: without the HNSW index 1.7-2.8 times as fast
        # as a pipelined executemany of INSERTs; with it, the index's upkeep bounds both alike
        # (bench/bench_pgvector.py). An id another model_id holds is neither inserted nor updated
        # (the WHERE): fewer rows written than sent, and the whole upsert is refused.
        upsert = sql.SQL(
            "INSERT INTO {} AS t (node_id, model_id, archive_id, node_type, depth, embedding) "
            "SELECT node_id, %s, archive_id, node_type, depth, embedding FROM forest_staged_vectors "
            "ON CONFLICT (node_id) DO UPDATE SET archive_id = EXCLUDED.archive_id, node_type = EXCLUDED.node_type, "
            "depth = EXCLUDED.depth, embedding = EXCLUDED.embedding WHERE t.model_id = EXCLUDED.model_id").format(self._t)
        with self._connection(model_id) as conn, conn.transaction(), conn.cursor() as cur:
            cur.execute("CREATE TEMPORARY TABLE forest_staged_vectors (node_id BIGINT, archive_id BIGINT, "
                        "node_type TEXT, depth INT, embedding vector) ON COMMIT DROP")
            with cur.copy("COPY forest_staged_vectors FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["int8", "int8", "text", "int4", "vector"])
                for k, (i, m) in enumerate(zip(ids, metadatas)):
                    copy.write_row((int(i), m.get("archive_id"), m.get("node_type"), m.get("depth"), vectors[k]))
            cur.execute(upsert, [model_id])
            if cur.rowcount != len(ids):
                raise VectorStoreError(
                    f"{len(ids) - cur.rowcount} of {len(ids)} node ids are held by another model_id: "
                    f"the upsert into model_id {model_id!r} is refused")

    def query(self, model_id, vector, top_k):
        if top_k <= 0:
            return []
        params = [np.ascontiguousarray(vector, dtype=np.float32), model_id, int(top_k)]
        ef_search = min(max(EF_SEARCH, EF_PER_RESULT * int(top_k)), MAX_EF_SEARCH)
        wider = [f"SET LOCAL hnsw.ef_search = {ef_search}"] if ef_search > EF_SEARCH else []
        with self._connection(model_id) as conn:
            rows = self._search(conn, params, wider)
            if len(rows) < top_k:  # the model_id holds fewer, or the scan stopped at hnsw.max_scan_tuples
                rows = self._search(conn, params, [EXACT])
        return [(int(node_id), 1.0 - float(distance)) for node_id, distance in rows]

    def _search(self, conn: psycopg.Connection, params: list, settings: list[str]) -> list[tuple]:
        """SEARCH, in a transaction only when it has settings of its own (SET LOCAL)."""
        with conn.transaction() if settings else nullcontext():
            for setting in settings:
                conn.execute(setting)
            return conn.execute(SEARCH.format(self._t), params).fetchall()

    def get_vectors(self, model_id, ids):
        if not ids:
            return {}
        statement = sql.SQL("SELECT node_id, embedding FROM {} WHERE model_id = %s AND node_id = ANY(%s)").format(self._t)
        with self._connection(model_id) as conn:
            rows = conn.execute(statement, [model_id, [int(i) for i in ids]], binary=True).fetchall()
        return {int(node_id): embedding.to_numpy() for node_id, embedding in rows}

    def update_metadata(self, model_id, ids, metadatas):
        if len(ids) == 0:
            return
        statement = sql.SQL("UPDATE {} SET archive_id = %s, node_type = %s, depth = %s "
                            "WHERE node_id = %s AND model_id = %s").format(self._t)
        rows = [(m.get("archive_id"), m.get("node_type"), m.get("depth"), int(i), model_id)
                for i, m in zip(ids, metadatas)]
        with self._connection(model_id) as conn, conn.transaction(), conn.cursor() as cur:
            cur.executemany(statement, rows)

    def delete(self, model_id, ids):
        if not ids:
            return
        statement = sql.SQL("DELETE FROM {} WHERE model_id = %s AND node_id = ANY(%s)").format(self._t)
        with self._connection(model_id) as conn:
            conn.execute(statement, [model_id, [int(i) for i in ids]])

    def drop_other_embedders(self, model_id: str) -> int:
        dropped = 0
        with self._connection() as conn:
            others = [name for name, in conn.execute(sql.SQL("SELECT table_name FROM {} WHERE table_name <> %s").format(
                sql.Identifier(REGISTRY)), [self.table])]
            for name in others:
                dropped += conn.execute(sql.SQL("DELETE FROM {} WHERE model_id = %s").format(sql.Identifier(name)),
                                        [model_id]).rowcount
        self._checked.discard(model_id)
        return dropped

    def ids(self, model_id):
        statement = sql.SQL("SELECT node_id FROM {} WHERE model_id = %s").format(self._t)
        with self._connection(model_id) as conn:
            return [int(node_id) for node_id, in conn.execute(statement, [model_id])]

    def model_ids(self):
        """The model_ids with vectors in any embedder's table (Chroma lists every collection too),
        each table's read by skipping through its btree from one model_id to the next."""
        with self._connection() as conn:
            tables = [name for name, in conn.execute(
                sql.SQL("SELECT table_name FROM {}").format(sql.Identifier(REGISTRY)))]
            skip = sql.SQL(
                "(WITH RECURSIVE m AS ((SELECT model_id FROM {t} ORDER BY model_id LIMIT 1) UNION ALL "
                "SELECT (SELECT model_id FROM {t} WHERE model_id > m.model_id ORDER BY model_id LIMIT 1) "
                "FROM m WHERE m.model_id IS NOT NULL) SELECT model_id FROM m WHERE model_id IS NOT NULL)")
            union = sql.SQL(" UNION ").join(skip.format(t=sql.Identifier(name)) for name in tables)
            return sorted(model_id for model_id, in conn.execute(union))

    def close(self) -> None:
        self._pool.close()
