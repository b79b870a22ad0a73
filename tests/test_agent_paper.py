"""The offline agent loop on a real 15-page paper (../shared/eval/pdfs/1705.07830.pdf, issue 13):
it reaches the passage that answers in at most three EXPLORE steps, quotes it, and cites what it
quoted and nothing else."""
import re

import pytest

from conftest import SHARED_EVAL
from forest import MemoryForest, load_settings
from forest.agent import ANSWER, EXPLORE, MAX_EXPLORES, OFFLINE_LABEL
from forest.transcript import step_sentence

PAPER = SHARED_EVAL / "pdfs" / "1705.07830.pdf"


@pytest.fixture(scope="module")
def forest(tmp_path_factory, embedder):
    if not PAPER.exists():
        pytest.skip("shared/eval is not beside the project")
    settings = load_settings({"data_dir": tmp_path_factory.mktemp("paper")}, environ={})
    forest = MemoryForest(settings, embedder=embedder)
    forest.ingest_file(PAPER, "m")
    yield forest
    forest.close()


def explores(state) -> int:
    return sum(step.decision.action == EXPLORE for step in state.steps)


def answer_lines(state) -> list[str]:
    return state.answer.splitlines()[1:]   # after the "Extractive answer" note, one quoted sentence a line


def assert_cites_what_it_quotes(state) -> None:
    quoted = list(dict.fromkeys(int(re.search(r"\[node (\d+),", line).group(1)) for line in answer_lines(state)))
    assert [c.node.id for c in state.cited] == quoted
    assert set(quoted) <= {c.node.id for c in state.context if c.node.is_leaf}


def test_the_searchqa_count_is_read_on_page_5_within_three_explore_steps(forest):
    state = forest.ask("m", "How many question/answer pairs does SearchQA contain?")
    assert state.answered_by == OFFLINE_LABEL and explores(state) <= MAX_EXPLORES
    assert "SearchQA contains over 140k question/answer pairs" in answer_lines(state)[0]
    first = state.cited[0].node
    assert first.page_start == first.page_end == 5 and "5.1" in first.section
    assert_cites_what_it_quotes(state)
    assert len([c for c in state.context if c.node.is_leaf]) > len(state.cited)   # not all it read
    # the trace says why it stopped, and each EXPLORE went down toward the guide it then read
    last = state.steps[-1]
    assert last.decision.action == ANSWER and last.decision.reasoning
    assert step_sentence(last, state.threshold).endswith(f"the offline policy: {last.decision.reasoning}.")
    assert state.guides[0].node.id == first.id
    explored = [forest.node("m", s.decision.node_id) for s in state.steps[:-1]]
    assert all(first.path.startswith(n.path) for n in explored)
    assert "passage #1 of the 3" in state.steps[-2].decision.reasoning


@pytest.mark.parametrize("question, answer", [
    ("Which dataset do they evaluate on?", ["We evaluate on", "SearchQA"]),
    ("How is the reformulation system trained?", ["trained end-to-end", "policy gradient"]),
])
def test_questions_the_abstract_answers(forest, question, answer):
    state = forest.ask("m", question)
    assert explores(state) <= MAX_EXPLORES
    assert all(words in answer_lines(state)[0] for words in answer)
    assert_cites_what_it_quotes(state)
