import pytest

from bench.flat_baselines import mcnemar_exact
from forest.ingest.document import CAPTION, Document, Heading, Passage
from forest.tree.leaves import chunk_paragraphs, embed_text, split_long
from forest.tree.outline import heading_paths


def test_paragraphs_are_packed_whole_within_a_section_and_long_ones_split_at_sentences():
    long = " ".join(f"Sentence number {i} is here." for i in range(20))
    doc = Document("d", None, [Passage("Alpha para.", "Intro"), Passage("Beta para.", "Intro"),
                               Passage(long, "Intro"), Passage("Gamma.", "3.1 Model"),
                               Passage("Figure 1: a caption.", "3.1 Model", kind=CAPTION)],
                   title="T", headings=[Heading("Intro", level=1), Heading("3 Method", level=1),
                                        Heading("3.1 Model", level=2)])
    chunks = chunk_paragraphs(doc, 120)
    assert chunks[0].text == "Alpha para.\n\nBeta para."
    assert all(len(c.text) <= 120 for c in chunks)
    middle = [c for c in chunks if "Sentence" in c.text]
    assert len(middle) > 1 and all(c.text.endswith("here.") for c in middle)
    assert chunks[-2].text == "Gamma." and chunks[-2].heading_path == ("3 Method", "3.1 Model")
    assert chunks[-1].kind == CAPTION
    for c in chunks:  # offsets point into the document text
        assert doc.text[c.char_start:].startswith(c.text[:10])


def test_split_long_cuts_a_word_longer_than_the_limit():
    assert split_long("a " + "x" * 25, 10) == ["a", "xxxxxxxxxx", "xxxxxxxxxx", "xxxxx"]


def test_heading_paths_and_embed_text():
    headings = [Heading("1 A", level=1), Heading("1.1 B", level=2), Heading("2 C", level=1)]
    assert heading_paths(["1 A", "1.1 B", "2 C"], headings) == [("1 A",), ("1 A", "1.1 B"), ("2 C",)]
    assert embed_text("body", "Title", ("1 A", "1.1 B")) == "Title | 1 A > 1.1 B | body"
    assert embed_text("body") == "body"


def test_mcnemar_exact():
    assert mcnemar_exact([True, False], [True, False]) == (0, 0, 1.0)
    only_a, only_b, p = mcnemar_exact([True] * 10, [False] * 10)
    assert (only_a, only_b) == (10, 0) and p == pytest.approx(2 / 1024)
    assert mcnemar_exact([True, False, True], [False, True, True])[2] == 1.0
