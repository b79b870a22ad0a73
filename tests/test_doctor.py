"""`forest doctor` finds and repairs drift; killed builds leave nothing visible."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT
from testkit.processes import forest_env
from testkit.topics import topic_text
from forest import MemoryForest, load_settings

pytestmark = pytest.mark.slow  # every test here takes 1 s of CPU or more


def test_missing_and_orphan_vectors_are_found_and_repaired(forest):
    archive = forest.ingest_text("m", "notes", topic_text("volcanoes", "jazz"))
    nodes = forest.tree("m", archive.id)
    ids = [n.id for n in nodes]
    leaf = next(n for n in nodes if n.node_type == "LEAF_CHUNK")
    summary = next(n for n in nodes if n.node_type == "SUMMARY_NODE")
    deleted = [leaf.id, summary.id]
    assert forest.doctor().healthy
    built = forest.vectors.get_vectors("m", deleted)

    forest.vectors.delete("m", deleted)  # behind the engine's back
    forest.vectors.upsert("m", [987654], np.ones((1, forest.embedder.dim), dtype=np.float32),
                          [{"model_id": "m", "archive_id": archive.id, "node_type": "LEAF_CHUNK", "depth": 0}])
    report = forest.doctor()
    assert not report.healthy
    assert sorted(report.missing_vectors["m"]) == sorted(deleted)
    assert report.orphan_vectors["m"] == [987654]

    forest.doctor(repair_drift=True)
    assert forest.doctor().healthy
    assert set(forest.vectors.ids("m")) == set(ids)
    # Re-embedded exactly as the build made them: a leaf from its content after its document's
    # title (its context), a summary node from its title and summary.
    stored = forest.vectors.get_vectors("m", deleted)
    assert float(stored[leaf.id] @ built[leaf.id]) > 0.999
    assert float(stored[leaf.id] @ forest.embedder.embed_passages([f"notes | {leaf.content}"])[0]) > 0.999
    assert float(stored[summary.id] @ forest.embedder.embed_passages([f"{summary.title}\n{summary.summary}"])[0]) > 0.999


def test_broken_paths_and_depths_are_rebuilt_from_parent_ids(forest):
    text = f"## Plants\n\n{topic_text('photosynthesis')}\n\n## Music\n\n{topic_text('jazz')}"
    archive = forest.ingest_text("m", "notes", text, chunk_size=200, threshold=0.0)
    before = {n.id: (n.path, n.depth) for n in forest.tree("m", archive.id)}
    leaf = next(n for n in forest.tree("m", archive.id) if n.depth >= 2)
    with forest.db.transaction() as conn:
        conn.execute("UPDATE memory_nodes SET path = '999/', depth = 7 WHERE id = ?", (leaf.id,))
    report = forest.doctor()
    assert report.bad_paths == [leaf.id]
    forest.doctor(repair_drift=True)
    assert {n.id: (n.path, n.depth) for n in forest.tree("m", archive.id)} == before


def test_a_build_killed_midway_is_invisible_and_repairable(tmp_path):
    data_dir = tmp_path / "store"
    document = tmp_path / "doc.txt"
    document.write_text(topic_text("photosynthesis", "volcanoes", "jazz"), encoding="utf-8")
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "helpers" / "build_and_die.py"),
                           str(data_dir), str(document), "victim"], env=forest_env(data_dir),
                          capture_output=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()

    forest = MemoryForest(load_settings({"data_dir": data_dir}, environ={}))
    try:
        [row] = forest.db.query("SELECT id, status FROM archives")
        assert row["status"] == "building"
        assert forest.db.query("SELECT COUNT(*) FROM memory_nodes")[0][0] > 0  # nodes were written
        assert forest.vectors.ids("victim")                                    # and some vectors
        assert forest.archives("victim") == []                                 # yet nothing is visible
        assert forest.search("victim", "volcano eruption", top_k=5) == []

        report = forest.doctor()
        assert report.stale_builds == [row["id"]]
        forest.doctor(repair_drift=True)
        assert forest.doctor().healthy
        assert forest.db.query("SELECT COUNT(*) FROM memory_nodes")[0][0] == 0
        assert forest.vectors.ids("victim") == []
    finally:
        forest.close()


def test_cli_ingest_killed_at_any_moment_then_doctor_repair(tmp_path):
    """A real `forest ingest` process, SIGKILLed as soon as its archive row appears."""
    data_dir = tmp_path / "store"
    document = tmp_path / "long.txt"
    document.write_text("\n\n".join([topic_text("photosynthesis", "volcanoes", "jazz")] * 4), encoding="utf-8")
    forest_cli = Path(sys.executable).parent / "forest"
    process = subprocess.Popen([str(forest_cli), "ingest", str(document), "--model-id", "victim",
                                "--chunk-size", "200"], env=forest_env(data_dir),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import sqlite3

    deadline = time.time() + 120
    while time.time() < deadline and process.poll() is None:
        try:
            with sqlite3.connect(data_dir / "forest.sqlite3", timeout=1) as conn:
                if conn.execute("SELECT COUNT(*) FROM archives").fetchone()[0]:
                    break
        except sqlite3.Error:
            pass
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)

    env = forest_env(data_dir)
    visible = subprocess.run([str(forest_cli), "archives", "--model-id", "victim", "--json"], env=env,
                             capture_output=True, text=True, timeout=120)
    # Killed while building: nothing listed. (Should the build have won the race, it is complete.)
    assert visible.returncode == 0, visible.stderr
    assert visible.stdout.strip() == "[]" or '"status": "ready"' in visible.stdout
    repaired = subprocess.run([str(forest_cli), "doctor", "--repair"], env=env, capture_output=True, text=True,
                              timeout=300)
    assert repaired.returncode == 0, repaired.stderr
    check = subprocess.run([str(forest_cli), "doctor", "--json"], env=env, capture_output=True, text=True,
                           timeout=120)
    assert check.returncode == 0 and '"healthy": true' in check.stdout
    assert os.path.exists(data_dir / "forest.sqlite3")


def test_doctor_reports_the_personal_write_queue_from_another_process(forest):
    personal = forest.personal
    personal.process_memory("ann", "I live in Lisbon and I work as a marine biologist.")
    personal.process_memory("ann", "My sister Mia is a doctor in Porto.")
    assert personal.drain()
    personal.stop()
    # An item that met an error and waits for its retry, as the worker leaves one.
    with forest.db.transaction() as conn:
        conn.execute("UPDATE personal_write_queue SET status = 'pending', attempts = 1, last_error = "
                     "'ClaudeTimeout: no answer in 60 s' WHERE id = (SELECT max(id) FROM personal_write_queue)")
    queue = forest.doctor().write_queue
    assert (queue["pending"], queue["retrying"], queue["done"]) == (1, 1, 1)
    assert queue["last_error"] == "ClaudeTimeout: no answer in 60 s"
    forest.close()
    shown = subprocess.run([sys.executable, "-m", "forest.cli", "doctor"], env=forest_env(forest.settings.data_dir),
                           capture_output=True, text=True, timeout=120)
    assert "personal write queue: 1 pending (1 waiting to retry), 1 done, 0 failed" in shown.stdout
    assert "newest error: ClaudeTimeout: no answer in 60 s" in shown.stdout


def test_repairing_an_unfinished_build_also_removes_the_pdf_it_kept(forest, tmp_path):
    # a build that died after copying its PDF in: doctor removes its rows, vectors and the copy
    from testkit.library import paper

    def dead_pid() -> int:
        child = subprocess.Popen([sys.executable, "-c", "pass"])
        child.wait()
        return child.pid

    archive = forest.ingest_file(paper(tmp_path / "jazz.pdf", "jazz"), "lab")
    assert list(forest.settings.sources_path.iterdir())
    with forest.db.transaction() as conn:
        conn.execute("UPDATE archives SET status = 'building', builder_pid = ? WHERE id = ?", (dead_pid(), archive.id))
    report = forest.doctor(repair_drift=True)
    assert report.stale_builds == [archive.id]
    assert forest.archives("lab") == [] and list(forest.settings.sources_path.iterdir()) == []
