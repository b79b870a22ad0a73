"""PDF ingestion (PyMuPDF): layout on PDFs with known content, bad PDFs, and seven real papers."""
import json
import re
import unicodedata
from pathlib import Path

import pytest

import pdf_factory
from conftest import SHARED_EVAL, assert_store_empty
from forest import InvalidInput
from forest.ingest.document import CAPTION
from forest.ingest import load_document

FACTS = json.loads((Path(__file__).parent / "data" / "pdf_facts.json").read_text(encoding="utf-8"))
REAL_PDFS = SHARED_EVAL / "pdfs"


def index_of(passages, fragment):
    return next(i for i, p in enumerate(passages) if fragment in p.text)


def test_two_columns_are_read_column_by_column_with_sections_pages_and_captions(tmp_path):
    doc = load_document(pdf_factory.two_column_paper(tmp_path / "pools.pdf"))
    texts = [p.text for p in doc.passages]
    assert doc.title == "A Study of Tidal Pools" and doc.page_count == 3
    order = ["surprising variety", "sampled forty", "Water temperature", "Anemones", "Pools higher", "deserve more"]
    assert [index_of(doc.passages, f) for f in order] == sorted(index_of(doc.passages, f) for f in order)
    # A sentence cut by the column break is one paragraph again; a line-break hyphen is removed,
    # but a word the paper spells with hyphens keeps them.
    assert any("each pool was photographed and its species counted" in t for t in texts)
    assert any("Their representation in field guides" in t for t in texts)
    assert any("rare for state-of-the-art equipment" in t for t in texts)
    # Running header and page numbers are gone.
    assert not any(pdf_factory.HEADER in t for t in texts)
    assert not any(re.fullmatch(r"\d+", t.strip()) for t in texts)
    sections = {f: doc.passages[index_of(doc.passages, f)].section for f in order}
    assert sections == {"surprising variety": "1 Introduction", "sampled forty": "2 Methods",
                        "Water temperature": "2.1 Sampling Protocol", "Anemones": "3 Results",
                        "Pools higher": "3 Results", "deserve more": "4 Conclusion"}
    captions = [(p.text, p.page_start) for p in doc.passages if p.kind == CAPTION]
    assert captions == [("Figure 1: Map of the sampled tidal pools.", 1), ("Table 1: Species counts per pool.", 2)]
    assert [doc.passages[index_of(doc.passages, f)].page_start for f in order] == [1, 1, 1, 2, 2, 3]


@pytest.mark.slow
def test_pdf_leaves_carry_pages_sections_and_caption_kind(forest, tmp_path):
    events = []
    archive = forest.ingest_file(pdf_factory.two_column_paper(tmp_path / "pools.pdf"), "m", progress=events.append)
    assert archive.settings["documents"][0]["pages"] == 3
    leaves = sorted((n for n in forest.tree("m", archive.id) if n.is_leaf), key=lambda n: n.leaf_index)
    captions = [n for n in leaves if n.chunk_kind == "caption"]
    assert [c.content for c in captions] == ["Figure 1: Map of the sampled tidal pools.",
                                             "Table 1: Species counts per pool."]
    water = next(n for n in leaves if "Water temperature" in n.content)
    assert (water.page_start, water.section, water.citation) == (1, "2.1 Sampling Protocol",
                                                                 "p. 1, §2.1 Sampling Protocol")
    assert all(n.page_start is not None and n.section for n in leaves)
    assert not any("Water temperature" in n.content and "Anemones" in n.content for n in leaves)  # sections apart
    hit = next(h for h in forest.search("m", "how often was the water temperature recorded", top_k=5)
               if h.node.is_leaf)
    assert "ten minutes" in hit.node.content and hit.node.citation.startswith("p. 1")
    stages = [e.stage for e in events]
    assert stages[0] == "parse" and {"parse", "chunk", "summarize", "embed", "merge", "store"} <= set(stages)
    root = next(n for n in forest.tree("m", archive.id) if n.parent_id is None)
    assert (root.page_start, root.page_end) == (1, 3)


def test_chinese_pdf(forest, tmp_path):
    doc = load_document(pdf_factory.chinese_paper(tmp_path / "zh.pdf"))
    assert doc.title == "自然科学笔记"
    assert doc.sections == ["1 引言", "2 火山", "3 结论"]
    # Lines of Chinese are joined without a space.
    assert any("转化为有机物并释放氧气" in p.text for p in doc.passages)
    assert [p.text for p in doc.passages if p.kind == CAPTION] == ["图1：叶绿体的结构示意图"]
    archive = forest.ingest_file(tmp_path / "zh.pdf", "zh")
    hit = forest.search("zh", "板块边界的火山", top_k=1)[0]
    assert "环太平洋" in hit.node.content and hit.node.citation == "p. 2, §2 火山"
    assert archive.leaves >= 3


