"""Schema migrations upgrade old stores; many readers and one writer share one MemoryForest."""
import random
import sqlite3
import sys
import threading

import numpy as np
import pytest

from testkit.topics import topic_text
from forest.models import embedders
from forest.storage.sql.sqlite import SQLiteDatabase as Database
from forest.storage.sql.migrations import LATEST_VERSION
from keyword_embedder import KeywordEmbedder


def test_a_store_made_by_schema_1_is_upgraded_and_keeps_working(tmp_path, make_forest):
    data_dir = tmp_path / "old"
    old = Database(data_dir / "forest.sqlite3", upto_version=1)
    with old.transaction() as conn:
        conn.execute("INSERT INTO archives (id, model_id, name, status) VALUES (1, 'm', 'old', 'ready')")
        conn.execute("INSERT INTO memory_nodes (id, archive_id, parent_id, path, depth, node_type, content, summary, "
                     "leaf_index) VALUES (1, 1, NULL, '1/', 0, 'LEAF_CHUNK', 'old text', 'old summary', 0)")
    assert old.schema_version == 1
    old.close()

    forest = make_forest(data_dir=data_dir)
    assert forest.db.schema_version == LATEST_VERSION
    node = forest.node("m", 1)
    assert (node.content, node.summary_source, node.first_leaf, node.last_leaf) == ("old text", "unknown", 0, 0)
    assert [a.name for a in forest.archives("m")] == ["old"]
    # New builds never reuse old ids.
    new = forest.ingest_text("m", "new", topic_text("jazz"))
    assert min(n.id for n in forest.tree("m", new.id)) > 1


def test_a_newer_schema_is_refused_with_a_clear_message(tmp_path):
    path = tmp_path / "future.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 5}")
    import pytest

    from forest import ForestError

    with pytest.raises(ForestError, match="newer version of forest"):
        Database(path)


@pytest.mark.slow
def test_readers_keep_working_while_one_thread_builds(forest):
    first = forest.ingest_text("m", "first", topic_text("volcanoes"))
    errors: list[BaseException] = []
    stop = threading.Event()
    reads = {"n": 0}

    def reader():
        try:
            while not stop.is_set():
                assert forest.retrieve("m", "volcano eruption forecast", top_k=4)
                assert forest.tree("m", first.id)
                listed = forest.archives("m")
                assert listed and all(a.status == "ready" for a in listed)
                reads["n"] += 1
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        second = forest.ingest_text("m", "second", topic_text("jazz", "photosynthesis"))
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not errors, errors
    assert reads["n"] > 0
    assert {a.id for a in forest.archives("m")} == {first.id, second.id}
    assert forest.doctor().healthy


@pytest.mark.slow
def test_the_query_embedding_cache_is_shared_safely_by_threads(monkeypatch):
    """Server threads embed queries at once: with an unlocked dict one thread evicted the key
    another had just found (KeyError), or iterated it while it changed (RuntimeError)."""
    monkeypatch.setattr(embedders, "QUERY_CACHE_SIZE", 2)  # evictions all the time
    embedder = KeywordEmbedder(["a", "b", "c", "d"])
    texts = ["a", "b", "c", "d", "a b", "c d"]
    expected = {t: embedder.embed_passages([t])[0] for t in texts}
    errors: list[str] = []

    def ask(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(3000):
                text = rng.choice(texts)
                assert np.allclose(embedder.embed_query(text), expected[text])
        except Exception as exc:
            errors.append(repr(exc))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        threads = [threading.Thread(target=ask, args=(seed,)) for seed in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert len(embedder._query_cache._vectors) <= 2


# What each released migration runs, on each database (SHA-256 of its scripts, first 20 hex digits).
# A released migration is never edited: stores already past it would never run the new text.
# A new migration adds its line here.
RELEASED_MIGRATIONS = {
    1: "deb962a36127f7d989a8",
    2: "c1f7ae60a02f2c01717d",
    3: "38271604edc95260021e",
    4: "1334135c796a3e494efa",
    5: "89b2425edaf46c520b22",
    6: "7fda05fb82f0f8711f75",
    7: "f9adfc6b4dd4f5f55879",
    8: "a0b43adc2e2b920eb6d2",
    9: "939a14ecb2e834c32c51",
    10: "047e41ccefb651edd585",
    11: "108aead75142db9f23c8",
    12: "a525b820bb37726ee809",
    13: "31be5d701a6425fd5ca8",
}


def test_released_migrations_run_the_text_they_were_released_with():
    import hashlib

    from forest.storage.sql.migrations import MIGRATIONS

    ran = {m.version: hashlib.sha256("\0".join(m.scripts("sqlite") + ["--"] + m.scripts("postgres")).encode())
           .hexdigest()[:20] for m in MIGRATIONS}
    changed = [v for v, digest in RELEASED_MIGRATIONS.items() if ran.get(v) != digest]
    assert not changed, f"released migrations {changed} changed: add a new migration instead"
    assert sorted(ran) == list(range(1, len(ran) + 1)), "migrations are numbered 1, 2, ... with no gap"
    unrecorded = {v: digest for v, digest in ran.items() if v not in RELEASED_MIGRATIONS}
    assert not unrecorded, f"record the new migration's digest in RELEASED_MIGRATIONS: {unrecorded}"
