"""A paper's metadata read from the PDF itself: written PDFs with known layout, odd PDFs, real papers."""
import json
import time
import unicodedata
from pathlib import Path

import pymupdf
import pytest

import pdf_factory
from conftest import SHARED_EVAL
from forest.ingest import load_document
from forest.ingest.metadata import PaperMetadata, paper_metadata, read_paper_metadata

REAL_PDFS = SHARED_EVAL / "pdfs"
DEV_LABELS = Path(__file__).resolve().parents[1] / "bench" / "data" / "metadata_dev.json"
TITLE = "Tidal Computing with Rock Pools: A Field Study"


def _superscript(page, x, y, mark):
    page.insert_text((x, y - 4), mark, fontname="helv", fontsize=6.5)


def workshop_paper(path: Path, info: dict | None = None, stamp: str | None = None) -> Path:
    """Page 1 of a two-column workshop paper: title, authors with marks, affiliations, emails, body."""
    doc = pymupdf.open()
    page = doc.new_page(width=pdf_factory.A4[0], height=pdf_factory.A4[1])
    page.insert_text((90, 90), "Tidal Computing with Rock Pools:", fontname="hebo", fontsize=18)
    page.insert_text((150, 113), "A Field Study", fontname="hebo", fontsize=18)
    x = 110
    for name, mark in (("Ada Lovelace", "1"), ("Charles Babbage", "2"), ("and Mary Somerville", "1,*")):
        page.insert_text((x, 145), name + ("," if mark != "1,*" else ""), fontname="helv", fontsize=11)
        x += pymupdf.get_text_length(name + ",", "helv", 11)
        _superscript(page, x - 3, 145, mark)
        x += 14
    page.insert_text((150, 165), "1 Department of Marine Computing, University of Tides, Bristol, UK",
                     fontname="helv", fontsize=9)
    page.insert_text((150, 177), "2 Analytical Engines Ltd, London, UK", fontname="helv", fontsize=9)
    page.insert_text((150, 189), "{ada, mary}@tides.ac.uk, charles@engines.co.uk", fontname="cour", fontsize=8)
    page.insert_text((270, 220), "Abstract", fontname="hebo", fontsize=11)
    left = pdf_factory.PageWriter(page, pdf_factory.LEFT, top=240)
    left.paragraph(["We compute with the tide. Rock pools fill and drain",
                    "twice a day, which gives a slow but reliable clock."])
    right = pdf_factory.PageWriter(page, pdf_factory.RIGHT, top=240)
    right.paragraph(["Every pool holds one bit. Barnacles act as gates",
                     "and the moon schedules the whole computation."])
    page.insert_text((50, 780), "Proceedings of the 12th Workshop on Tidal Computing, pages 1-9, Bristol, 2021.",
                     fontname="helv", fontsize=8)
    page.insert_text((50, 792), "https://doi.org/10.1234/Tidal.2021.7.", fontname="helv", fontsize=8)
    if stamp:
        page.insert_text((30, 600), stamp, fontname="tiro", fontsize=20, rotate=90)
    doc.set_metadata(info or {})
    doc.save(path)
    return path


def test_a_two_column_paper_gives_title_authors_year_venue_and_doi(tmp_path):
    found = read_paper_metadata(workshop_paper(tmp_path / "paper.pdf",
                                               {"title": "Microsoft Word - draft3.docx", "author": "user"}))
    assert found.title == TITLE   # the junk /Title is not taken
    assert found.authors == (("Lovelace", "Ada"), ("Babbage", "Charles"), ("Somerville", "Mary"))
    assert found.year == 2021
    assert found.venue == "Proceedings of the 12th Workshop on Tidal Computing"
    assert found.doi == "10.1234/tidal.2021.7"   # bare, lower case, the sentence's full stop left out
    assert found.sources["title"] == found.sources["authors"] == "first page"
    assert not found.empty


def test_the_arxiv_stamp_gives_the_id_without_version_and_the_year(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((120, 100), "Rock Pools as Memory", fontname="hebo", fontsize=18)
    page.insert_text((200, 130), "Ada Lovelace", fontname="helv", fontsize=11)
    page.insert_text((100, 200), "Body text of the paper, set in the usual size for a while.", fontname="helv",
                     fontsize=10)
    page.insert_text((30, 560), "arXiv:2101.01234v2  [cs.CL]  5 Feb 2021", fontname="tiro", fontsize=20, rotate=90)
    doc.save(tmp_path / "stamped.pdf")
    found = read_paper_metadata(tmp_path / "stamped.pdf")
    assert (found.arxiv_id, found.year) == ("2101.01234", 2021)
    assert found.sources["arxiv_id"] == found.sources["year"] == "arxiv stamp"
    assert found.title == "Rock Pools as Memory" and found.authors == (("Lovelace", "Ada"),)


def test_an_arxiv_file_name_gives_the_id_when_the_page_has_none(tmp_path):
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Some words on a page.", fontname="helv", fontsize=10)
    doc.save(tmp_path / "1705.07830v3.pdf")
    found = read_paper_metadata(tmp_path / "1705.07830v3.pdf")
    assert (found.arxiv_id, found.year, found.sources["arxiv_id"]) == ("1705.07830", 2017, "file name")


def test_the_metadata_dictionary_fills_in_what_the_page_lacks(tmp_path):
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "only body text here, nothing set large", fontname="helv", fontsize=10)
    doc.set_metadata({"title": "Barnacles as Logic Gates", "author": "Mary Somerville; Ada Lovelace",
                      "subject": "doi:10.5555/Barnacles.42", "creationDate": "D:20190304120000Z"})
    doc.save(tmp_path / "plain.pdf")
    found = read_paper_metadata(tmp_path / "plain.pdf")
    assert found.title == "Barnacles as Logic Gates"
    assert found.authors == (("Somerville", "Mary"), ("Lovelace", "Ada"))
    assert (found.doi, found.year) == ("10.5555/barnacles.42", 2019)
    assert found.sources == {"doi": "pdf metadata", "title": "pdf metadata", "authors": "pdf metadata",
                             "year": "pdf creation date"}


