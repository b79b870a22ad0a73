"""Documents to chunks: Markdown sections, section-bounded chunks with page ranges, captions alone,
and the rank fusion the budgeted context uses."""
from forest.tree.chunking import chunk_document
from forest.ingest.document import CAPTION, Document, Passage
from forest.records import cite
from forest.recall.retrieval import reciprocal_rank_fusion
from forest.text import counted, display_title
from forest.ingest import text_document


def test_markdown_headings_become_sections_and_the_title_is_kept_apart():
    doc = text_document("paper", "# A Title\n\nIntro words.\n\n## Methods\n\nWe did it.\n\n```\n## not a heading\n```\n\n"
                                 "### 2.1 Details\n\nMore.\n")
    assert doc.title == "A Title"
    assert [(p.section, p.text) for p in doc.passages] == [
        (None, "Intro words."), ("Methods", "We did it."), ("Methods", "```\n## not a heading\n```"),
        ("2.1 Details", "More.")]
    assert [(h.title, h.level) for h in doc.headings] == [("Methods", 2), ("2.1 Details", 3)]


def test_titles_and_headings_set_in_capitals_read_as_written():
    doc = text_document("paper", "# ASK THE RIGHT QUESTIONS: ACTIVE QUESTION REFORMULATION WITH REINFORCEMENT LEARNING\n\n"
                                 "## ABSTRACT\n\nWords.\n\n## 2 RELATED WORK\n\nMore.\n\n## CNN\n\nA model.\n")
    assert doc.title == "Ask the Right Questions: Active Question Reformulation with Reinforcement Learning"
    assert [h.title for h in doc.headings] == ["Abstract", "2 Related Work", "CNN"]   # one short word: an acronym
    assert [p.section for p in doc.passages] == ["Abstract", "2 Related Work", "CNN"]
    assert display_title("II-A DATASET EXTRACTION") == "II-A Dataset Extraction"     # numerals stay
    assert display_title("CIVIL WAR: A STUDY OF PRE-TRAINING FOR Q&A") == "Civil War: A Study of Pre-Training for Q&A"
    for kept in ("Offensive Language Detection", "pioNER: Datasets", "灿灿是小朱的女儿", "2 Methodology", ""):
        assert display_title(kept) == kept


def test_counts_take_their_nouns_in_the_right_number():
    assert [counted(1, "memory"), counted(2, "memory"), counted(0, "passage"), counted(1, "event")] == [
        "1 memory", "2 memories", "0 passages", "1 event"]
    assert [counted(2, "match"), counted(3, "day"), counted(1_500, "leaf", "leaves")] == ["2 matches", "3 days",
                                                                                      "1,500 leaves"]


def test_chunks_stay_inside_sections_carry_pages_and_captions_stand_alone():
    words = " ".join(f"word{i}" for i in range(60))
    doc = Document("d", None, [
        Passage(words, "1 Intro", 1, 1), Passage(words, "1 Intro", 1, 2),
        Passage("Figure 1: A caption.", "1 Intro", 2, 2, CAPTION), Passage("Table 2: Another.", "1 Intro", 2, 2, CAPTION),
        Passage(words, "2 Method", 3, 3)])
    chunks = chunk_document(doc, chunk_size=300, chunk_overlap=0)
    assert {c.section for c in chunks} == {"1 Intro", "2 Method"}
    captions = [c for c in chunks if c.kind == CAPTION]
    assert [(c.text, c.page_start) for c in captions] == [("Figure 1: A caption.", 2), ("Table 2: Another.", 2)]
    intro = [c for c in chunks if c.section == "1 Intro" and c.kind != CAPTION]
    assert intro[0].page_start == 1 and intro[-1].page_end == 2
    assert all(doc.text[c.char_start : c.char_start + len(c.text)] == c.text for c in chunks)
    assert all(c.page_start == 3 for c in chunks if c.section == "2 Method")


def test_citations():
    assert cite(7, 7, "3.2 Model") == "p. 7, §3.2 Model"
    assert cite(7, 8, None) == "pp. 7-8"
    assert cite(None, None, "Introduction") == "§Introduction"
    assert cite(None, None, None) == ""


def test_rank_fusion_shares_ranks_on_ties_and_scores_0_to_1():
    fused = reciprocal_rank_fusion([[0.9, 0.5, 0.1], [0.2, 0.2, 0.9]])
    top = 2 / 61
    assert fused == [(1 / 61 + 1 / 62) / top, (2 / 62) / top, (1 / 63 + 1 / 61) / top]  # items 0, 1 tie in list 2
    assert fused[0] > fused[2] > fused[1]
    assert max(reciprocal_rank_fusion([[3.0, 1.0], [5.0, 0.0]])) == 1.0
    tied = reciprocal_rank_fusion([[1.0, 1.0, 0.0]])
    assert tied[0] == tied[1] == 1.0 and tied[2] < 1.0


def test_context_pools_keep_every_hit_of_a_big_tree():
    from forest.records import LEAF, SUMMARY, MemoryNode, Representative, ScoredNode
    from forest.recall.retrieval import _windows

    def node(i, kind, first, last):
        return MemoryNode(i, 1, None, f"{i}/", 0, kind, "", "", "", None, None, first, last, None, None)

    root = node(1, SUMMARY, 0, 999)
    hits = [ScoredNode(node(2, LEAF, 7, 7), 0.9), ScoredNode(node(3, SUMMARY, 0, 499), 0.8),
            ScoredNode(node(4, LEAF, 990, 990), 0.7)]
    windows = _windows(Representative(root, "lca", 0.9, [2, 3, 4], ""), hits, 200)
    covered = {i for start, stop in windows for i in range(start, stop + 1)}
    assert {7, 990} <= covered and len(covered) <= 200 + len(hits)
    assert windows == sorted(windows) and all(a[1] < b[0] for a, b in zip(windows, windows[1:]))
    assert _windows(Representative(node(5, SUMMARY, 0, 99), "lca", 0.9, [2], ""), hits[:1], 200) == [(0, 99)]
