"""forest.views.page_preview on real PDFs: a passage is found on its page (PyMuPDF's own text search is
the yardstick), the page is rendered with exactly those lines highlighted, and the source PDF is
kept in the store so a citation still opens after the upload is gone."""
import pymupdf
import pytest

from conftest import ROOT
from forest.tree.chunking import chunk_document
from forest.views.page_preview import locate, render_page, section_passages, tokens
from forest.ingest.pdf import read_pdf
from pdf_factory import chinese_paper, two_column_paper

PAPER = ROOT / "data" / "samples" / "2001.03131.pdf"  # the sample paper ships with the project


def centre_in(target: pymupdf.Rect, boxes) -> bool:
    x, y = (target.x0 + target.x1) / 2, (target.y0 + target.y1) / 2
    return any(x0 <= x <= x1 and y0 <= y <= y1 for x0, y0, x1, y1 in boxes)


def yellow(pixmap: pymupdf.Pixmap, x: int, y: int) -> bool:
    r, g, b = pixmap.pixel(x, y)[:3]
    return r > 200 and g > 200 and b < 140


def test_tokens_fold_case_punctuation_hyphens_and_split_chinese():
    assert tokens("State-of-the-art, (RKS) model.") == ["stateoftheart", "rks", "model"]
    assert tokens("叶绿体 absorbs 红光") == ["叶", "绿", "体", "absorbs", "红", "光"]


def test_a_real_papers_passage_is_found_and_a_phrase_it_shares_with_the_abstract_is_not():
    chunk = next(c for c in chunk_document(read_pdf(PAPER), 1000, 100) if "Overseeing the complication" in c.text)
    with pymupdf.open(PAPER) as doc:
        found = locate(doc, chunk.text, range(chunk.page_start, chunk.page_end + 1))
        page = doc[0]
        inside = page.search_for("Overseeing the complication") + page.search_for("The tweets were collected")
        abstract, introduction = sorted(page.search_for("Identifying and Categorizing"), key=lambda r: r.y0)
        others = page.search_for("In this digital era") + page.search_for("There were three sub-tasks")  # other chunks
    assert list(found) == [1]
    assert all(centre_in(r, found[1]) for r in inside) and centre_in(introduction, found[1])
    assert not centre_in(abstract, found[1])      # the task's name, quoted in the abstract too
    assert len(others) == 2 and not any(centre_in(r, found[1]) for r in others)
    assert all(x1 - x0 < 260 for x0, _, x1, _ in found[1])   # line by line, in its column


def test_hyphenated_words_and_lines_across_a_break_are_found(tmp_path):
    pdf = two_column_paper(tmp_path / "paper.pdf")
    passage = ("Tidal pools hold a surprising variety of life. Their representation in field guides is poor "
               "because they change with every tide.")
    with pymupdf.open(pdf) as doc:
        found = locate(doc, passage, [1])
        page = doc[0]
        assert all(centre_in(r, found[1]) for text in ("Tidal pools hold", "sentation in field", "change with every")
                   for r in page.search_for(text))
        assert not centre_in(page.search_for("We sampled forty pools")[0], found[1])
        assert locate(doc, passage, [2, 3]) == {}         # not on the other pages
        assert locate(doc, "", [1]) == {}


def test_a_chinese_passage_is_found_on_its_page(tmp_path):
    pdf = chinese_paper(tmp_path / "zh.pdf")
    with pymupdf.open(pdf) as doc:
        found = locate(doc, "光合作用是植物利用光能把二氧化碳和水转化为有机物并释放氧气的过程。", [1, 2])
        line = doc[0].search_for("光合作用是植物")[0]
    assert list(found) == [1] and centre_in(line, found[1])


