"""Reading a researcher's library (Zotero, BibTeX, folders) and planning its import: real PDFs, a
real zotero.sqlite built from Zotero's own schema files, real .bib files parsed by bibtexparser."""
from __future__ import annotations

import json
import os
import sqlite3
import threading
from dataclasses import replace
from pathlib import Path

import bibtexparser
import pymupdf
import pytest
from bibtexparser.model import Field

from forest.library import (
    Creator, KnownDocument, LibraryEntry, LibraryError, bibtex_of, citation_key_of, file_sha256,
    library_kind, plan_import, read_bibtex, read_library, read_zotero, short_citation,
)
from forest.errors import InvalidInput
from testkit.zotero_factory import IMPORTED_FILE, IMPORTED_URL, LINKED_FILE, ZoteroLibrary


def make_pdf(path: Path, text: str) -> Path:
    """A one-page PDF; distinct text gives distinct bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text)
    doc.save(path)
    doc.close()
    return path


def pdf_bytes(text: str, tmp_path: Path) -> bytes:
    return make_pdf(tmp_path / "scratch" / "p.pdf", text).read_bytes()


def by_key(entries) -> dict[str, LibraryEntry]:
    return {e.source_key: e for e in entries}


# ---------------------------------------------------------------- Zotero

@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A home directory of its own, so no real Zotero profile is read."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("APPDATA", raising=False)
    return home


def write_profile(home: Path, data_dir: Path, base_dir: Path) -> None:
    """A Zotero profile (Linux location) whose data directory is `data_dir`."""
    profile = home / ".zotero" / "zotero" / "x1y2z3.default"
    profile.mkdir(parents=True)
    (profile / "prefs.js").write_text(
        "// Mozilla User Preferences\n"
        'user_pref("extensions.zotero.firstRun2", false);\n'
        f'user_pref("extensions.zotero.baseAttachmentPath", "{base_dir}");\n'
        f'user_pref("extensions.zotero.dataDir", "{data_dir}");\n'
        'user_pref("extensions.zotero.useDataDir", true);\n', encoding="utf-8")


@pytest.fixture
def zotero(tmp_path, home) -> Path:
    """A Zotero data directory: stored and linked PDFs, a note, tags, a nested collection, an item
    without a PDF, a trashed item, a standalone PDF, missing files, Chinese creators."""
    data_dir = tmp_path / "Zotero"
    papers = tmp_path / "Papers"         # the base directory of linked files
    library = ZoteroLibrary(data_dir)
    reading = library.collection("COLREAD1", "Reading")
    nlp = library.collection("COLNLP01", "NLP", parent_id=reading)

    buck = library.item(
        "journalArticle", "BUCK2018",
        {"title": "Ask the Right Questions: Active Question Reformulation with Reinforcement Learning",
         "date": "2018-00-00 2018", "DOI": "https://doi.org/10.48550/arXiv.1705.07830",
         "url": "https://arxiv.org/abs/1705.07830", "abstractNote": "We frame question answering as RL.",
         "publicationTitle": "ICLR"},
        creators=(("Christian", "Buck", "author"), ("Jannis", "Bulian", "author"),
                  ("Massimiliano", "Ciaramita", "author"), ("Yann", "LeCun", "editor")),
        tags=("reinforcement learning", "Question answering"), collections=(nlp,))
    library.attachment("HTMLSNAP", buck, IMPORTED_URL, "storage:snapshot.html", "Snapshot",
                       content=b"<html></html>", content_type="text/html")
    library.attachment("BUCKPDF1", buck, IMPORTED_FILE, "storage:Buck et al. - 2018 - Ask.pdf", "Full Text PDF",
                       content=pdf_bytes("Buck 2018 main text", tmp_path))
    library.attachment("BUCKSUPP", buck, IMPORTED_FILE, "storage:supplement.pdf", "Supplement",
                       content=pdf_bytes("Buck 2018 supplement", tmp_path))
    library.note("BUCKNOTE", buck, "<p>Read section 4 again</p>")

    alt = library.item("conferencePaper", "ALT2019X",
                       {"title": "Linked Paper", "date": "2019-06-00 June 2019", "extra": "Citation Key: alt2019linked"},
                       creators=(("Anna", "Alt", "author"), ("Bo", "Berg", "author")), collections=(reading,))
    make_pdf(papers / "conf" / "alt2019.pdf", "Alt 2019 linked")
    library.attachment("ALTPDF01", alt, LINKED_FILE, "attachments:conf/alt2019.pdf", "Alt 2019")

    gone = library.item("journalArticle", "GONELINK", {"title": "Moved Away", "date": "2017-00-00 2017"},
                        creators=(("Carl", "Cole", "author"),))
    library.attachment("GONEPDF1", gone, LINKED_FILE, str(tmp_path / "elsewhere" / "cole.pdf"), "Cole")

    lost = library.item("journalArticle", "LOSTSTOR", {"title": "Never Synced", "date": "2016-00-00 2016"})
    library.attachment("LOSTPDF1", lost, IMPORTED_FILE, "storage:lost.pdf", "Full Text PDF")   # no file

    library.item("book", "BOOKNOPD", {"title": "A Book Without a PDF", "date": "2001-00-00 2001"},
                 creators=(("Dora", "Dahl", "author"),))
    library.note("LONENOTE", None, "<p>A standalone note</p>")
    library.attachment("HANDOUT1", None, IMPORTED_FILE, "storage:handout.pdf", "Scanned handout",
                       content=pdf_bytes("Handout", tmp_path), collections=(reading,))

    trashed = library.item("journalArticle", "TRASHED1", {"title": "In the Trash"})
    library.attachment("TRASHPDF", trashed, IMPORTED_FILE, "storage:trash.pdf", "PDF",
                       content=pdf_bytes("Trash", tmp_path))
    library.trash(trashed)

    chinese = library.item("journalArticle", "WANG2020",
                           {"title": "深度学习综述", "date": "2020-03-15 2020-03-15"},
                           creators=(("小明", "王", "author"), ("清华大学",  "author")),
                           tags=("综述",), collections=(nlp,))
    library.attachment("WANGPDF1", chinese, IMPORTED_FILE, "storage:wang.pdf", "PDF",
                       content=pdf_bytes("Wang 2020", tmp_path))

    case = library.item("case", "BROWN154", {"caseName": "Brown v. Board of Education", "dateDecided": "1954-05-17 1954-05-17",
                                             "extra": "DOI: 10.5555/Brown.1954"},
                        creators=(("Earl", "Warren", "author"),))
    library.attachment("BROWNPDF", case, IMPORTED_FILE, "storage:brown.pdf", "PDF",
                       content=pdf_bytes("Brown v. Board", tmp_path))
    library.close()
    write_profile(home, data_dir, papers)
    return data_dir


def test_zotero_items_with_pdfs_and_their_metadata(zotero):
    reading = read_library(zotero)
    assert reading.kind == "zotero"
    entries = by_key(reading.entries)
    assert set(entries) == {"BUCK2018", "ALT2019X", "GONELINK", "LOSTSTOR", "HANDOUT1", "WANG2020", "BROWN154"}

    buck = entries["BUCK2018"]
    assert buck.title.startswith("Ask the Right Questions")
    assert [(c.last, c.first, c.creator_type) for c in buck.creators] == [
        ("Buck", "Christian", "author"), ("Bulian", "Jannis", "author"),
        ("Ciaramita", "Massimiliano", "author"), ("LeCun", "Yann", "editor")]
    assert [c.last for c in buck.authors] == ["Buck", "Bulian", "Ciaramita"]
    assert (buck.year, buck.date) == (2018, "2018")
    assert buck.doi == "10.48550/arxiv.1705.07830"
    assert buck.url == "https://arxiv.org/abs/1705.07830"
    assert buck.abstract == "We frame question answering as RL."
    assert buck.tags == ("Question answering", "reinforcement learning")
    assert buck.collections == ("Reading/NLP",)
    assert buck.item_type == "journalArticle"
    # the first PDF added is the document: not the HTML snapshot, not the supplement added later
    assert buck.path == zotero / "storage" / "BUCKPDF1" / "Buck et al. - 2018 - Ask.pdf"
    with pymupdf.open(buck.path) as doc:
        assert "Buck 2018 main text" in doc[0].get_text()

    chinese = entries["WANG2020"]
    assert [(c.last, c.first) for c in chinese.creators] == [("王", "小明"), ("清华大学", "")]
    assert (chinese.year, chinese.date, chinese.tags, chinese.collections) == (2020, "2020-03-15", ("综述",), ("Reading/NLP",))

    case = entries["BROWN154"]
    assert case.title == "Brown v. Board of Education"        # caseName is the title of a case
    assert case.year == 1954                                   # dateDecided is a case's date
    assert case.doi == "10.5555/brown.1954"                    # from Extra

    handout = entries["HANDOUT1"]                              # a standalone PDF is a document
    assert handout.title == "Scanned handout" and handout.creators == () and handout.collections == ("Reading",)
    assert entries["ALT2019X"].citation_key == "alt2019linked"

    # a note is not a document, nor is it reported; an item without a PDF is reported as skipped
    assert [(s.source_key, s.reason) for s in reading.skipped] == [("BOOKNOPD", "no PDF attachment")]


def test_zotero_linked_files_resolve_against_the_base_directory(zotero, tmp_path, home):
    alt = by_key(read_zotero(zotero).entries)["ALT2019X"]
    assert alt.path == tmp_path / "Papers" / "conf" / "alt2019.pdf" and alt.path.is_file()

    other = tmp_path / "Other"
    make_pdf(other / "conf" / "alt2019.pdf", "Alt elsewhere")
    assert by_key(read_zotero(zotero, base_dir=other).entries)["ALT2019X"].path == other / "conf" / "alt2019.pdf"

    # a profile of another data directory says nothing about this one
    prefs = next((home / ".zotero").rglob("prefs.js"))
    prefs.write_text(prefs.read_text().replace(str(zotero), str(tmp_path / "AnotherZotero")))
    alt = by_key(read_zotero(zotero).entries)["ALT2019X"]
    assert alt.path is None and "base directory" in alt.missing_reason and "not set" in alt.missing_reason


def test_a_pdf_s_own_metadata_is_read_within_the_import_s_file_limit(zotero, monkeypatch):
    # a PDF the max_file_mb setting allows is identified by its own DOI and title, not cut off at
    # the default limit (its digest was read within the setting, its metadata was not)
    import forest.library.plan as plan

    limits = []
    read = plan.read_paper_metadata
    monkeypatch.setattr(plan, "read_paper_metadata", lambda path, max_bytes: limits.append(max_bytes) or
                        read(path, max_bytes))
    plan.plan_import(read_zotero(zotero).entries, known=[], max_bytes=250_000_000)
    assert limits and set(limits) == {250_000_000}


def test_zotero_missing_files_are_reported_and_the_rest_planned(zotero):
    reading = read_zotero(zotero)
    assert {e.source_key for e in reading.missing} == {"GONELINK", "LOSTSTOR"}
    plan = plan_import(reading.entries, known=[])
    assert {e.source_key for e in plan.missing} == {"GONELINK", "LOSTSTOR"}
    reasons = {e.source_key: e.missing_reason for e in plan.missing}
    assert "elsewhere/cole.pdf does not exist" in reasons["GONELINK"]
    assert "storage/LOSTPDF1/lost.pdf" in reasons["LOSTSTOR"]
    assert {p.entry.source_key for p in plan.new} == {"BUCK2018", "ALT2019X", "HANDOUT1", "WANG2020", "BROWN154"}
    assert plan.counts() == {"new": 5, "changed": 0, "unchanged": 0, "already": 0, "replacing": 0, "missing": 2,
                             "duplicates": 0}


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_zotero_closed_library_is_read_without_writing_beside_it(zotero):
    before = listing(zotero)
    read_zotero(zotero)
    assert listing(zotero) == before          # no -wal, -shm or -journal left, database untouched


@pytest.mark.parametrize("journal_mode", ["WAL", "DELETE"])   # Zotero 7, and Zotero before WAL
def test_zotero_read_while_zotero_holds_its_exclusive_lock(zotero, tmp_path, journal_mode):
    running = ZoteroLibrary(zotero, create=False, exclusive=True, journal_mode=journal_mode)
    try:
        added = running.item("journalArticle", "NEWWHILE", {"title": "Added While Running", "date": "2024-00-00 2024"})
        running.attachment("NEWPDF01", added, IMPORTED_FILE, "storage:new.pdf", "PDF",
                           content=pdf_bytes("added while running", tmp_path))
        with pytest.raises(sqlite3.OperationalError, match="locked"):   # the lock is real: a plain reader is refused
            sqlite3.connect(f"{(zotero / 'zotero.sqlite').as_uri()}?mode=ro", uri=True, timeout=0) \
                .execute("SELECT count(*) FROM items").fetchone()
        before = listing(zotero)
        entries = by_key(read_zotero(zotero).entries)
        assert entries["NEWWHILE"].title == "Added While Running"    # committed changes still in the -wal
        assert "BUCK2018" in entries
        assert listing(zotero) == before
        running.item("journalArticle", "AFTERRD1", {"title": "Zotero Still Writes"})   # not disturbed
    finally:
        running.close()


def test_zotero_database_that_is_not_sqlite_is_a_clear_error(tmp_path):
    (tmp_path / "zotero.sqlite").write_bytes(b"not a database at all" * 20)
    with pytest.raises(LibraryError, match="not an SQLite database"):
        read_library(tmp_path)


# ---------------------------------------------------------------- BibTeX

@pytest.fixture
def bib(tmp_path) -> Path:
    """A .bib mixing the file-field formats of Zotero, Better BibTeX, JabRef, Mendeley and plain paths,
    with a missing file, a Windows path, a duplicate file, a duplicate DOI and a duplicate key."""
    folder = tmp_path / "refs"
    make_pdf(folder / "papers" / "alt2019.pdf", "Alt 2019")
    make_pdf(folder / "papers" / "plain.pdf", "Plain path")
    make_pdf(folder / "papers" / "desc.pdf", "JabRef description")
    make_pdf(folder / "papers" / "preprint.pdf", "Buck 2018 preprint")
    absolute = make_pdf(tmp_path / "zotero" / "storage" / "KEY12345" / "Buck - 2018.pdf", "Buck 2018")
    bbt = make_pdf(tmp_path / "zotero" / "storage" / "KEY67890" / "chollet.pdf", "Chollet")
    mendeley = make_pdf(tmp_path / "mendeley" / "wang_2020.pdf", "Wang 2020")
    mendeley_written = str(mendeley.parent).lstrip("/") + "/wang\\_2020.pdf"     # no leading "/", "_" escaped
    (folder / "library.bib").write_text(rf"""