def test_a_junk_title_in_the_metadata_is_not_a_title(tmp_path):
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "only body text here", fontname="helv", fontsize=10)
    for junk in ("Microsoft Word - paper.docx", "untitled", "main.tex", "6545861.dvi", "PII: S0140-6736(17)32844-1"):
        doc.set_metadata({"title": junk})
        assert paper_metadata(doc).title == "", junk


def test_a_scanned_pdf_gives_an_empty_result(tmp_path):
    found = read_paper_metadata(pdf_factory.scanned_paper(tmp_path / "scan.pdf"))
    assert found == PaperMetadata() and found.empty


def test_an_encrypted_or_broken_file_gives_an_empty_result(tmp_path):
    source = workshop_paper(tmp_path / "open.pdf")
    assert read_paper_metadata(pdf_factory.encrypted_paper(tmp_path / "locked.pdf", source)).empty
    (tmp_path / "empty.pdf").write_bytes(b"")
    (tmp_path / "text.pdf").write_text("not a pdf at all")
    (tmp_path / "cut.pdf").write_bytes(source.read_bytes()[:1500])
    for name in ("empty.pdf", "text.pdf", "cut.pdf", "missing.pdf"):
        assert read_paper_metadata(tmp_path / name).title == "", name


def test_a_cjk_title_is_read(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page(width=pdf_factory.A4[0], height=pdf_factory.A4[1])
    page.insert_text((150, 90), "潮汐池中的计算：一项实地研究", fontname="china-s", fontsize=20)
    page.insert_text((250, 130), "张三 李四", fontname="china-s", fontsize=11)
    pdf_factory.PageWriter(page, (50, 545), top=180, font="china-s").paragraph(
        ["潮汐每天涨落两次，为计算提供了缓慢而可靠的时钟。"], size=10.5)
    doc.save(tmp_path / "cjk.pdf")
    assert read_paper_metadata(tmp_path / "cjk.pdf").title == "潮汐池中的计算：一项实地研究"


def test_hostile_text_is_read_quickly(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page(width=2000, height=2000)
    page.insert_text((20, 40), "A, " * 600 + "10.1/" + "(" * 500, fontname="helv", fontsize=12)
    for row in range(120):
        page.insert_text((20, 80 + row * 15), "and, " * 200 + "arXiv:" + "1" * 300, fontname="helv", fontsize=9)
    doc.save(tmp_path / "hostile.pdf")
    start = time.perf_counter()
    read_paper_metadata(tmp_path / "hostile.pdf")
    assert time.perf_counter() - start < 2.0


def test_the_pdf_loader_fills_the_document_metadata_and_keeps_its_own_title(tmp_path):
    doc = load_document(workshop_paper(tmp_path / "paper.pdf", {"title": "untitled"}))
    assert doc.metadata is not None and doc.metadata.title == TITLE
    assert doc.metadata.authors[0] == ("Lovelace", "Ada")
    pools = load_document(pdf_factory.two_column_paper(tmp_path / "pools.pdf"))
    assert pools.title == pools.metadata.title == "A Study of Tidal Pools"


def _normal(text):
    text = "".join(ch for ch in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(ch))
    return " ".join("".join(ch for ch in text if ch.isalnum() or ch.isspace()).split())


@pytest.mark.skipif(not REAL_PDFS.exists(), reason="shared eval PDFs not present")
def test_seven_real_papers_match_their_labels():
    for label in json.loads(DEV_LABELS.read_text(encoding="utf-8")):
        found = read_paper_metadata(REAL_PDFS / label["file"])
        assert _normal(found.title) == _normal(label["title"]), label["file"]
        assert _normal(found.authors[0][0]) == _normal(label["first_author_last"]), label["file"]
        assert len(found.authors) == len(label["authors"]), label["file"]
        assert (found.year, found.arxiv_id) == (label["year"], label["arxiv_id"]), label["file"]
