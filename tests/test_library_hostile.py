"""`forest library import` of a hostile or clumsy library, along the CLI as a person runs it: a file
the library names that is a FIFO or a device never hangs the import, a Zotero library reads nothing
outside its storage/<key>/ folders, a relative linked path is a clear refusal, each refusal is
reported per item while the rest is imported, a .bib field of megabytes is cut with a note, and
two imports of one folder at once give each document once.

With FOREST_LIBRARY_TABLE=<file> the refusals are written there as JSON for bench/bad_input_table.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from testkit.processes import forest_env
from testkit.library import paper
from testkit.zotero_factory import IMPORTED_FILE, LINKED_FILE, ZoteroLibrary

pytestmark = pytest.mark.slow  # every test here takes 1 s of CPU or more

FOREST = str(Path(sys.executable).parent / "forest")
TIMEOUT = 240   # a hanging import is a failure, not a stuck suite
# With FOREST_LIBRARY_TABLE=<file>, what each refusal said is written there as JSON;
# bench/bad_input_table.py prints it beside the other bad input.
OBSERVED: dict[str, dict[str, dict[str, str]]] = {}


@pytest.fixture(scope="module", autouse=True)
def write_observed() -> Iterator[None]:
    yield
    if target := os.environ.get("FOREST_LIBRARY_TABLE"):
        Path(target).write_text(json.dumps({"rows": OBSERVED}, ensure_ascii=False, indent=1), encoding="utf-8")


def observe(row: str, report: dict, title: str, scratch: Path) -> None:
    """The refusal of the item `title`, its scratch folder shown as "…"."""
    OBSERVED[row] = {"CLI": {"how": "refused", "message": missing_reasons(report)[title].replace(str(scratch), "…")}}


def run_import(library: Path, data_dir: Path, cwd: Path | None = None, **settings: str) -> dict:
    done = subprocess.run([FOREST, "library", "import", str(library), "--model-id", "lab", "--json"],
                          env=forest_env(data_dir, FOREST_CHUNK_SIZE="300", **settings), capture_output=True,
                          text=True, timeout=TIMEOUT, cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert "internal error" not in done.stdout + done.stderr
    return json.loads(done.stdout)


def missing_reasons(report: dict) -> dict[str, str]:
    return {m["title"]: m["reason"] for m in report["missing"]}


def stored_bytes(data_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in data_dir.rglob("*") if p.is_file())


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "pipes" / "p.pdf"
    path.parent.mkdir()
    os.mkfifo(path)
    return path


def test_a_bib_naming_a_fifo_and_a_device_imports_the_rest_without_hanging(tmp_path, fifo):
    paper(tmp_path / "papers" / "jazz.pdf", "jazz")
    bib = tmp_path / "refs.bib"
    bib.write_text(f"""
