"""forest.views.transcript: the agent's steps as sentences, numbered citations naming the paper, the run
as Markdown — over hand-built agent states (what the loop stores), so every word is checked."""
from forest.recall.agent import ANSWER, EXPLORE, OFFLINE_LABEL, AgentState, ContextNode, Decision, Step
from forest.records import LEAF, SUMMARY, Archive, MemoryNode
from forest.views.transcript import citations, decided_by, numbered_answer, step_sentence, transcript_markdown


def node(node_id: int, kind: str, first: int, last: int, **fields) -> MemoryNode:
    return MemoryNode(node_id, 7, None, f"{node_id}/", 1, kind, fields.pop("content", ""), f"summary {node_id}",
                      "test", first if kind == LEAF else None, None, first, last, None, None, **fields)


SECTION = node(42, SUMMARY, 0, 4, title="3 Method › 3.2 Training", page_start=3, page_end=4)
RESULTS = node(43, SUMMARY, 5, 9, title="4 Results", page_start=5, page_end=6)
PASSAGE = node(11, LEAF, 2, 2, content="We train for 40 epochs with Adam.", page_start=4, section="3.2 Training")
OTHER = node(17, LEAF, 12, 12, content="Appendix tables.", page_start=9, section="A Tables")
ARCHIVE = Archive(7, "alice", "joined", None, "ready", "", {"documents": [
    {"name": "adam", "title": "Training Deep Nets", "first_leaf": 0, "last_leaf": 9},
    {"name": "appendix-file", "title": None, "first_leaf": 10, "last_leaf": 14}]})


def state() -> AgentState:
    context = [ContextNode(SECTION, 0.71, "lca"), ContextNode(RESULTS, 0.44, "hit")]
    run = AgentState("alice", "How long is training?", 0.5, [ContextNode(PASSAGE, 0.8, ""), ContextNode(OTHER, 0.3, "")])
    run.steps = [
        Step(1, [c.to_dict() for c in context], Decision(EXPLORE, OFFLINE_LABEL, node_id=42,
                                                         reasoning="holds the best passage not read yet."),
             children=[{**ContextNode(PASSAGE, 0.8, "").to_dict(), "kept": True},
                       {**ContextNode(node(12, LEAF, 3, 3, page_start=4), 0.2, "").to_dict(), "kept": False}]),
        Step(2, [], Decision(ANSWER, "claude:claude-sonnet", final_answer="40 epochs [node 11, p. 4, §3.2] "
                             "(see the appendix (node 17)); node 99 is not cited [node 99].", cited_ids=[11, 17])),
    ]
    run.answer, run.answered_by = run.steps[-1].decision.final_answer, "claude:claude-sonnet"
    run.cited = [ContextNode(PASSAGE, 0.8, ""), ContextNode(OTHER, 0.3, "")]
    return run


def test_an_explore_step_says_in_words_what_was_opened_why_and_what_was_kept():
    sentence = step_sentence(state().steps[0], 0.5)
    assert sentence.startswith("Opened **3 Method › 3.2 Training** (pp. 3-4, 5 passages, node 42), which scored "
                               "0.71 for the question (the threshold is 0.50). Chosen by the offline policy: "
                               "holds the best passage not read yet.")
    assert sentence.endswith("Of its 2 parts it kept 1, those scoring at least 0.50 or holding a passage it "
                             "looks for: **p. 4, §3.2 Training** (0.80).")
    for jargon in ("#1", "of the 3 to read", "EXPLORE", "children"):
        assert jargon not in sentence


def test_a_node_opened_under_the_threshold_says_why():
    step = state().steps[0]
    step.context[0]["score"] = 0.19
    sentence = step_sentence(step, 0.30)
    assert "although it scored only 0.19 for the question, under the 0.30 threshold: the agent goes where a " \
           "passage it looks for lies, and a section can score low as a whole while holding it." in sentence


def test_an_answer_step_names_its_passages_and_who_answered():
    assert step_sentence(state().steps[1], 0.5) == "Answered, quoting 2 passages it read; decided by Claude (claude-sonnet)."


def test_decisions_name_who_made_them():
    assert decided_by("user") == "you"
    assert decided_by(OFFLINE_LABEL + " (step limit)") == "the offline policy (step limit)"
    assert decided_by(f"{OFFLINE_LABEL} (fallback: timeout)") == \
        "the offline policy, because the LLM could not decide (timeout)"
    assert decided_by("claude:claude-x") == "Claude (claude-x)"
    assert decided_by("openai:qwen2.5:7b") == "an OpenAI-compatible model (qwen2.5:7b)"


def test_citations_are_numbered_and_name_the_paper_page_and_section():
    cites = citations(state(), {7: ARCHIVE})
    assert [(c.number, c.node_id, c.label) for c in cites] == [
        (1, 11, "Training Deep Nets, p. 4, §3.2 Training"), (2, 17, "appendix-file, p. 9, §A Tables")]
    assert citations(state(), {})[0].label == "archive 7, p. 4, §3.2 Training"
    text = numbered_answer(state(), cites)
    assert text == "40 epochs [1] (see the appendix [2]); node 99 is not cited [node 99]."
    linked = numbered_answer(state(), cites, lambda c: f"#cite-{c.node_id}")
    assert linked.startswith("40 epochs [\\[1\\]](#cite-11) (see the appendix [\\[2\\]](#cite-17))")


def test_the_transcript_is_markdown_with_sources_and_steps_in_prose():
    run = state()
    markdown = transcript_markdown(run, citations(run, {7: ARCHIVE}))
    assert markdown.startswith("# How long is training?\n\n40 epochs [1] (see the appendix [2])")
    assert "## Sources\n\n1. Training Deep Nets, p. 4, §3.2 Training (node 11)\n   > We train for 40 epochs" in markdown
    assert "_Answered by Claude (claude-sonnet)._" in markdown
    assert "## Steps\n\n1. Opened **3 Method › 3.2 Training**" in markdown and "\n2. Answered, quoting 2" in markdown
    unfinished = AgentState("alice", "Q?", 0.5, [])
    assert transcript_markdown(unfinished, []) == "# Q?\n\n_(no answer yet)_\n"