def test_the_rendered_page_is_yellow_exactly_on_the_highlighted_lines(tmp_path):
    pdf = two_column_paper(tmp_path / "paper.pdf")
    with pymupdf.open(pdf) as doc:
        rects = locate(doc, "Anemones were found in thirty pools, while sea stars appeared in only twelve.", [2])[2]
    page = render_page(pdf, 2, rects, zoom=2.0)
    image = pymupdf.Pixmap(page.png)
    assert (image.width, image.height) == (page.width, page.height) == (1190, 1684)
    assert page.rects == [tuple(v * 2.0 for v in r) for r in rects]
    x0, y0, x1, y1 = (int(v) for v in page.rects[0])
    marked = sum(yellow(image, x, y) for x in range(x0 + 1, x1 - 1, 3) for y in range(y0 + 1, y1 - 1, 3))
    assert marked > 0.3 * len(range(x0 + 1, x1 - 1, 3)) * len(range(y0 + 1, y1 - 1, 3))
    outside = [(x, y) for x in range(0, image.width, 7) for y in range(0, image.height, 7)
               if yellow(image, x, y) and not centre_in(pymupdf.Rect(x, y, x, y), [(a - 2, b - 2, c + 2, d + 2)
                                                                                   for a, b, c, d in page.rects])]
    assert outside == []
    with pytest.raises(ValueError, match="outside 1-3"):
        render_page(pdf, 4)


@pytest.mark.slow
def test_an_ingested_pdf_is_kept_and_opens_after_the_upload_is_gone(make_forest, tmp_path):
    (tmp_path / "upload").mkdir()
    upload = two_column_paper(tmp_path / "upload" / "tidal.pdf")
    forest = make_forest(chunk_size=200, chunk_overlap=0)
    archive = forest.ingest_file(upload, "reader")
    kept = archive.settings["documents"][0]["file"]
    assert (forest.settings.sources_path / kept).read_bytes() == upload.read_bytes()
    again = forest.ingest_file(upload, "other")             # the same paper elsewhere: one copy
    upload.unlink()
    assert [p.name for p in forest.settings.sources_path.iterdir()] == [kept]

    leaf = next(n for n in forest.tree("reader", archive.id) if n.is_leaf and "Anemones" in n.content)
    preview = forest.source_preview("reader", leaf.id)
    assert preview.pdf == forest.settings.sources_path / kept and preview.page_count == 3
    assert preview.document == "A Study of Tidal Pools" and preview.first_page == 2
    with pymupdf.open(preview.pdf) as doc:
        assert centre_in(doc[1].search_for("Anemones were found")[0], preview.highlights[2])

    forest.delete_archive("reader", archive.id)
    assert (forest.settings.sources_path / kept).exists()   # the other archive still names it
    (forest.settings.sources_path / kept).rename(tmp_path / "moved.pdf")
    lost = forest.source_preview("other", next(n.id for n in forest.tree("other", again.id) if n.is_leaf))
    assert lost.pdf is None and any(cited for _, cited in lost.passages)   # falls back to the text
    (tmp_path / "moved.pdf").rename(forest.settings.sources_path / kept)
    forest.delete_archive("other", again.id)
    assert list(forest.settings.sources_path.iterdir()) == []


@pytest.mark.slow
def test_a_text_documents_passage_is_shown_in_its_section_without_the_overlap(make_forest):
    body = " ".join(f"Sentence {i} tells the tale of reef number {i} and its fish." for i in range(30))
    forest = make_forest(chunk_size=200, chunk_overlap=60)
    archive = forest.ingest_text("reader", "notes", f"# Notes\n\n## Reefs\n\n{body}\n\n## Kelp\n\nKelp forests grow fast.")
    leaves = [n for n in forest.tree("reader", archive.id) if n.is_leaf]
    middle = [n for n in leaves if n.section == "Reefs"][2]
    preview = forest.source_preview("reader", middle.id)
    assert preview.pdf is None and preview.section == "Reefs"
    assert tokens(" ".join(text for text, _ in preview.passages)) == tokens(body)   # whole, each word once
    assert [cited for _, cited in preview.passages].count(True) == 1
    assert next(text for text, cited in preview.passages if cited) in middle.content
    assert section_passages([], range(0)) == []


def test_old_archives_fall_back_to_the_original_path(tmp_path):
    from forest.storage.source_files import SourceFiles

    files = SourceFiles(tmp_path / "sources")
    pdf = two_column_paper(tmp_path / "paper.pdf")
    assert files.find({"source": str(pdf)}) == pdf                  # built before files were kept
    assert files.find({"file": "missing.pdf", "source": str(tmp_path / "gone.pdf")}) is None
    assert files.keep(str(tmp_path / "notes.md")) is None             # text lives on in the leaves
    name = files.keep(str(pdf))
    assert files.find({"file": name, "source": None}) == tmp_path / "sources" / name
    assert files.prune({name}) == [] and files.prune(set()) == [name]