@article{{buck2018,
  title = {{Ask the Right Questions: Active Question Reformulation with Reinforcement Learning}},
  author = {{Buck, Christian and Bulian, Jannis and Ciaramita, Massimiliano}},
  year = {{2018}},
  doi = {{10.48550/arXiv.1705.07830}},
  url = {{https://arxiv.org/abs/1705.07830}},
  abstract = {{We frame {{QA}} as \emph{{reinforcement learning}}.}},
  keywords = {{question answering, reinforcement learning}},
  file = {{Full Text PDF:{absolute}:application/pdf}}
}}

@inproceedings{{alt2019,
  title = {{{{\"U}}ber {{D}}eep {{L}}earning}},
  author = {{M{{\"u}}ller, J{{\"o}}rg and Fran\c{{c}}ois Chollet and {{World Health Organization}}}},
  date = {{2019-05-01}},
  keywords = {{deep learning; NLP}},
  file = {{:papers/alt2019.pdf:PDF}}
}}

@article{{chollet,
  title = {{Better BibTeX Paper}},
  author = {{Alexander Anderson and Sandy Andrews}},
  year = {{2017}},
  file = {{{bbt};/nonexistent/supplement.pdf}}
}}

@article{{wang2020,
  title = {{深度学习综述}},
  author = {{王小明 and 李华}},
  year = {{2020}},
  file = {{:{mendeley_written}:pdf}}
}}

@misc{{plain,
  title = {{Plain Path}},
  year = {{2015}},
  file = {{papers/plain.pdf}}
}}

@misc{{described,
  title = {{Described}},
  abstract = {{Gains 5% over the baseline & more
    on two datasets.}},
  file = {{Main text:papers/desc.pdf:PDF}}
}}

@article{{missing,
  title = {{Missing File}},
  author = {{Cole, Carl}},
  file = {{:papers/missing.pdf:PDF}}
}}

@article{{windows,
  title = {{On Windows}},
  file = {{:C$\backslash$:/Users/me/Mendeley Desktop/win.pdf:pdf}}
}}

@article{{buck2018copy,
  title = {{Ask the Right Questions (copy)}},
  author = {{Buck, Christian}},
  file = {{{absolute}}}
}}

@article{{buck2018preprint,
  title = {{Ask the Right Questions (preprint)}},
  doi = {{https://doi.org/10.48550/ARXIV.1705.07830}},
  file = {{papers/preprint.pdf}}
}}

@article{{plain,
  title = {{Same Key Again}},
  file = {{papers/plain.pdf}}
}}

@book{{nofile,
  title = {{No File Here}},
  author = {{Dahl, Dora}}
}}

@article{{broken,
  title = {{Unclosed
""", encoding="utf-8")
    return folder / "library.bib"


def test_bibtex_file_field_formats_and_metadata(bib, tmp_path):
    reading = read_library(bib)
    assert reading.kind == "bibtex"
    entries = {e.source_key: e for e in reading.entries if e.source_key != "plain" or e.title == "Plain Path"}
    folder = bib.parent

    buck = entries["buck2018"]      # Zotero's export: description:path:mime type
    assert buck.path == tmp_path / "zotero" / "storage" / "KEY12345" / "Buck - 2018.pdf"
    assert [(c.last, c.first) for c in buck.creators] == [("Buck", "Christian"), ("Bulian", "Jannis"),
                                                           ("Ciaramita", "Massimiliano")]
    assert (buck.year, buck.doi, buck.url) == (2018, "10.48550/arxiv.1705.07830", "https://arxiv.org/abs/1705.07830")
    assert buck.abstract == "We frame QA as reinforcement learning."
    assert buck.tags == ("question answering", "reinforcement learning")
    assert buck.citation_key == "buck2018" and buck.item_type == "article"

    alt = entries["alt2019"]        # JabRef ":path:PDF", relative to the .bib; LaTeX decoded
    assert alt.path == folder / "papers" / "alt2019.pdf"
    assert alt.title == "Über Deep Learning"
    assert [(c.last, c.first) for c in alt.creators] == [("Müller", "Jörg"), ("Chollet", "François"),
                                                         ("World Health Organization", "")]
    assert (alt.year, alt.date, alt.tags) == (2019, "2019-05-01", ("deep learning", "NLP"))

    chollet = entries["chollet"]    # Better BibTeX: plain paths joined by ";", the first one present wins
    assert chollet.path == tmp_path / "zotero" / "storage" / "KEY67890" / "chollet.pdf"
    assert [c.last for c in chollet.creators] == ["Anderson", "Andrews"]    # "and" inside names does not split

    wang = entries["wang2020"]      # Mendeley: absolute path without its "/", "\_" escaped
    assert wang.path == tmp_path / "mendeley" / "wang_2020.pdf" and wang.path.is_file()
    assert [c.last for c in wang.creators] == ["王小明", "李华"]

    assert entries["plain"].path == folder / "papers" / "plain.pdf"
    assert entries["described"].path == folder / "papers" / "desc.pdf"
    # a bare % or & is text in a .bib, not a LaTeX comment or column break
    assert entries["described"].abstract == "Gains 5% over the baseline & more on two datasets."
    windows = entries["windows"]    # Mendeley's "C$\backslash$:" decoded, and reported as not usable here
    assert windows.path is None and "C:/Users/me/Mendeley Desktop/win.pdf" in windows.missing_reason
    assert entries["missing"].path == folder / "papers" / "missing.pdf" and not entries["missing"].path.exists()

    skipped = {s.source_key: s.reason for s in reading.skipped}
    assert skipped["nofile"] == "no file field"
    assert any("could not be parsed" in reason for reason in skipped.values())   # the unclosed entry


def test_bibtex_import_plan_reports_missing_files_and_duplicates_once(bib):
    reading = read_bibtex(bib)
    keys = [e.source_key for e in reading.entries]
    assert keys.count("plain") == 2         # a duplicate citation key is read, not dropped
    plan = plan_import(reading.entries, known=[])
    assert {e.source_key for e in plan.missing} == {"missing", "windows"}
    duplicates = {(d.entry.source_key, d.same_as.source_key, d.reason) for d in plan.duplicates}
    assert duplicates == {("buck2018copy", "buck2018", "the same file"),
                          ("buck2018preprint", "buck2018", "the same DOI 10.48550/arxiv.1705.07830"),
                          ("plain", "plain", "the same file")}
    assert sorted(p.entry.source_key for p in plan.new) == ["alt2019", "buck2018", "chollet", "described",
                                                            "plain", "wang2020"]
    assert plan.counts() == {"new": 6, "changed": 0, "unchanged": 0, "already": 0, "replacing": 0, "missing": 2,
                             "duplicates": 3}
    # each planned document once, by the hash of its bytes
    assert len({p.sha256 for p in plan.new}) == 6
    assert all(p.sha256 == file_sha256(p.entry.path) for p in plan.new)


def test_bibtex_file_field_edge_cases(tmp_path):
    from forest.library.bibtex import parse_file_field
    assert parse_file_field(r"Test1:files/47/test2.pdf:application/pdf;Test2:files/46/test2-min.pdf:application/pdf") == [
        ("files/47/test2.pdf", "application/pdf"), ("files/46/test2-min.pdf", "application/pdf")]
    assert parse_file_field(r"Test:E\:\\some\\random\\folder\\test2.pdf:application/pdf") == [
        (r"E:\some\random\folder\test2.pdf", "application/pdf")]                # JabRef/Zotero escapes
    assert parse_file_field(r"Test:E:\some\random\folder\test2.pdf:application/pdf") == [
        (r"E:\some\random\folder\test2.pdf", "application/pdf")]                # old Zotero, unescaped drive
    assert parse_file_field(r":C$\backslash$:/some/path/,.$\backslash$;'[]\{\}`-=\~{}!@\#\$\%\^{}\&()\_+.pdf:pdf") == [
        ("C:/some/path/,.;'[]{}`-=~!@#$%^&()_+.pdf", "pdf")]      # Mendeley's escapes (Zotero's own test case)
    assert parse_file_field("C:\\x\\y.pdf") == [("C:\\x\\y.pdf", "")]
    assert parse_file_field("  ;  ") == []


def test_bibtex_that_is_not_a_file_is_a_clear_error(tmp_path):
    with pytest.raises(LibraryError, match="is not a file"):
        read_bibtex(tmp_path / "absent.bib")


@pytest.mark.slow
def test_bibtex_fields_over_the_bound_are_cut_with_a_note_and_read_in_linear_time(tmp_path):
    """Long LaTeX values, author lists and file fields once took time growing faster than their
    length (1 MB: 22 s); each is now cut to MAX_BIBTEX_FIELD_CHARS before decoding, and the entry says so."""
    import time

    from forest.library.bibtex import parse_file_field
    from forest.limits import MAX_BIBTEX_FIELD_CHARS

    make_pdf(tmp_path / "p.pdf", "a paper")
    long_abstract = "caf{\\'e} and {\\\"u}ber -- " * 200_000                         # 4.2 MB of LaTeX
    authors = " and ".join(["Smith, John"] * 200_000)                        # 3 MB of names
    bib = tmp_path / "huge.bib"
    bib.write_text(f"@article{{huge, title = {{Huge}}, abstract = {{{long_abstract}}}, author = {{{authors}}}, "
                   "file = {p.pdf}}", encoding="utf-8")
    started = time.thread_time()
    entry = read_bibtex(bib).entries[0]
    assert time.thread_time() - started < 20       # cut: ~1 s; whole: minutes
    assert entry.notes == (f"field abstract cut from {len(long_abstract):,} to {MAX_BIBTEX_FIELD_CHARS:,} characters",
                           f"field author cut from {len(authors):,} to {MAX_BIBTEX_FIELD_CHARS:,} characters")
    assert entry.abstract.startswith("café and über – café") and len(entry.abstract) < MAX_BIBTEX_FIELD_CHARS
    assert entry.creators[0] == Creator("Smith", "John") and entry.path == tmp_path / "p.pdf"

    started = time.thread_time()
    assert parse_file_field(":" + "a" * 2_000_000 + ".pdf:PDF") == [("a" * 2_000_000 + ".pdf", "PDF")]
    assert time.thread_time() - started < 10       # joined once per part, not a character at a time


def test_a_bib_over_the_file_size_limit_is_a_clear_error(tmp_path):
    bib = tmp_path / "big.bib"
    bib.write_text("@misc{k, title = {" + "x" * 2_000 + "}}", encoding="utf-8")
    with pytest.raises(InvalidInput, match="big.bib is over the limit of 0.0 MB"):
        read_library(bib, max_bytes=1_000)


# ---------------------------------------------------------------- folders

def test_folder_is_walked_recursively_skipping_hidden_folders_and_symlink_loops(tmp_path):
    root = tmp_path / "papers"
    make_pdf(root / "top.pdf", "top")
    (root / "notes.md").parent.mkdir(parents=True, exist_ok=True)
    (root / "notes.md").write_text("# Notes\n", encoding="utf-8")
    make_pdf(root / "2018" / "NLP" / "buck.PDF", "buck")
    (root / "2018" / "NLP" / "reading.txt").write_text("text", encoding="utf-8")
    (root / "2018" / "draft.docx").write_bytes(b"not a document kind")
    make_pdf(root / ".obsidian" / "hidden.pdf", "hidden folder")
    make_pdf(root / "2018" / ".hidden.pdf", "hidden file")
    os.symlink(root, root / "2018" / "NLP" / "loop")                # a folder link back to the top
    os.symlink(root / "gone.pdf", root / "dangling.pdf")             # a broken link
    reading = read_library(root)
    assert reading.kind == "folder"
    entries = by_key(reading.entries)
    assert sorted(entries) == ["2018/NLP/buck.PDF", "2018/NLP/reading.txt", "dangling.pdf", "notes.md", "top.pdf"]
    assert entries["2018/NLP/buck.PDF"].collections == ("2018/NLP",)
    assert entries["top.pdf"].collections == () and entries["top.pdf"].title == "top"
    assert entries["dangling.pdf"].missing_reason == "broken symbolic link"
    plan = plan_import(reading.entries, known=[])
    assert [e.source_key for e in plan.missing] == ["dangling.pdf"] and len(plan.new) == 4


def test_library_kind_detection_and_clear_errors(tmp_path, bib, zotero):
    assert library_kind(zotero) == "zotero"
    assert library_kind(zotero / "zotero.sqlite") == "zotero"
    assert library_kind(bib) == "bibtex"
    assert library_kind(tmp_path) == "folder"
    paper = make_pdf(tmp_path / "one.pdf", "one")
    with pytest.raises(LibraryError, match="not a library: give a Zotero data directory"):
        read_library(paper)
    with pytest.raises(LibraryError, match="does not exist"):
        read_library(tmp_path / "nowhere")


# ---------------------------------------------------------------- import plan against what is known

def test_second_import_finds_unchanged_changed_and_new_file_of_a_known_doi(tmp_path):
    first = make_pdf(tmp_path / "a.pdf", "paper A")
    second = make_pdf(tmp_path / "b.pdf", "paper B")
    entry_a = LibraryEntry(path=first, title="Paper A", source_kind="zotero", source_key="A", year=2018,
                           creators=(Creator("Buck", "Christian"),), doi="10.1/a", tags=("qa",))
    entry_b = LibraryEntry(path=second, title="Paper B", source_kind="zotero", source_key="B", doi="10.1/b")
    known = [KnownDocument("arch-a", {**entry_a.metadata(), "file_sha256": file_sha256(first)}),
             KnownDocument("arch-b", {**entry_b.metadata(), "file_sha256": file_sha256(second)})]

    retagged = replace(entry_a, tags=("qa", "rl"), abstract="")
    new_version = make_pdf(tmp_path / "b-v2.pdf", "paper B, publisher's version")
    entry_b2 = LibraryEntry(path=new_version, title="Paper B", source_kind="zotero", source_key="B",
                            doi="10.1/b")
    fresh = LibraryEntry(path=make_pdf(tmp_path / "c.pdf", "paper C"), title="Paper C", source_kind="zotero")
    plan = plan_import([retagged, entry_b2, fresh], known)

    assert [(p.archive_id, p.changed_fields) for p in plan.changed] == [("arch-a", ("tags",)), ("arch-b", ("file",))]
    assert plan.changed[0].metadata["tags"] == ["qa", "rl"]
    assert [p.entry.title for p in plan.new] == ["Paper C"] and plan.new[0].archive_id is None
    assert plan.unchanged == ()

    again = plan_import([entry_a, entry_b], known)
    assert [p.archive_id for p in again.unchanged] == ["arch-a", "arch-b"] and again.changed == ()


def test_folder_import_never_overwrites_reference_manager_metadata(tmp_path):
    paper = make_pdf(tmp_path / "Buck - 2018.pdf", "paper")
    from_zotero = LibraryEntry(path=paper, title="Ask the Right Questions", source_kind="zotero",
                               creators=(Creator("Buck", "Christian"),), year=2018)
    known = [KnownDocument("arch-1", from_zotero.metadata(), file_sha256(paper))]
    from_folder = LibraryEntry(path=paper, title="Buck - 2018", source_kind="folder", source_key="Buck - 2018.pdf")
    plan = plan_import([from_folder], known)
    assert [p.archive_id for p in plan.unchanged] == ["arch-1"]
    assert plan.unchanged[0].metadata["title"] == "Ask the Right Questions"


def test_a_fifo_in_a_folder_is_missing_as_what_it_is_and_never_opened(tmp_path):
    folder = tmp_path / "papers"
    make_pdf(folder / "real.pdf", "a real paper")
    os.mkfifo(folder / "pipe.pdf")
    planned: list = []     # planned in a thread: code that opens the FIFO waits forever, and fails here
    thread = threading.Thread(target=lambda: planned.append(plan_import(read_library(folder).entries, [])),
                              daemon=True)
    thread.start()
    thread.join(60)
    assert planned, "planning waited on the FIFO"
    plan = planned[0]
    assert [p.entry.source_key for p in plan.new] == ["real.pdf"]
    assert [m.missing_reason for m in plan.missing] == [f"{folder / 'pipe.pdf'} is a named pipe (FIFO), not a file"]


def test_unreadable_path_is_missing_with_the_reason(tmp_path):
    folder_not_file = tmp_path / "looks.pdf"
    folder_not_file.mkdir()
    plan = plan_import([LibraryEntry(path=folder_not_file, title="x", source_kind="bibtex")], [])
    assert plan.missing[0].missing_reason == f"{folder_not_file} is a directory, not a file"


# ---------------------------------------------------------------- citations and BibTeX export

def entry_with(*creators: Creator, year: int | None = 2018, title: str = "A Title") -> LibraryEntry:
    return LibraryEntry(path=None, title=title, source_kind="bibtex", creators=creators, year=year)


@pytest.mark.parametrize("creators, expected", [
    ((Creator("Buck", "Christian"),), "Buck (2018)"),
    ((Creator("Buck", "Christian"), Creator("Alt", "Anna")), "Buck and Alt (2018)"),
    ((Creator("Buck", "C."), Creator("Alt", "A."), Creator("Cole", "C.")), "Buck et al. (2018)"),
    # editors and translators are not authors
    ((Creator("Buck", "C."), Creator("Alt", "A.", "editor"), Creator("Cole", "C.", "translator")), "Buck (2018)"),
    # an edited volume is cited by its editors
    ((Creator("Alt", "A.", "editor"), Creator("Cole", "C.", "editor")), "Alt and Cole (2018)"),
    ((Creator("World Health Organization"),), "World Health Organization (2018)"),
    # Chinese names: the whole name, family name first; two authors are never "et al."
    ((Creator("王", "小明"),), "王小明 (2018)"),
    ((Creator("王", "小明"), Creator("李", "华")), "王小明 and 李华 (2018)"),
    ((Creator("王小明"), Creator("李华"), Creator("张伟")), "王小明 et al. (2018)"),
    ((Creator("王", "小明"), Creator("清华大学")), "王小明 and 清华大学 (2018)"),
    ((Creator("Li", "Wei"),), "Li (2018)"),
    ((Creator("Wang", "Li"), Creator("Zhang", "Wei")), "Wang and Zhang (2018)"),
])
def test_short_citation(creators, expected):
    assert short_citation(entry_with(*creators)) == expected


def test_short_citation_without_year_or_authors():
    assert short_citation(entry_with(Creator("Buck", "C."), year=None)) == "Buck (n.d.)"
    assert short_citation(entry_with(title="Attention Is All You Need", year=2017)) == "Attention Is All You Need (2017)"
    assert short_citation(entry_with(title="Untitled Notes", year=None)) == "Untitled Notes"


def test_chinese_names_from_bibtex_cite_without_et_al_mistakes(tmp_path):
    paper = make_pdf(tmp_path / "p.pdf", "p")
    (tmp_path / "cn.bib").write_text(
        "@article{a, author = {王, 小明 and 李, 华}, year = {2021}, title = {甲}, file = {p.pdf}}\n"
        "@article{b, author = {Wang, Li and Zhang, Wei}, year = {2021}, title = {乙}, file = {p.pdf}}\n"
        "@article{c, author = {Li, Wei}, year = {2021}, title = {丙}, file = {p.pdf}}\n", encoding="utf-8")
    citations = [short_citation(e) for e in read_bibtex(tmp_path / "cn.bib").entries]
    assert citations == ["王小明 and 李华 (2021)", "Wang and Zhang (2021)", "Li (2021)"]
    assert paper.is_file()


def test_bibtex_export_round_trips_through_the_reader(tmp_path):
    paper = make_pdf(tmp_path / "p.pdf", "p")
    original = LibraryEntry(
        path=paper, title="Müller & Co: 50% {of} naïve Bayes_1 #2", source_kind="zotero", source_key="K1",
        creators=(Creator("Müller", "Jörg"), Creator("de La Fontaine", "Jean"), Creator("World Health Organization"),
                  Creator("王", "小明"), Creator("Smith, Jr.", "John"), Creator("Alt", "Anna", "editor")),
        year=2019, doi="10.1000/abc_def", url="https://example.org/a?b=1&c=50%25", abstract="Line one.\nLine two ~ $5.",
        tags=("deep learning", "NLP"), item_type="conferencePaper", venue="Proceedings of ACL 2019 & Friends",
        arxiv_id="1705.07830")
    text = bibtex_of(original)
    parsed = bibtexparser.parse_string(text)
    assert parsed.failed_blocks == [] and len(parsed.entries) == 1
    record = parsed.entries[0]
    assert record.entry_type == "inproceedings" and record.key == citation_key_of(original) == "muller2019muller"
    record.set_field(Field("file", str(paper)))
    (tmp_path / "out.bib").write_text(bibtexparser.write_string(parsed), encoding="utf-8")
    back = read_bibtex(tmp_path / "out.bib").entries[0]
    assert back.title == original.title
    assert back.creators == original.creators
    assert (back.year, back.doi, back.url) == (2019, "10.1000/abc_def", original.url)
    assert (back.venue, back.arxiv_id) == (original.venue, "1705.07830") and record["booktitle"]
    assert back.abstract == "Line one. Line two ~ $5."
    assert back.tags == original.tags and back.path == paper
    assert short_citation(back) == short_citation(original) == "Müller et al. (2019)"
    # what an archive stores gives the same entry back, to cite and export it later
    stored = json.loads(json.dumps(original.metadata()))
    assert LibraryEntry.from_metadata(stored, path=paper) == original


def test_bibtex_export_keeps_a_citation_key_and_makes_one_otherwise():
    assert citation_key_of(LibraryEntry(path=None, title="T", source_kind="bibtex", citation_key="buck2018")) == "buck2018"
    made = citation_key_of(LibraryEntry(path=None, title="The Ask Questions", source_kind="zotero",
                                        creators=(Creator("Buck", "C."),), year=2018, citation_key="bad key"))
    assert made == "buck2018questions"
    assert citation_key_of(LibraryEntry(path=None, title="深度学习", source_kind="zotero", year=2020)).startswith("ref")


# ---------------------------------------------------------------- each paper once, whichever way it came in

def test_a_paper_is_recognised_by_file_text_doi_arxiv_id_then_title_author_and_year():
    from forest.library import PaperIdentity, find_same
    from forest.library.identity import normalize_arxiv_id, title_key

    held = KnownDocument(7, {"title": "Ask the Right Questions: Active Question Reformulation", "year": 2018,
                             "creators": [{"last": "Buck", "first": "Christian"}], "doi": "10.1/AQA",
                             "arxiv_id": "1705.07830"}, "f" * 64, ("t" * 64,), "Ask the Right Questions")
    other = KnownDocument(8, {"title": "Another Paper Entirely Here", "year": 2018}, "e" * 64, (), "Another")
    cases = [(PaperIdentity(file_sha256="f" * 64), "the same file"),
             (PaperIdentity(text_sha256=("t" * 64,)), "the same text"),
             (PaperIdentity(doi="10.1/aqa"), "the same DOI 10.1/aqa"),
             (PaperIdentity.of({"arxiv_id": "arXiv:1705.07830v3"}), "the same arXiv id 1705.07830"),
             (PaperIdentity.of({"title": "ASK the right questions — active question reformulation!", "year": 2018,
                                "creators": [{"last": "Buck", "first": "C."}]}),
              "the same title, first author and year")]
    for candidate, reason in cases:
        same = find_same(candidate, [other, held])
        assert same is not None and same.archive_id == 7 and same.reason == reason
        assert same.said() == f"already in the library as archive 7 (Ask the Right Questions): {reason}"
    # the strongest evidence is the one said, and a weaker match never hides a stronger one
    assert find_same(PaperIdentity(file_sha256="e" * 64, doi="10.1/aqa"), [held, other]).archive_id == 8
    # nothing in common, or too little to name a paper: another paper
    assert find_same(PaperIdentity.of({"title": "Ask the Right Questions", "year": 2019,
                                       "creators": [{"last": "Buck"}]}), [held]) is None
    assert title_key("Introduction", "Buck", 2018) == "" and title_key("A Long Enough Title", "", 2018) == ""
    assert normalize_arxiv_id("https://arxiv.org/abs/hep-th/9901001v2") == "hep-th/9901001"
    assert normalize_arxiv_id("10.1/x") == "" and normalize_arxiv_id("1705.078") == ""


def test_a_held_paper_met_again_is_updated_skipped_replaced_or_kept_as_asked(tmp_path):
    uploaded = make_pdf(tmp_path / "upload.pdf", "paper A")
    held = KnownDocument(3, {"title": "Paper A", "source_kind": "paper"}, file_sha256(uploaded))
    # the same file, now from a reference manager: the held paper, its metadata the library's
    from_bib = LibraryEntry(path=uploaded, title="Paper A: The Full Title", source_kind="bibtex", source_key="a2018",
                            creators=(Creator("Alt", "Anna"),), year=2018, doi="10.1/a")
    plan = plan_import([from_bib], [held])
    assert plan.new == () and [p.archive_id for p in plan.changed] == [3]
    assert plan.changed[0].metadata["title"] == "Paper A: The Full Title" and "title" in plan.changed[0].changed_fields
    # another file of it (a publisher's version, the same DOI) from another source: as on_duplicate says
    known = [KnownDocument(3, from_bib.metadata(), file_sha256(uploaded))]
    version = LibraryEntry(path=make_pdf(tmp_path / "v2.pdf", "paper A, publisher's version"), title="Paper A",
                           source_kind="folder", source_key="v2.pdf", doi="10.1/a")
    skipped = plan_import([version], known)
    assert skipped.new == () and [p.same.reason for p in skipped.already] == ["the same DOI 10.1/a"]
    assert [p.archive_id for p in plan_import([version], known, "replace").replacing] == [3]
    assert [p.archive_id for p in plan_import([version], known, "keep").new] == [None]
    # the same reference manager's item with a new file is its new version, whatever on_duplicate says
    new_file = replace(from_bib, path=version.path)
    assert plan_import([new_file], known).changed[0].changed_fields[0] == "file"
    with pytest.raises(InvalidInput, match="on_duplicate must be one of skip, replace, keep"):
        plan_import([version], known, "merge")


def test_what_a_paper_says_of_itself_fills_what_its_library_leaves_empty():
    from forest.ingest.document import PaperMetadata
    from forest.library import completed, paper_entry_metadata

    read = PaperMetadata(title="ASK THE RIGHT QUESTIONS: ACTIVE QUESTION REFORMULATION", year=2018,
                         authors=(("BUCK", "CHRISTIAN"), ("Bulian", "Jannis")), doi="10.1/aqa", arxiv_id="1705.07830",
                         venue="ICLR 2018")
    own = paper_entry_metadata(read)   # set in capitals on the page, written as a reader writes it
    assert own["title"] == "Ask the Right Questions: Active Question Reformulation"
    assert [c["last"] for c in own["creators"]] == ["Buck", "Bulian"] and own["source_kind"] == "paper"
    from_bib = LibraryEntry(path=None, title="Ask the Right Questions", source_kind="bibtex", year=2017,
                            creators=(Creator("Buck", "C."),)).metadata()
    merged = completed(from_bib, read)   # the reference manager wins where it has a value
    assert (merged["title"], merged["year"], merged["creators"]) == ("Ask the Right Questions", 2017, from_bib["creators"])
    assert (merged["doi"], merged["arxiv_id"], merged["venue"]) == ("10.1/aqa", "1705.07830", "ICLR 2018")
    from_folder = LibraryEntry(path=None, title="1705.07830", source_kind="folder", collections=("2018",)).metadata()
    named = completed(from_folder, read)   # a folder knows only the file's name: the paper's own title wins
    assert named["title"] == "Ask the Right Questions: Active Question Reformulation" and named["collections"] == ["2018"]
    assert completed(None, PaperMetadata()) is None and completed(from_bib, None) == from_bib


def test_a_pdf_path_swapped_for_a_fifo_after_its_check_is_refused_not_waited_on(tmp_path):
    """The PDF reader and the metadata reader read the bytes from the descriptor they checked, so a
    path that is a FIFO by the time it is opened (swapped after the plan's check) is refused at once."""
    from forest.errors import InvalidInput
    from forest.ingest.document import PaperMetadata
    from forest.ingest.metadata import read_paper_metadata
    from forest.ingest.pdf import read_pdf

    fifo = tmp_path / "paper.pdf"
    os.mkfifo(fifo)
    outcome: dict = {}

    def read() -> None:
        outcome["metadata"] = read_paper_metadata(fifo)
        try:
            read_pdf(fifo)
        except InvalidInput as exc:
            outcome["pdf"] = str(exc)

    thread = threading.Thread(target=read, daemon=True)   # a reader that opens the FIFO waits forever
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "a reader waited on the FIFO"
    assert outcome["metadata"] == PaperMetadata() and "named pipe" in outcome["pdf"]
