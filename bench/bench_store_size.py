"""What a store takes on disk, per archive node and per personal memory, on SQLite + Chroma and on
PostgreSQL + pgvector: the measured input of docs/scaling.md's arithmetic.

Reads the stores `python -m bench.eval_backends --work DIR` leaves in DIR (QASPER dev papers under
one model_id and LoCoMo conversations through the personal memory service, the same content on
every backend) and prints, for each PostgreSQL table group, its bytes with indexes and TOAST, the
rows it holds and the bytes per node / memory; then the same for the embedded store's SQLite file
(by table, from SQLite's dbstat) and Chroma directory.

    python -m bench.eval_backends --work /tmp/eb      # once (about 20 minutes)
    python -m bench.bench_store_size --work /tmp/eb
"""
from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path

from forest.storage.sql.local_postgres import LocalPostgres

# Which table holds what: what an archive's nodes cost, what a personal memory costs.
GROUPS = {
    "tree": ("archives", "memory_nodes", "archive_merges", "node_text", "node_text_overflow",
             "node_text_totals", "node_text_lexemes"),
    "personal": ("personal_memories", "personal_memory_history", "personal_write_queue", "personal_triples",
                 "personal_triple_sources", "personal_tags", "personal_memory_text", "personal_memory_text_overflow",
                 "personal_memory_text_totals", "personal_memory_text_lexemes"),
}
SQLITE_GROUPS = {"tree": ("archives", "memory_nodes", "archive_merges", "node_text"),
                 "personal": ("personal_memories", "personal_memory_history", "personal_write_queue",
                              "personal_triples", "personal_triple_sources", "personal_tags",
                              "personal_memory_text")}


def postgres_sizes(url: str) -> tuple[dict[str, tuple[int, int]], int, int]:
    """{table: (bytes with indexes and TOAST, rows)}, nodes, memories."""
    import psycopg

    with psycopg.connect(url) as conn:
        tables = [name for (name,) in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")]
        sizes = {}
        for name in tables:
            total = conn.execute("SELECT pg_total_relation_size(%s::regclass)", [name]).fetchone()[0]
            rows = conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]
            sizes[name] = (total, rows)
    return sizes, sizes["memory_nodes"][1], sizes["personal_memories"][1]


def sqlite_sizes(path: Path) -> dict[str, int]:
    """{table: bytes} from dbstat (each FTS5 table's shadow tables and each table's indexes
    counted with it)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        indexes = dict(conn.execute("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index'"))
        sizes: dict[str, int] = {}
        for name, pgsize in conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
            owner = indexes.get(name, name)
            for fts in SQLITE_GROUPS["tree"] + SQLITE_GROUPS["personal"]:
                if owner.startswith(fts + "_"):  # node_text_data, node_text_idx, ...
                    owner = fts
            sizes[owner] = sizes.get(owner, 0) + pgsize
        return sizes
    finally:
        conn.close()


def directory_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def print_group(label: str, sizes: dict[str, int], members: tuple[str, ...], per: int, unit: str) -> None:
    total = sum(sizes.get(t, 0) for t in members)
    print(f"  {label:<28} {total / 1e6:9.2f} MB  {total / max(per, 1):9.0f} B per {unit}")
    for table in members:
        if sizes.get(table):
            print(f"      {table:<34} {sizes[table] / 1e6:8.2f} MB  {sizes[table] / max(per, 1):8.0f} B per {unit}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="an eval_backends.py --work directory")
    args = parser.parse_args()

    postgres = LocalPostgres(args.work / "postgres")
    postgres.start()
    try:
        sizes, nodes, memories = postgres_sizes(postgres.url("postgres_pgvector"))
    finally:
        postgres.stop()
    bytes_ = {name: total for name, (total, _) in sizes.items()}
    vectors = {name: total for name, total in bytes_.items() if name.startswith("forest_vectors")}
    print(f"PostgreSQL + pgvector: {nodes} archive nodes, {memories} personal memories "
          f"(sizes with indexes and TOAST)")
    print_group("archive nodes, rows + BM25", bytes_, GROUPS["tree"], nodes, "node")
    print(f"  {'archive node vectors':<28} {sum(vectors.values()) / 1e6:9.2f} MB  "
          f"{sum(vectors.values()) / max(nodes, 1):9.0f} B per node (pgvector table with its HNSW index)")
    print_group("personal memories", bytes_, GROUPS["personal"], memories, "memory")
    print(f"  whole database {sum(bytes_.values()) / 1e6:.1f} MB")

    sqlite_file = next((args.work / "sqlite-chroma").glob("*.sqlite3"))
    lite = sqlite_sizes(sqlite_file)
    chroma = directory_bytes(args.work / "sqlite-chroma" / "chroma")
    print(f"\nSQLite + Chroma: {sqlite_file.stat().st_size / 1e6:.1f} MB SQLite file, "
          f"{chroma / 1e6:.1f} MB Chroma directory")
    print_group("archive nodes, rows + FTS5", lite, SQLITE_GROUPS["tree"], nodes, "node")
    print(f"  {'archive node vectors':<28} {chroma / 1e6:9.2f} MB  {chroma / max(nodes, 1):9.0f} B per node (Chroma)")
    print_group("personal memories", lite, SQLITE_GROUPS["personal"], memories, "memory")


if __name__ == "__main__":
    main()
