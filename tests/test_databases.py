"""The database layer: one migration list gives SQLite the schema it always had and PostgreSQL its
own; PostgreSQL takes the stores' SQL as written; what differs between the two (id reservation,
JSON filters, locks) behaves the same."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from forest.config import load_settings
from forest.errors import ConfigError, DatabaseUnavailable, ForestError
from forest.storage.sql.migrations import LATEST_VERSION, postgres_ddl
from forest.storage.sql.opening import open_database
from forest.storage.sql.postgres import PostgresDatabase, pyformat
from forest.storage.sql.sqlite import SQLiteDatabase

SCHEMA = Path(__file__).parent / "data" / "sqlite_schema_v11.json"


def test_a_new_sqlite_store_gets_exactly_the_schema_the_old_migrations_made(tmp_path):
    """tests/data/sqlite_schema_v11.json is sqlite_master of a store made before the migrations
    were written once for both databases: a new store must be the same, object by object, with the
    later migrations' changes made to it as SQLite makes them."""
    db = SQLiteDatabase(tmp_path / "forest.sqlite3")
    rows = [list(r) for r in db.query("SELECT type, name, tbl_name, sql FROM sqlite_master "
                                      "WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name")]
    expected = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert expected["user_version"] == 11 and db.schema_version == LATEST_VERSION == 13
    assert rows == with_library_columns(expected["objects"])


