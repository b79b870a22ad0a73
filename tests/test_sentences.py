"""forest.text.split_sentences: the one sentence splitter (answers, node summaries, conflicts,
personal memory). Abbreviations, "et al.", initials and numbers end no sentence; the cases that
broke the reported answers and summaries among them."""
import pytest

from forest.models.extractive import lead_sentences
from forest.text import split_sentences


@pytest.mark.parametrize("text, sentences", [
    # the reported answer cut at "e.g."
    ("Each clue is associated with the correct answer, e.g. George Washington, and a list of snippets "
     "from Google's top search results. SearchQA contains over 140k question/answer pairs.",
     ["Each clue is associated with the correct answer, e.g. George Washington, and a list of snippets "
      "from Google's top search results.", "SearchQA contains over 140k question/answer pairs."]),
    # the reported node summary that ended at "et al."
    ("For example, Narasimhan et al. (2016) use reinforcement learning for text games. We build on it.",
     ["For example, Narasimhan et al. (2016) use reinforcement learning for text games.", "We build on it."]),
    ("As Lee et al. BIBREF3 show, it helps. Then it stops.", ["As Lee et al. BIBREF3 show, it helps.", "Then it stops."]),
    ("This was shown by Lee et al. We then test it.", ["This was shown by Lee et al.", "We then test it."]),
    ("See Fig. 3 and Eq. 2 for the loss. It is convex.", ["See Fig. 3 and Eq. 2 for the loss.", "It is convex."]),
    ("We compare BiDAF vs. BM25, i.e. Two systems. Done.", ["We compare BiDAF vs. BM25, i.e. Two systems.", "Done."]),
    ("Accuracy rose from 3.5 to 4.2 points. The gain is small.",
     ["Accuracy rose from 3.5 to 4.2 points.", "The gain is small."]),
    ("We thank J. Smith and V. Niculae. The rest is ours.", ["We thank J. Smith and V. Niculae.", "The rest is ours."]),
    ("The speeches of the U.S. Senate are used. They are long.",
     ["The speeches of the U.S. Senate are used.", "They are long."]),
    ("It is on p. 5 of the report. No. 7 is missing. No. It is not.",
     ["It is on p. 5 of the report.", "No. 7 is missing.", "No.", "It is not."]),
    ("Is it new? Yes! 2019 was the year.", ["Is it new?", "Yes!", "2019 was the year."]),
    ("First paragraph, e.g.\n\nsecond paragraph", ["First paragraph, e.g.", "second paragraph"]),
    ("森林记忆很有用。它能回答问题！", ["森林记忆很有用。", "它能回答问题！"]),
    ("", []),
])
def test_sentences_end_where_a_reader_ends_them(text, sentences):
    assert split_sentences(text) == sentences


def test_a_summary_never_ends_inside_a_sentence_cut_at_an_abbreviation():
    text = ("For example, Narasimhan et al. (2016) learn to play text games with deep reinforcement learning. "
            "Other work uses supervised paraphrase models.")
    assert lead_sentences(text, 110) == "For example, Narasimhan et al. (2016) learn to play text games with deep " \
                                        "reinforcement learning."


def test_splitting_long_hostile_text_stays_linear():
    import time

    hostile = ("e.g. " * 20000) + (". " * 20000) + ("\n \n" * 20000) + "a" * 100000
    start = time.perf_counter()
    split_sentences(hostile)
    assert time.perf_counter() - start < 2.0
