"""Connections follow their threads: many short-lived threads (a Streamlit rerun each) do not pile up
SQLite connections or file handles."""
import os
import threading
from pathlib import Path

from forest.storage.sql.sqlite import POOL_SIZE, SQLiteDatabase as Database


def _handles_on(path: Path) -> int:
    """Open file descriptors of this process on the database, its WAL or its shared memory."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith(str(path))
        except OSError:
            pass
    return count


def test_short_lived_threads_do_not_accumulate_connections(tmp_path):
    path = tmp_path / "forest.sqlite3"
    db = Database(path)
    with db.transaction() as conn:
        conn.execute("CREATE TABLE hits (n INTEGER)")
    errors: list[BaseException] = []

    def rerun(n: int) -> None:
        try:
            with db.transaction() as conn:
                conn.execute("INSERT INTO hits VALUES (?)", (n,))
            assert db.query_one("SELECT COUNT(*) FROM hits WHERE n = ?", (n,))[0] == 1
        except BaseException as exc:  # reported below: an assertion in a thread does not fail the test
            errors.append(exc)

    for batch in range(50):  # 200 threads, 4 alive at a time
        threads = [threading.Thread(target=rerun, args=(batch * 4 + i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors
    assert db.query_one("SELECT COUNT(*) FROM hits")[0] == 200
    # The main thread's connection plus at most POOL_SIZE idle ones, not 200.
    assert db.open_connections <= POOL_SIZE + 1 + 4, db.open_connections
    assert _handles_on(path) <= 3 * (POOL_SIZE + 5), _handles_on(path)
    db.close()
    assert db.open_connections == 0 and _handles_on(path) == 0


def test_live_threads_keep_their_own_connection_and_a_dead_ones_transaction_never_commits(tmp_path):
    db = Database(tmp_path / "forest.sqlite3")
    with db.transaction() as conn:
        conn.execute("CREATE TABLE t (n INTEGER)")
    seen: dict[str, object] = {}
    ready, done = threading.Event(), threading.Event()

    def holder() -> None:
        seen["holder"] = db.connection()
        ready.set()
        done.wait(10)

    def abandoned() -> None:  # begins a transaction and ends without COMMIT or ROLLBACK
        conn = db.connection()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t VALUES (1)")

    live = threading.Thread(target=holder)
    live.start()
    ready.wait(10)
    dead = threading.Thread(target=abandoned)
    dead.start()
    dead.join()

    def reader() -> None:
        seen["reader"] = db.connection()
        seen["rows"] = db.query_one("SELECT COUNT(*) FROM t")[0]

    later = threading.Thread(target=reader)
    later.start()
    later.join()
    assert seen["reader"] is not seen["holder"]
    assert seen["rows"] == 0
    with db.transaction() as conn:  # the write lock was released with the rollback
        conn.execute("INSERT INTO t VALUES (2)")
    done.set()
    live.join()
    db.close()
