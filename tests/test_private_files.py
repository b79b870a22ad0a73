"""The store is its owner's alone: a new data directory is 0700 and every file in it 0600 (the
SQLite database, its WAL and shared memory, Chroma's files, vector snapshots, kept PDFs), so
another local user cannot read it (checked as user nobody, for real); `forest doctor` reports a
looser mode and `forest doctor --repair` tightens it."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pymupdf
import pytest

from testkit.processes import forest_env
from testkit.topics import topic_text

pytestmark = pytest.mark.slow  # every test here takes 1 s of CPU or more

FOREST = str(Path(sys.executable).parent / "forest")


@pytest.fixture
def usual_umask():
    """The umask most systems give (files 0644, directories 0755): what made stores readable."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def _pdf(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    for n, line in enumerate(topic_text("volcanoes").split(". ")):
        page.insert_text((50, 80 + 16 * n), line[:90], fontname="helv", fontsize=10)
    doc.save(path)
    return path


def _forest(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([FOREST, *args], capture_output=True, text=True, timeout=300, env=forest_env(data_dir))


def modes(data_dir: Path) -> dict[str, str]:
    return {str(p.relative_to(data_dir)) or ".": f"{stat.S_IMODE(p.lstat().st_mode):04o}"
            for p in [data_dir, *data_dir.rglob("*")]}


def test_a_new_store_is_private_from_its_first_byte(tmp_path, usual_umask):
    data_dir = tmp_path / "store"
    for args in (("ingest", str(_pdf(tmp_path / "volcanoes.pdf")), "--model-id", "m"),
                 ("personal", "process", "My sister Mia lives in Lisbon.", "--user-id", "ann"),
                 ("retrieve", "magma", "--model-id", "m")):  # a short command: takes the vector snapshots
        done = _forest(data_dir, *args)
        assert done.returncode == 0, done.stderr
    seen = modes(data_dir)
    assert any(name.startswith("chroma/") for name in seen) and any(name.startswith("sources/") for name in seen)
    assert any(name.startswith("chroma.snapshots/") for name in seen) and "forest.sqlite3" in seen
    loose = {name: mode for name, mode in seen.items()
             if mode != ("0700" if (data_dir / name).is_dir() else "0600")}
    assert loose == {}


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("runuser"), reason="needs root to act as user nobody")
def test_another_local_user_cannot_read_the_store(tmp_path, usual_umask):
    """What was reported: another account reading the memories with sqlite3."""
    tmp_path.chmod(0o755)  # the store's parent is open to all: only the store itself is private
    data_dir = tmp_path / "store"
    assert _forest(data_dir, "personal", "add", "My PIN hint is my cat's name", "--user-id", "ann").returncode == 0
    database = data_dir / "forest.sqlite3"
    attempt = subprocess.run(["runuser", "-u", "nobody", "--", "sqlite3", str(database),
                              "select memory from personal_memories"], capture_output=True, text=True, timeout=60)
    assert attempt.returncode != 0 and "cat's name" not in attempt.stdout
    assert subprocess.run(["runuser", "-u", "nobody", "--", "cat", str(database)], capture_output=True,
                          timeout=60).returncode != 0


def test_doctor_reports_looser_modes_and_repair_tightens_them(tmp_path, usual_umask):
    data_dir = tmp_path / "store"
    assert _forest(data_dir, "personal", "add", "I like jazz", "--user-id", "ann").returncode == 0
    assert _forest(data_dir, "doctor").returncode == 0
    # what a store made before looked like
    data_dir.chmod(0o755)
    (data_dir / "forest.sqlite3").chmod(0o644)
    checked = _forest(data_dir, "doctor")
    assert checked.returncode == 1
    assert "readable by other users" in checked.stdout and "forest.sqlite3 0644" in checked.stdout
    assert f"{data_dir} 0755" in checked.stdout
    repaired = _forest(data_dir, "doctor", "--repair")
    assert repaired.returncode == 0 and "repaired" in repaired.stdout
    assert modes(data_dir)["."] == "0700" and modes(data_dir)["forest.sqlite3"] == "0600"
    assert _forest(data_dir, "doctor").returncode == 0
