"""What an offline answer quotes reads as a sentence (issue 32): never a fragment of a sentence
begun in another passage (a PDF column or page break, a word broken around a table), never a row
of table cells unless the question asks for numbers, never a sentence ending in a broken word; and
a question asked over several chosen papers speaks of each of them. The passages are the real PDFs'
text as forest.ingest.pdf reads it (../shared/eval/pdfs)."""
import pytest

from forest.recall.agent import (ContextNode, asks_for_numbers, extractive_answer, has_table_cells, overview_answer,
                                 quotable)
from forest.records import LEAF, MemoryNode

# 1809.01202, §4.2 and §4.1: a table read into the paragraph, which goes on mid-word ("ob|tained",
# "McK|eown") after the table's cells.
CEI = ("CP (F1) CEI (F1) Full LSTM 0.758 0.853 DA AVG LSTM 0.685 0.818 Word LSTM 0.694 0.792 tained lowest F1 while "
       "the LSTM model made the best identification performance. As opposed to the simple binary classification of "
       "the causality messages, in order to detect causal explanation, it is more beneficial to consider the relation "
       "across discourse arguments of the whole message and implicit distributional representation due to the "
       "implicit causal relations between two distant arguments.")
CP = ("Prec Rec F1 Linear SVM 0.773 0.727 0.743 RBF SVM 0.739 0.771 0.749 Random Forest 0.747 0.790 0.746 LSTM 0.851 "
      "0.858 0.853 eown, 2015) and (Lin et al., 2014) in Table 3). This result can be expected since 1) these models "
      "were trained with news articles and 2) they are trained for all possible discourse relations in addition to "
      "causal relations (e.g., contrast, condition, etc). Among our suggested models, SVM and random forest "
      "classifier performed better than LSTM and, in the general trend, the more complex the models were, the worse "
      "they performed.")
# 1912.01214: a passage that starts mid-sentence (its start is on the previous page) and one that
# ends in a word broken at the line end.
MULTIUN = ("other three languages which do not have parallel data between each other. The three languages are Arabic "
           "(Ar), Spanish (Es), and Russian (Ru), and mutual translation between themselves constitutes six zero-shot "
           "translation direction for evaluation. We use 80K BPE splits as the vocabulary.")
SHARED = ("Meanwhile, in the supervised direction of pivot→target, our approaches performs even better than the "
          "original supervised Transformer thanks to the shared en-")


def passage(node_id: int, text: str, archive_id: int = 1) -> ContextNode:
    node = MemoryNode(node_id, archive_id, None, f"{archive_id}/{node_id}/", 1, LEAF, text, text[:50], "test",
                      node_id, None, node_id, node_id, None, None, section="4 Results")
    return ContextNode(node, 0.9, "")


def quoted(answer: str) -> list[str]:
    return [line[2:] for line in answer.splitlines() if line.startswith("- ")]


@pytest.mark.parametrize("sentence", [
    "tained lowest F1 while the LSTM model made the best identification performance.",   # the rest of "obtained"
    "other three languages which do not have parallel data between each other.",         # begun on the page before
    "where Θ is the set of all model parameters.",                                        # the line after a formula
    "our approaches performs even better than the original supervised Transformer thanks to the shared en-",
    "Our approaches perform better thanks to the shared en-",                              # ends in a broken word
])
def test_fragments_are_not_quotable(sentence):
    assert quotable(sentence) is None and quotable(sentence, numbers=True) is None


@pytest.mark.parametrize("sentence", [
    "word2vec vectors are trained on the corpus.", "spaCy 2.0 is the baseline.",   # a name in lower case
    "The three languages are Arabic (Ar), Spanish (Es), and Russian (Ru).",
    "We train with a batch size of 32 for 30 epochs, and 0.5 dropout.",             # numbers in prose
    "The training sets have 153,326, 329,882, and 560,767 parallel sentences, respectively.",
])
def test_sentences_and_prose_numbers_are_quotable(sentence):
    assert quotable(sentence) == sentence and not has_table_cells(sentence)


def test_table_cells_are_quoted_only_for_numbers_and_only_up_to_the_last_cell():
    first = CEI.split(". ")[0] + "."
    assert has_table_cells(first) and quotable(first) is None
    assert quotable(first, numbers=True) == "CP (F1) CEI (F1) Full LSTM 0.758 0.853 DA AVG LSTM 0.685 0.818 Word LSTM " \
                                           "0.694 0.792"
    assert has_table_cells("COMER 88.64% - Hierachical-Attn 86.69% - MLP 83.24%")   # one number a row, no prose