def with_library_columns(objects: list[list]) -> list[list]:
    """Migrations 12 and 13 on the v11 objects, as SQLite makes them: the archives table's two
    library columns; the personal graph's validity columns and their index."""
    import sqlite3

    memory = sqlite3.connect(":memory:")
    for table in ("archives", "personal_triples"):
        memory.execute(next(o[3] for o in objects if o[:2] == ["table", table]))
    memory.executescript("ALTER TABLE archives ADD COLUMN library TEXT; ALTER TABLE archives ADD COLUMN cite_as TEXT;"
                         "ALTER TABLE personal_triples ADD COLUMN valid_from REAL;"
                         "ALTER TABLE personal_triples ADD COLUMN valid_to REAL;"
                         "CREATE INDEX idx_triples_user_open ON personal_triples (user_id, valid_to);")
    made = {(r[0], r[1]): list(r) for r in memory.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")}
    return sorted([made.get((o[0], o[1]), o) for o in objects] + [made[("index", "idx_triples_user_open")]],
                  key=lambda o: (o[0], o[1]))


def test_postgres_gets_postgres_types_and_its_own_full_text_tables(postgres_url):
    db = PostgresDatabase(postgres_url)
    assert db.schema_version == LATEST_VERSION
    columns = {(r[0], r[1]): r[2] for r in db.query(
        "SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = 'public'")}
    assert columns[("memory_nodes", "id")] == "bigint"
    assert columns[("memory_nodes", "merge_similarity")] == "double precision"  # SQLite's REAL is 64-bit
    assert columns[("episodic_events", "embedding")] == "bytea"
    assert columns[("node_text", "body")] == "tsvector"
    assert columns[("personal_memory_text", "context")] == "tsvector"
    collations = {r[0] for r in db.query("SELECT collation_name FROM information_schema.columns "
                                         "WHERE table_schema = 'public' AND data_type = 'text'")}
    assert collations == {"C"}  # ORDER BY on text gives SQLite's byte order
    db.close()
    again = PostgresDatabase(postgres_url)  # a second open migrates nothing
    assert again.schema_version == LATEST_VERSION
    again.close()


def test_processes_starting_together_migrate_once(postgres_url):
    opened, failed = [], []

    def open_one() -> None:
        try:
            opened.append(PostgresDatabase(postgres_url))
        except Exception as exc:  # noqa: BLE001 - the test reports any failure
            failed.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failed and len(opened) == 4
    assert opened[0].query_one("SELECT count(*) FROM forest_schema")[0] == 1
    for db in opened:
        db.close()


def test_a_store_from_a_newer_forest_is_refused_in_one_line(postgres_url):
    db = PostgresDatabase(postgres_url)
    with db.transaction() as conn:
        conn.execute("UPDATE forest_schema SET version = ?", (LATEST_VERSION + 1,))
    db.close()
    with pytest.raises(ForestError, match="newer version of forest") as caught:
        PostgresDatabase(postgres_url)
    assert "\n" not in str(caught.value)


def test_an_unreachable_database_is_one_line_without_the_password(tmp_path):
    url = f"postgresql://forest:s3cret-pw@/forest?host={tmp_path}&port=1"
    with pytest.raises(DatabaseUnavailable) as caught:
        open_database(load_settings({"database_url": url}, environ={}))
    message = str(caught.value)
    assert "s3cret-pw" not in message and "\n" not in message and "cannot connect to PostgreSQL" in message
    with pytest.raises(ConfigError, match="neither"):
        open_database(load_settings({"database_url": "mysql://x@y/z"}, environ={}))


@pytest.mark.parametrize("url", ["postgresql://forest:s3cret@db:5432/forest",
                                 "postgresql://forest@db/forest?sslmode=require&password=s3cret",
                                 "host=db dbname=forest password=s3cret"])
def test_a_url_is_shown_without_its_password(url):
    from forest.config import load_settings as settings_of, without_password

    assert "s3cret" not in without_password(url) and "***" in without_password(url)
    assert "s3cret" not in str(settings_of({"database_url": url}, environ={}).describe())


def test_sqlite_urls_name_a_file(tmp_path):
    db = open_database(load_settings({"database_url": f"sqlite:///{tmp_path}/other.sqlite3"}, environ={}))
    assert isinstance(db, SQLiteDatabase) and db.path == tmp_path / "other.sqlite3"
    db.close()


def test_question_marks_become_parameters_outside_quotes_only():
    assert pyformat("SELECT ? FROM t WHERE a = '?' AND b LIKE 'x%' AND \"c?\" = ?") == \
        "SELECT %s FROM t WHERE a = '?' AND b LIKE 'x%%' AND \"c?\" = %s"
    assert pyformat("SELECT 'it''s ?', ?") == "SELECT 'it''s ?', %s"


def test_postgres_ddl_only_rewrites_table_definitions():
    script = "CREATE TABLE t (\n id INTEGER PRIMARY KEY AUTOINCREMENT,\n x REAL,\n b BLOB,\n s TEXT\n);\n" \
             "UPDATE t SET s = 'TEXT REAL';\n"
    out = postgres_ddl(script)
    assert "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY" in out and "DOUBLE PRECISION" in out
    assert "BYTEA" in out and 'TEXT COLLATE "C"' in out and "SET s = 'TEXT REAL'" in out


@pytest.fixture(params=["sqlite", "postgres"])
def database(request, tmp_path):
    if request.param == "sqlite":
        db = SQLiteDatabase(tmp_path / "forest.sqlite3")
    else:
        db = PostgresDatabase(request.getfixturevalue("postgres_url"))
    yield db
    db.close()


def test_rows_read_by_position_and_by_name(database):
    with database.transaction() as conn:
        archive = conn.execute("INSERT INTO archives (model_id, name, settings) VALUES (?, ?, ?) RETURNING id",
                               ("alice", "paper", "{}")).fetchone()[0]
    row = database.query_one("SELECT id, model_id, name FROM archives WHERE id = ?", (archive,))
    assert row[0] == row["id"] == archive and row["model_id"] == "alice"
    assert dict(row) == {"id": archive, "model_id": "alice", "name": "paper"} and list(row.keys()) == ["id", "model_id", "name"]
    assert database.query_tuples("SELECT id, name FROM archives") == [(archive, "paper")]


def test_reserved_id_blocks_never_overlap(database):
    blocks: list[range] = []
    lock = threading.Lock()

    def reserve() -> None:
        for size in (3, 50, 1, 7):
            with database.transaction() as conn:
                base = database.reserve_ids(conn, "memory_nodes", size)
            with lock:
                blocks.append(range(base, base + size))

    threads = [threading.Thread(target=reserve) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    taken = [i for block in blocks for i in block]
    assert len(taken) == len(set(taken)) == 4 * (3 + 50 + 1 + 7)


@pytest.mark.parametrize("value", ["Berlin", 3, 2.5, True])
def test_json_filters_match_the_same_values(database, value):
    with database.transaction() as conn:
        for metadata in ({"city": value}, {"city": "Paris"}, {"other": value}):
            conn.execute("INSERT INTO workspace_items (model_id, session_id, kind, text, source, created_at) "
                         "VALUES ('m', 's', 'finding', ?, '', 0)", (json.dumps(metadata),))
    condition, params = database.json_equals("text", "city", value)
    found = database.query(f"SELECT text FROM workspace_items WHERE {condition}", params)
    assert [json.loads(r[0]) for r in found] == [{"city": value}]


def test_a_transaction_that_fails_keeps_nothing(database):
    with pytest.raises(RuntimeError):
        with database.transaction() as conn:
            conn.execute("INSERT INTO archives (model_id, name, settings) VALUES ('m', 'a', '{}')")
            raise RuntimeError("midway")
    assert database.query_one("SELECT count(*) FROM archives")[0] == 0


def test_the_writer_lock_is_taken_by_one_holder_at_a_time(database):
    first, second = database.writer_lock(), database.writer_lock()
    assert first.acquire(wait=False)
    outcome = []
    thread = threading.Thread(target=lambda: outcome.append(second.acquire(wait=False)))
    thread.start()
    thread.join()
    assert outcome == [False]
    first.release()
    assert second.acquire(wait=False)
    second.release()


def process_running(pid: int) -> bool:
    """Whether a local process is alive (an exited one waiting to be reaped is not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def test_the_pool_checks_a_connection_without_a_query_and_replaces_one_the_server_ended(postgres_url, monkeypatch):
    """A call's queries are its only round trips (psycopg_pool's own check sent one more per
    checkout); a pooled connection the server ended, as a restart ends them all, is not handed out."""
    import time

    import psycopg

    db = PostgresDatabase(postgres_url, pool_size=1)
    try:
        sent = []
        execute = psycopg.Connection.execute
        monkeypatch.setattr(psycopg.Connection, "execute",
                            lambda self, query, *args, **kwargs: sent.append(query) or execute(self, query, *args, **kwargs))
        for _ in range(3):
            assert db.query_one("SELECT 1")[0] == 1
        assert sent == ["SELECT 1"] * 3
        monkeypatch.undo()
        pid = db.query_one("SELECT pg_backend_pid()")[0]
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            # Gone from pg_stat_activity is not yet gone: the backend closes its socket when its
            # process exits, and only then can a check tell (the embedded server runs here).
            while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone() \
                    or process_running(pid):
                time.sleep(0.01)
        with db.transaction() as conn:   # a transaction is not tried again: its connection must be a live one
            assert conn.execute("SELECT pg_backend_pid()").fetchone()[0] != pid
    finally:
        db.close()
