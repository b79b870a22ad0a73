"""The Reconcile page under AppTest, along the path a researcher takes: search for two passages,
pick one from each result list, compare; the verdict names the papers, quotes the sentences that
disagree, and goes away when a new search or pick makes it stale."""
import pytest

from testkit.workbench import button, open_app

pytestmark = pytest.mark.slow  # every test here takes 1 s of CPU or more

# Real text: SearchQA's size and BiDAF's standing, from "Ask the Right Questions" (arXiv 1705.07830),
# against a second paper's notes that misstate both.
AQA = ("## 5.1 Question Answering Data\n\nSearchQA is a dataset built starting from a set of Jeopardy! clues. SearchQA contains over 140k "
       "question/answer pairs and 6.9M snippets.\n\n## 5.5 Results\n\n"
       "Overall, SearchQA appears to be harder than other recent QA tasks such as SQuAD. BiDAF's performance drops "
       "by 40 F1 points on SearchQA compared to SQuAD. However, BiDAF is still competitive on SeachQA, improving "
       "over the Attention Sum Reader network by 13.7 F1 points.")
SURVEY = ("We compare reading comprehension benchmarks. SearchQA contains only 40k question/answer pairs, which "
          "makes it small.\n\n"
          "BiDAF is not competitive on SearchQA: it is worse than the Attention Sum Reader network by 13.7 F1 points.")


@pytest.fixture
def two_papers(workbench):  # noqa: F811
    from forest import MemoryForest

    forest = MemoryForest(data_dir=workbench, chunk_size=300)
    forest.ingest_text("reader", "Ask the Right Questions", AQA)
    forest.ingest_text("reader", "A Survey of QA Benchmarks", SURVEY)
    forest.close()
    return workbench


def search(app, side: str, query: str):
    next(t for t in app.text_input if t.label == f"Passage {side}: search the papers").set_value(query)
    return button(app, f"Search for passage {side}").click().run()


def pick(app, side: str, text: str):
    """Pick, from the side's results, the passage whose label holds `text`."""
    radio = next(r for r in app.radio if r.label == f"Passage {side}")
    index = next(i for i, option in enumerate(radio.options) if text in option)
    return radio.set_value(radio.options[index] if isinstance(radio.value, str) else index).run()


def verdict_shown(app) -> bool:
    return any(h.value == "Verdict" for h in app.subheader)


def test_two_passages_found_by_search_are_reconciled_with_a_verdict_naming_the_papers(two_papers):
    app = open_app().switch_page("workbench/reconcile.py").run()
    assert not app.exception
    app = search(app, "A", "how many question/answer pairs does SearchQA contain")
    app = pick(app, "A", "over 140k")
    app = search(app, "B", "SearchQA size of the benchmark")
    app = pick(app, "B", "only 40k")
    assert not verdict_shown(app)
    app = button(app, "Reconcile the two passages").click().run()
    assert not app.exception and verdict_shown(app)
    conclusion = next(m.value for m in app.markdown if m.value.startswith("They give different numbers"))
    assert conclusion.startswith("They give different numbers for question/answer pairs: over 140k against 40k.")
    assert "Ask the Right Questions (§5.1 Question Answering Data) says “SearchQA contains over 140k" in conclusion
    assert "A Survey of QA Benchmarks says “SearchQA contains only 40k" in conclusion
    assert "archive" not in conclusion and "none" not in conclusion
    # the sentences that disagree are quoted under each paper, not the passage's first line
    quotes = [m.value for m in app.markdown if m.value.startswith("> ")]
    assert quotes == ["> SearchQA contains over 140k question/answer pairs and 6.9M snippets.",
                      "> SearchQA contains only 40k question/answer pairs, which makes it small."]
    app = button(app, "Save as finding").click().run()
    assert any("Saved to the findings" in s.value for s in app.success)


def test_a_new_search_or_pick_clears_the_old_verdict(two_papers):
    app = open_app().switch_page("workbench/reconcile.py").run()
    app = pick(search(app, "A", "SearchQA question/answer pairs BiDAF competitive"), "A", "over 140k")
    app = pick(search(app, "B", "SearchQA benchmark size"), "B", "only 40k")
    app = button(app, "Reconcile the two passages").click().run()
    assert verdict_shown(app)
    app = pick(app, "A", "harder than other recent QA tasks")      # another pick: the verdict was about the other passage
    assert not verdict_shown(app)
    app = button(app, "Reconcile the two passages").click().run()
    assert verdict_shown(app)
    assert not any("over 140k" in m.value for m in app.markdown if m.value.startswith("> "))
    app = search(app, "A", "is BiDAF competitive on SearchQA")   # a new search: no verdict under new results
    assert not verdict_shown(app)


def test_the_same_passage_twice_is_a_clear_error_not_a_verdict(two_papers):
    app = open_app().switch_page("workbench/reconcile.py").run()
    app = pick(search(app, "A", "SearchQA question/answer pairs"), "A", "over 140k")
    app = pick(search(app, "B", "SearchQA question/answer pairs"), "B", "over 140k")
    app = button(app, "Reconcile the two passages").click().run()
    assert not app.exception and not verdict_shown(app)
    assert [e.value for e in app.error] == ["pick two different passages to reconcile"]


def test_a_polarity_flip_is_reported_as_a_contradiction_quoting_both_sentences(two_papers):
    app = open_app().switch_page("workbench/reconcile.py").run()
    app = pick(search(app, "A", "BiDAF competitive Attention Sum Reader"), "A", "harder than other recent QA tasks")
    app = pick(search(app, "B", "BiDAF competitive Attention Sum Reader"), "B", "not competitive")
    app = button(app, "Reconcile the two passages").click().run()
    conclusion = next(m.value for m in app.markdown if m.value.startswith("They"))
    assert conclusion.startswith("They contradict each other.")
    assert "“However, BiDAF is still competitive on SeachQA" in conclusion
    assert "“BiDAF is not competitive on SearchQA" in conclusion
    assert "40" not in conclusion.replace("13.7", "")     # the SQuAD drop is not taken for the disagreement


def test_finding_conflicts_again_clears_the_verdict_of_the_last_question(two_papers):
    app = open_app().switch_page("workbench/reconcile.py").run()
    next(t for t in app.text_input if t.label == "Question").set_value("Is BiDAF competitive on SearchQA?")
    app = button(app, "Find conflicts").click().run()
    table = app.dataframe[0].value
    named = set(table["first"]) | set(table["second"])
    assert named <= {"Ask the Right Questions (§5.1 Question Answering Data)", "Ask the Right Questions (§5.5 Results)",
                     "A Survey of QA Benchmarks"} and "A Survey of QA Benchmarks" in named
    app = button(app, "Reconcile this pair").click().run()
    assert verdict_shown(app)
    next(t for t in app.text_input if t.label == "Question").set_value("How large is SearchQA?")
    app = button(app, "Find conflicts").click().run()
    assert not verdict_shown(app)