@pytest.mark.parametrize("question", ["How many question/answer pairs does SearchQA contain?",
                                      "What F1 does the LSTM get?", "How large is the dataset?",
                                      "What accuracy does the proposed system achieve?",
                                      "How do their results compare to state-of-the-art?"])
def test_questions_asking_for_numbers(question):
    assert asks_for_numbers(question)


@pytest.mark.parametrize("question", ["What baselines did they consider?", "What crowdsourcing platform is used?",
                                      "Which model made the best identification?", "What is the source of the data?"])
def test_questions_not_asking_for_numbers(question):
    assert not asks_for_numbers(question)


def test_the_reported_answer_no_longer_opens_with_cells_or_mid_word():
    """The user's answer began "CP (F1) CEI (F1) Full LSTM 0.758 0.853 DA AVG LSTM … tained lowest F1
    while …": the sentence holding most of the question's words was table cells and a fragment."""
    text, _ = extractive_answer("Which model made the best identification?", [passage(1, CEI), passage(2, CP)])
    lines = quoted(text)
    assert lines and all(not line.startswith(("CP (F1)", "Prec Rec")) for line in lines)
    assert not any(word in text for word in ("tained", "eown", "0.758"))
    assert all(line[:1].isupper() for line in lines)


def test_a_question_asking_for_numbers_may_quote_the_table_row():
    text, _ = extractive_answer("What F1 does the LSTM get?", [passage(1, CP), passage(2, CEI)])
    lines = quoted(text)
    assert lines[0].startswith("Prec Rec F1 Linear SVM 0.773 0.727 0.743") and "LSTM 0.851 0.858 0.853 [node 1" in lines[0]
    assert "eown" not in text and "tained" not in text


def test_a_passage_cut_at_its_start_or_end_yields_no_fragment():
    text, _ = extractive_answer("Which languages have no parallel data between each other?",
                                [passage(1, MULTIUN), passage(2, SHARED)])
    assert not any(line.startswith(("other three", "Meanwhile")) for line in quoted(text))
    assert quoted(text)[0].startswith("The three languages are Arabic")


# --- several chosen papers ------------------------------------------------------------------------
PAPERS = {1: "Causal Explanation Analysis", 2: "Zero-Shot Translation"}


def test_a_question_over_two_papers_quotes_each_under_its_name():
    evidence = [passage(1, CP, archive_id=1), passage(2, CEI, archive_id=1), passage(3, MULTIUN, archive_id=2)]
    text, cited = extractive_answer("Which languages and models are compared?", evidence, PAPERS)
    lines = text.splitlines()
    assert lines[0].startswith("Extractive answer") and "Causal Explanation Analysis:" in lines \
        and "Zero-Shot Translation:" in lines
    assert {c.node.archive_id for c in cited} == {1, 2}
    assert len(quoted(text)) <= 4


def test_a_paper_with_nothing_on_the_question_is_named_as_such():
    evidence = [passage(3, MULTIUN, archive_id=2), passage(1, CP, archive_id=1)]
    text, cited = extractive_answer("Which languages have no parallel data between each other?", evidence, PAPERS)
    assert text.splitlines()[1] == "Zero-Shot Translation:"
    assert text.splitlines()[-1] == "Nothing in Causal Explanation Analysis addresses this."
    assert {c.node.archive_id for c in cited} == {2}
    # over one paper (or all of a model_id's) the answer is as before: no names, no such line
    single, _ = extractive_answer("Which languages have no parallel data between each other?", evidence)
    assert "Nothing in" not in single and "Zero-Shot Translation:" not in single


def test_an_overview_over_two_papers_opens_each_abstract_under_its_name():
    abstracts = [passage(1, "We explore causal explanation analysis. It has two subtasks.", archive_id=1),
                 passage(2, "We study zero-shot translation. Pivot languages help.", archive_id=2)]
    text, _ = overview_answer(abstracts, PAPERS)
    assert text.splitlines()[1:] == [
        "Causal Explanation Analysis:", "- We explore causal explanation analysis. [node 1, §4 Results]",
        "Zero-Shot Translation:", "- We study zero-shot translation. [node 2, §4 Results]"]


def test_when_no_paper_holds_a_word_of_the_question_each_is_quoted_as_over_one_paper():
    evidence = [passage(1, CP, archive_id=1), passage(3, MULTIUN, archive_id=2)]
    text, cited = extractive_answer("What is the carbon footprint?", evidence, PAPERS)
    assert "Nothing in" not in text and {c.node.archive_id for c in cited} == {1, 2}
    assert len(quoted(text)) == 2      # the first quotable sentence of each