@article{{buck2018, author = {{Buck, Ann}}, title = {{Jazz}}, year = {{2018}}, file = {{papers/jazz.pdf}}}}
@article{{pipe2019, author = {{Pipe, Pam}}, title = {{Pipe}}, year = {{2019}}, file = {{{fifo}}}}}
@article{{zero2020, author = {{Zero, Zed}}, title = {{Zeros}}, year = {{2020}}, file = {{:/dev/zero:PDF}}}}
""", encoding="utf-8")
    report = run_import(bib, tmp_path / "store")
    assert report["counts"]["imported"] == 1 and report["counts"]["missing"] == 2
    reasons = missing_reasons(report)
    assert reasons["Pipe"] == f"{fifo} is a named pipe (FIFO), not a file"
    assert reasons["Zeros"] == "/dev/zero is a character device, not a file"
    observe(".bib file field naming a FIFO", report, "Pipe", tmp_path)
    observe(".bib file field naming /dev/zero", report, "Zeros", tmp_path)


def zotero_with(tmp_path: Path, *attachments: tuple[str, int, str]) -> Path:
    """A Zotero data directory with one good paper and an item per (key, link mode, path)."""
    data_dir = tmp_path / "Zotero"
    library = ZoteroLibrary(data_dir)
    good = library.item("journalArticle", "GOOD2018", {"title": "Jazz and Its Origins", "date": "2018-00-00 2018"},
                        creators=(("Ann", "Buck", "author"),))
    library.attachment("GOODPDF1", good, IMPORTED_FILE, "storage:jazz.pdf", "Full Text PDF",
                       content=paper(tmp_path / "scratch" / "jazz.pdf", "jazz").read_bytes())
    for key, link_mode, path in attachments:
        item = library.item("journalArticle", key, {"title": f"Item {key}", "date": "2019-00-00 2019"},
                            creators=(("Eve", "Hacker", "author"),))
        library.attachment(f"{key[:4]}PDF1", item, link_mode, path, "Full Text PDF")
    library.close()
    return data_dir


def secret_paper(tmp_path: Path) -> Path:
    """A PDF outside the data directory whose text must never reach the store."""
    return paper(tmp_path / "out" / "secret.pdf", "volcanoes", marker="SECRETMARKER 7351")


def test_a_zotero_stored_file_named_outside_its_folder_is_refused(tmp_path):
    secret_paper(tmp_path)
    data_dir = zotero_with(tmp_path, ("ESCAPE01", IMPORTED_FILE, "storage:../../../out/secret.pdf"))
    (data_dir / "storage" / "ESCAPDF1").mkdir(parents=True)
    report = run_import(data_dir, tmp_path / "store")
    assert report["counts"]["imported"] == 1
    assert "is outside storage/ESCAPDF1/" in missing_reasons(report)["Item ESCAPE01"]
    observe("Zotero stored file storage:../../../out/secret.pdf", report, "Item ESCAPE01", tmp_path)
    assert b"SECRETMARKER" not in stored_bytes(tmp_path / "store")


def test_a_symlink_in_zotero_storage_to_a_file_outside_is_refused(tmp_path):
    secret = secret_paper(tmp_path)
    data_dir = zotero_with(tmp_path, ("LINKED01", IMPORTED_FILE, "storage:paper.pdf"))
    folder = data_dir / "storage" / "LINKPDF1"
    folder.mkdir(parents=True)
    (folder / "paper.pdf").symlink_to(secret)
    report = run_import(data_dir, tmp_path / "store")
    assert report["counts"]["imported"] == 1
    assert "is outside storage/LINKPDF1/" in missing_reasons(report)["Item LINKED01"]
    observe("Zotero storage/ symlink to a file outside", report, "Item LINKED01", tmp_path)
    assert b"SECRETMARKER" not in stored_bytes(tmp_path / "store")


def test_a_zotero_linked_fifo_is_refused_without_hanging(tmp_path, fifo):
    data_dir = zotero_with(tmp_path, ("PIPEITEM", LINKED_FILE, str(fifo)))
    report = run_import(data_dir, tmp_path / "store")
    assert report["counts"]["imported"] == 1
    assert missing_reasons(report)["Item PIPEITEM"] == f"linked file {fifo} is a named pipe (FIFO), not a file"
    observe("Zotero linked file that is a FIFO", report, "Item PIPEITEM", tmp_path)


def test_a_relative_zotero_linked_path_is_a_clear_refusal_of_its_item(tmp_path):
    data_dir = zotero_with(tmp_path, ("RELATIVE", LINKED_FILE, "papers/relative.pdf"))
    paper(tmp_path / "papers" / "relative.pdf", "volcanoes")   # there from where the CLI runs
    report = run_import(data_dir, tmp_path / "store", cwd=tmp_path)
    assert report["counts"]["imported"] == 1 and report["counts"]["failed"] == 0
    assert missing_reasons(report)["Item RELATIVE"] == \
        "linked file 'papers/relative.pdf' is a relative path, which Zotero never stores"
    observe("Zotero linked file with a relative path", report, "Item RELATIVE", tmp_path)


def test_a_bib_with_megabytes_in_one_field_reads_in_seconds_and_says_it_was_cut(tmp_path):
    paper(tmp_path / "papers" / "jazz.pdf", "jazz")
    bib = tmp_path / "refs.bib"
    abstract = "caf{\\'e} -- " * 300_000          # 3.6 MB of LaTeX: minutes before the cut
    bib.write_text(f"@article{{buck2018, author = {{Buck, Ann}}, title = {{Jazz}}, year = {{2018}}, "
                   f"abstract = {{{abstract}}}, file = {{papers/jazz.pdf}}}}", encoding="utf-8")
    report = run_import(bib, tmp_path / "store")
    assert report["counts"]["imported"] == 1
    assert report["notes"] == [{"title": "Jazz", "key": "buck2018",
                                "note": f"field abstract cut from {len(abstract):,} to 10,000 characters"}]
    OBSERVED[".bib with a 3.6 MB LaTeX field"] = {"CLI": {"how": "imported, noted",
                                                          "message": report["notes"][0]["note"]}}


@pytest.mark.parametrize("database", ["embedded", "postgres"])
def test_two_concurrent_imports_of_one_folder_give_each_document_once(tmp_path, request, database):
    folder = tmp_path / "papers"
    paper(folder / "jazz.pdf", "jazz")
    paper(folder / "lava.pdf", "volcanoes")
    data_dir = tmp_path / "store"
    settings = {} if database == "embedded" else {"FOREST_DATABASE_URL": request.getfixturevalue("postgres_url"),
                                                   "FOREST_VECTOR_STORE": "pgvector"}
    reports: list[dict] = []
    runs = [threading.Thread(target=lambda: reports.append(run_import(folder, data_dir, **settings)))
            for _ in range(2)]
    for run in runs:
        run.start()
    for run in runs:
        run.join()
    assert len(reports) == 2
    listed = subprocess.run([FOREST, "archives", "--model-id", "lab", "--json"], env=forest_env(data_dir, **settings),
                            capture_output=True, text=True, timeout=TIMEOUT)
    assert sorted(a["name"] for a in json.loads(listed.stdout)) == ["jazz", "lava"]
    counts = [r["counts"] for r in reports]
    assert sum(c["imported"] for c in counts) == 2
    assert all(c["imported"] + c["already"] + c["unchanged"] == 2 and c["failed"] == 0 for c in counts)