@pytest.fixture
def good_pdf(tmp_path):
    return pdf_factory.two_column_paper(tmp_path / "good.pdf")


@pytest.mark.parametrize("case, message", [
    ("encrypted", "encrypted"),
    ("truncated", "truncated"),
    ("corrupt", "corrupt|damaged"),
    ("scanned", "no text layer.*OCR"),
    ("renamed", "not a PDF"),
    ("empty", "empty"),
    ("too big", "over the limit"),
])
def test_bad_pdfs_are_refused_clearly_and_leave_nothing(make_forest, tmp_path, good_pdf, case, message):
    forest = make_forest(max_file_mb=0.001 if case == "too big" else 100)
    path = tmp_path / f"{case.replace(' ', '_')}.pdf"
    if case == "encrypted":
        pdf_factory.encrypted_paper(path, good_pdf)
    elif case == "truncated":
        path.write_bytes(good_pdf.read_bytes()[: good_pdf.stat().st_size // 2])
    elif case == "corrupt":
        path.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 40 + b"\n%%EOF\n")
    elif case == "scanned":
        pdf_factory.scanned_paper(path)
    elif case == "renamed":
        path.write_text("name,score\nada,3\n", encoding="utf-8")
    elif case == "empty":
        path.write_bytes(b"")
    else:
        path.write_bytes(good_pdf.read_bytes())
    with pytest.raises(InvalidInput, match=message) as raised:
        forest.ingest_file(path, "m")
    assert path.name in str(raised.value)
    assert_store_empty(forest)


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    return re.sub(r"\s+", " ", text).strip().lower()


@pytest.mark.skipif(not REAL_PDFS.is_dir(), reason="shared/eval is not beside the project")
@pytest.mark.parametrize("arxiv_id", sorted(FACTS))
def test_real_papers_match_facts_read_off_the_pages(arxiv_id):
    facts = FACTS[arxiv_id]
    doc = load_document(REAL_PDFS / f"{arxiv_id}.pdf")
    assert doc.page_count == facts["page_count"]
    passages = doc.passages
    whole = _norm(doc.text)

    misses = []
    for heading in facts["headings"]:
        wanted = _norm(heading["title"])
        pages = [h.page for h in doc.headings if _norm(h.title).endswith(wanted)]
        if not pages or pages[0] != heading["page"]:
            misses.append(("heading", heading, pages))
    for caption in facts["captions"]:
        wanted = _norm(f"{caption['label']}")
        found = [p for p in passages if p.kind == CAPTION and _norm(p.text).startswith(wanted)
                 and _norm(caption["text_start"])[:30] in _norm(p.text)]
        if not found or found[0].page_start != caption["page"]:
            misses.append(("caption", caption))
    for sentence in facts["sentences"]:
        wanted = _norm(sentence["text"])
        holders = [p for p in passages if wanted in _norm(p.text)]
        if not holders or not (holders[0].page_start <= sentence["page"] <= holders[0].page_end):
            misses.append(("sentence", sentence))
        elif sentence.get("section") and not _norm(holders[0].section or "").endswith(_norm(sentence["section"]).split(" ", 1)[-1]):
            misses.append(("sentence section", sentence, holders[0].section))
    for running in facts["running_text"]:
        if running["where"] == "page_number":
            if any(_norm(p.text) == running["text"] for p in passages):
                misses.append(("page number", running))
        elif _norm(running["text"])[-40:] in whole:
            misses.append(("running text", running))
    for word in facts["hyphenated"]:
        if word["word"].lower() not in whole:
            misses.append(("hyphenated", word))
    assert not misses, misses


@pytest.mark.slow
def test_a_page_with_thousands_of_vector_marks_keeps_its_text(tmp_path):
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    marks = page.new_shape()
    for i in range(3000):  # a scatter plot drawn as 3,000 separate vector marks
        marks.draw_circle((100 + (i * 7) % 300, 100 + (i * 13) % 300), 1)
        marks.finish(color=(0, 0, 1))
    marks.commit()
    for i in range(0, 3000, 300):
        page.insert_text((200, 150 + i // 15), f"cluster {i}", fontsize=6)  # labels inside the plot
    page.insert_text((50, 600), "Figure 1: Scatter of many points.", fontsize=9)
    page.insert_text((50, 650), "Body text that stays in the document after the figure.", fontsize=10)
    doc.save(tmp_path / "scatter.pdf")
    passages = load_document(tmp_path / "scatter.pdf").passages
    assert [(p.kind, p.text) for p in passages] == [
        (CAPTION, "Figure 1: Scatter of many points."), ("text", "Body text that stays in the document after the figure.")]
