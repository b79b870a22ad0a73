"""`forest library markdown FOLDER` and `forest export -o` write where they are told and nowhere
else (issue 36, item 4): a symbolic link planted in FOLDER is not written through, sessions whose
ids make one name stay separate notes, names are bounded in bytes (a title of 100 four-byte
characters exports), a failed export leaves FOLDER as it was, and files are 0600. Through the
real CLI, as the failures were found. With FOREST_EXPORT_TABLE=<file> the CLI's answers are written
there as JSON (bench/bad_input_table.py prints them as rows of docs/security.md's table)."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.processes import forest_env

pytestmark = pytest.mark.slow  # every test here takes 1 s of CPU or more

FOREST = str(Path(sys.executable).parent / "forest")
WIDE = "\U00020000" * 100   # a CJK letter of four UTF-8 bytes: 400 bytes, over any file system's 255


OBSERVED: dict[str, dict[str, dict[str, str]]] = {}


def cli(data_dir: Path, *args: str, row: str) -> subprocess.CompletedProcess:
    """The CLI's answer, kept as `row` of the bad-input table."""
    done = subprocess.run([FOREST, *args], capture_output=True, text=True, timeout=300, env=forest_env(data_dir))
    said = (done.stderr if done.returncode else done.stdout).strip().splitlines()
    OBSERVED[row] = {"CLI": {"how": f"exit {done.returncode}", "message": said[-1] if said else ""}}
    return done


@pytest.fixture(scope="module", autouse=True)
def write_observed() -> Iterator[None]:
    yield
    if target := os.environ.get("FOREST_EXPORT_TABLE"):
        Path(target).write_text(json.dumps({"faces": ["CLI"], "rows": OBSERVED}, ensure_ascii=False, indent=1),
                                encoding="utf-8")


@pytest.fixture
def store(make_forest, tmp_path, usual_umask) -> Path:
    """Three sessions whose ids all slug to 'a-b', one named by 100 wide characters, and a paper
    titled with them: written, then closed for the CLI."""
    data_dir = tmp_path / "store"
    forest = make_forest(data_dir)
    for session in ("a/b", "a b", "a-b", WIDE):
        forest.research.add_note("m", session, "finding", f"What session {session} found.")
    forest.ingest_text("m", WIDE, "Volcanoes erupt when magma rises through the crust.")
    forest.close()
    return data_dir


@pytest.fixture
def usual_umask():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_sessions_that_make_one_name_are_three_notes_and_wide_titles_export(store, tmp_path):
    folder = tmp_path / "vault"
    done = cli(store, "library", "markdown", str(folder), "--model-id", "m",
               row="markdown export: sessions a/b, a b, a-b and a 100 four-byte-character title")
    assert done.returncode == 0, done.stderr
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*.md"))
    assert done.stdout.startswith(f"wrote {len(files)} notes under")
    sessions = sorted(f for f in files if f.startswith("sessions/"))
    assert len(sessions) == 4
    assert sessions[:3] == ["sessions/a-b-2.md", "sessions/a-b-3.md", "sessions/a-b.md"]
    found = {path.read_text(encoding="utf-8").splitlines()[0] for path in (folder / "sessions").iterdir()}
    assert found == {f"# Research session {s}" for s in ("a/b", "a b", "a-b", WIDE)}
    assert all(len(name.encode()) <= 255 for path in folder.rglob("*") for name in [path.name])
    paper = next((folder / "papers").iterdir())
    assert paper.name.startswith("\U00020000") and len(paper.name.encode()) <= 110
    index = (folder / "index.md").read_text(encoding="utf-8")
    assert all(f"]({f})" in index for f in files if f != "index.md")   # every link names its own note
    modes = {str(p.relative_to(folder)): stat.S_IMODE(p.stat().st_mode) for p in folder.rglob("*")}
    assert modes == {name: 0o700 if (folder / name).is_dir() else 0o600 for name in modes}
    assert not [p for p in folder.iterdir() if p.name.startswith(".forest-export-")]


def test_a_symlink_planted_in_the_folder_is_replaced_not_written_through(store, tmp_path):
    folder = tmp_path / "vault"
    folder.mkdir()
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me", encoding="utf-8")
    (folder / "index.md").symlink_to(precious)
    done = cli(store, "library", "markdown", str(folder), "--model-id", "m",
               row="markdown export: FOLDER/index.md a symlink to another file")
    assert done.returncode == 0, done.stderr
    assert precious.read_text(encoding="utf-8") == "keep me"
    assert not (folder / "index.md").is_symlink() and (folder / "index.md").read_text().startswith("# m")


def test_a_symlinked_subfolder_is_refused_and_nothing_is_written(store, tmp_path):
    folder, elsewhere = tmp_path / "vault", tmp_path / "elsewhere"
    folder.mkdir()
    elsewhere.mkdir()
    (folder / "sessions").symlink_to(elsewhere, target_is_directory=True)
    done = cli(store, "library", "markdown", str(folder), "--model-id", "m",
               row="markdown export: FOLDER/sessions a symlink to another folder")
    assert done.returncode != 0 and "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert "symbolic link" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert list(elsewhere.iterdir()) == []
    assert sorted(p.name for p in folder.iterdir()) == ["sessions"]   # no partial export, no staging left


def test_a_failed_export_leaves_the_folder_as_it_was(store, tmp_path):
    """A note whose place is taken by a folder: refused before anything is moved in."""
    folder = tmp_path / "vault"
    (folder / "index.md").mkdir(parents=True)
    done = cli(store, "library", "markdown", str(folder), "--model-id", "m",
               row="markdown export: a note's place taken by a folder")
    assert done.returncode != 0 and "internal error" not in done.stderr and "index.md" in done.stderr
    assert [str(p.relative_to(folder)) for p in folder.rglob("*")] == ["index.md"]


def test_an_archive_exported_to_a_file_is_private(store, tmp_path):
    out = tmp_path / "archive.json"
    out.write_text("an older export")
    out.chmod(0o644)
    done = cli(store, "export", "1", "--model-id", "m", "-o", str(out), row="forest export -o FILE (umask 022)")
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and json.loads(out.read_text())["nodes"]
