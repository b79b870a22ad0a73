"""The forest spec's ANSWER/EXPLORE loop: stepped by hand, overridden, run to the end,
offline and with Claude (the real client against a local Messages API server)."""
import json

import pytest

from testkit.topics import topic_text
from testkit.fake_anthropic import FakeAnthropic
from forest import InvalidInput
from forest.recall.agent import (ANSWER, EXPLORE, OFFLINE_LABEL, AgentLoop, AgentState,
                          LLMPolicy, ContextNode, OfflinePolicy, choose_guides, extractive_answer)
from forest.models.claude import ClaudeLLM
from forest.records import LEAF, SUMMARY, MemoryNode, ScoredNode
from forest.text import s_stem

DOC = "## Volcanoes\n\n" + topic_text("volcanoes") + "\n\n## Jazz\n\n" + topic_text("jazz")


@pytest.fixture
def forest(make_forest):
    forest = make_forest(chunk_size=300)
    forest.ingest_text("m", "earth and music", DOC, threshold=0.0)  # one tree: exploring is needed
    return forest


@pytest.mark.slow
def test_offline_loop_explores_best_first_then_answers_from_cited_leaves(forest):
    loop = AgentLoop(forest, OfflinePolicy())
    state = loop.start("m", "What makes eruptions explosive?")
    assert not state.done and all(not c.node.is_leaf for c in state.context)  # the root stands for the hits
    loop.step(state)
    first = state.steps[0]
    assert first.decision.action == EXPLORE and first.decision.source == OFFLINE_LABEL
    assert first.decision.to_seed_json()["payload"]["node_id_to_explore"] == first.decision.node_id
    assert first.children and any(c["kept"] for c in first.children)
    assert first.decision.node_id not in {c.node.id for c in state.context}  # replaced by its children
    while not state.done:
        loop.step(state)
    assert state.steps[-1].decision.action == ANSWER and state.answered_by == OFFLINE_LABEL
    assert state.answer.startswith("Extractive answer (offline, no LLM)")
    assert "viscous, gas-rich magma" in state.answer
    assert state.cited and all(c.node.is_leaf for c in state.cited)
    assert all(f"node {c.node.id}" in state.answer for c in state.cited[:1])
    assert "§Volcanoes" in state.answer
    done = len(state.steps)
    loop.step(state)
    assert len(state.steps) == done  # a finished run stays finished


@pytest.mark.slow
def test_the_user_can_override_the_policy(forest):
    loop = AgentLoop(forest, OfflinePolicy())
    state = loop.start("m", "Who played bebop?")
    [root] = [c.node for c in state.context]
    with pytest.raises(InvalidInput, match="not an unexplored summary node"):
        loop.step(state, explore_node_id=999999)
    loop.step(state, explore_node_id=root.id)
    assert state.steps[0].decision.source == "user" and root.id in state.explored
    with pytest.raises(InvalidInput):
        loop.step(state, explore_node_id=root.id)  # already explored


@pytest.mark.slow
def test_ask_runs_to_an_answer_and_serializes_the_trace(forest):
    state = forest.ask("m", "Who played bebop?")
    data = json.loads(json.dumps(state.to_dict()))
    assert data["done"] and "Parker" in data["answer"]
    assert data["trace"][-1]["decision"]["action"] == ANSWER
    assert all(step["decided_by"] for step in data["trace"])
    assert data["cited_nodes"][0]["citation"] == "§Jazz"
    assert forest.ask("nobody", "anything").answer.startswith("The memory holds nothing")


@pytest.mark.slow
def test_claude_decides_with_the_seed_prompt_and_bad_replies_fall_back(forest):
    with FakeAnthropic() as fake:
        policy = LLMPolicy(ClaudeLLM("test-key", "claude-test", retries=1, base_url=fake.url))
        loop = AgentLoop(forest, policy)
        state = loop.start("m", "Who played bebop?", threshold=0.0)   # every explored child is kept
        root = state.context[0].node
        fake.script = [json.dumps({"action": "EXPLORE", "payload": {"node_id_to_explore": root.id,
                                                                    "reasoning_for_exploration": "need details"}}),
                       "not json at all", json.dumps({"action": "EXPLORE", "payload": {"node_id_to_explore": 424242}})]
        loop.step(state)
        assert state.steps[0].decision.source == "claude:claude-test" and state.explored == [root.id]
        prompt = json.loads(fake.requests[0]["messages"][0]["content"].rsplit("}", 1)[0] + "}")
        assert prompt["input_data"]["user_query"] == "Who played bebop?"
        assert prompt["input_data"]["context_nodes"][0]["node_id"] == root.id
        shown = prompt["input_data"]["context_nodes"][0]   # a summary node comes with what it covers
        assert (shown["title"], shown["summary"], shown["leaf_count"]) == (root.title, root.summary, root.leaf_count)
        assert shown["leaf_count"] > 1 and {"page_start", "page_end"} <= set(shown) and "content" not in shown
        assert [a["action_name"] for a in prompt["available_actions"]] == [ANSWER, EXPLORE]
        loop.step(state)  # two unusable replies (retries=1): this step falls back to the offline policy
        assert state.steps[1].decision.source.startswith(OFFLINE_LABEL + " (fallback")
        assert not state.done
        passages = [c.node for c in state.context if c.node.is_leaf]
        assert len(passages) > 1
        cited = passages[0]
        fake.script = [json.dumps({"action": "ANSWER", "payload": {"final_answer": "Charlie Parker",
                                                                   "cited_node_ids": [424242]}}),
                       json.dumps({"action": "ANSWER", "payload": {"final_answer": f"Charlie Parker [node {cited.id}]",
                                                                   "cited_node_ids": [cited.id]}})]
        loop.step(state)   # a citation of a node it was not shown is refused and asked again
        shown = json.loads(fake.requests[-1]["messages"][0]["content"].rsplit("}", 1)[0] + "}")
        leaves = [n for n in shown["input_data"]["context_nodes"] if n["node_type"] == "LEAF_CHUNK"]
        assert {n["node_id"] for n in leaves} == {p.id for p in passages} and all(n["content"] for n in leaves)
        assert state.answer == f"Charlie Parker [node {cited.id}]" and state.answered_by == "claude:claude-test"
        assert [c.node.id for c in state.cited] == [cited.id]    # what the model cites, not all it saw
        assert state.to_dict()["trace"][-1]["decision"]["payload"]["cited_node_ids"] == [cited.id]


# --- the offline policy's choices, on states built by hand -------------------------------------
def node(node_id: int, path: str, leaf: bool = False, text: str = "") -> MemoryNode:
    depth = path.count("/") - 1
    return MemoryNode(node_id, 1, None, path, depth, LEAF if leaf else SUMMARY, text, text[:50], "test",
                      None, None, node_id, node_id, None, None, title=None if leaf else f"section {node_id}")


def state_with(context: list[MemoryNode], guides: list[MemoryNode], explored: list[int]) -> AgentState:
    return AgentState("m", "q", 0.3, [ContextNode(n, 0.5, "") for n in context], explored=list(explored),
                      guides=[ScoredNode(g, 1.0) for g in guides])


def test_the_offline_policy_weighs_guides_by_rank_and_keeps_to_its_budget():
    deep, mid, near = node(5, "1/2/3/4/5/", True), node(7, "1/6/7/", True), node(9, "1/8/9/", True)
    a, b, c = node(2, "1/2/"), node(6, "1/6/"), node(8, "1/8/")
    policy = OfflinePolicy()
    # the node holding the best guide not read yet that some node holds ...
    decision = policy.decide(state_with([b, c], [deep, mid, near], explored=[1]))
    assert (decision.action, decision.node_id) == (EXPLORE, 6)
    assert decision.reasoning.startswith("inside it lies the second-best match for the question (node 7), not read yet")
    # ... #1 alone outweighing #2 and #3 together
    beside_mid = node(10, "1/6/10/", True)
    decision = policy.decide(state_with([a, b], [deep, mid, beside_mid], explored=[1]))
    assert decision.node_id == 2 and "the best match for the question" in decision.reasoning
    # before any guide is read the budget does not bind: a deep tree still gets its first passage
    decision = policy.decide(state_with([node(4, "1/2/3/4/")], [deep, mid], explored=[1, 2, 3]))
    assert (decision.action, decision.node_id) == (EXPLORE, 4)
    # once one is read, three EXPLORE steps is the budget ...
    decision = policy.decide(state_with([node(4, "1/2/3/4/"), mid], [deep, mid], explored=[1, 6, 3]))
    assert decision.action == ANSWER and decision.reasoning == \
        "it had opened 3 sections, as many as it opens once it has read a passage it was looking for"
    # ... and a guide it cannot reach in the steps left is passed over for one it can
    decision = policy.decide(state_with([a, c, mid], [deep, mid, near], explored=[1, 6]))
    assert (decision.action, decision.node_id) == (EXPLORE, 8) and "the third-best match" in decision.reasoning
    decision = policy.decide(state_with([a, mid], [deep, mid], explored=[1, 6]))
    assert decision.action == ANSWER and decision.reasoning.endswith("within 1 more step")
    # every guide read: answer
    decision = policy.decide(state_with([mid, near], [mid, near], explored=[1, 6, 8]))
    assert decision.action == ANSWER and decision.reasoning == "it had read the 2 passages it was looking for"


def test_guides_take_both_rankings_in_turn_after_a_sentence_that_answers():
    spread = node(1, "1/", True, "The system was large. It was trained for a week. Reformulation came later.")
    answering = node(2, "2/", True, "Unrelated opening. The reformulation system is trained with policy gradient.")
    partial = node(3, "3/", True, "The reformulation system is described here.")
    other = node(4, "4/", True, "Nothing on the question.")
    context = [ScoredNode(n, 1.0) for n in (spread, partial, answering)]
    vector = [ScoredNode(n, 0.6) for n in (other, spread)]
    guides = choose_guides("How is the reformulation system trained?", context, vector)
    assert [g.node.id for g in guides] == [2, 1, 4]   # every word in one sentence, then context #1, vector #1
    guides = choose_guides("Which corpus was used?", context, vector)
    assert [g.node.id for g in guides] == [1, 4, 3]   # no sentence answers: the rankings in turn, once each


def test_the_answering_sentence_folds_plurals_prefers_the_tightest_match_and_is_found_by_its_words():
    loose = node(1, "1/", True, "Reformulations from another source: the zero-shot monolingual system trained on text.")
    tight = node(2, "2/", True, "The reformulation system is trained end-to-end using policy gradient.")
    counts = node(3, "3/", True, "It is a dataset of clues. SearchQA contains over 140k question/answer pairs.")
    ranked = [ScoredNode(n, 0.9) for n in (loose, counts)]
    # the tight sentence is neither ranking's: the BM25 route brings it, and its 4-word span beats 11
    guides = choose_guides("How is the reformulation system trained?", ranked, [], words=[ScoredNode(tight, 1.0)])
    assert [g.node.id for g in guides] == [2, 1, 3]
    assert choose_guides("How is the reformulation system trained?", ranked, [])[0].node.id == 1
    # "contain" finds "contains", "pair" finds "pairs"; "how many" asks for a count, not the word
    assert choose_guides("How many question/answer pairs does SearchQA contain?", ranked, [])[0].node.id == 3
    assert [s_stem(w) for w in ("pairs", "contains", "studies", "class", "corpus", "is")] == \
        ["pair", "contain", "study", "class", "corpus", "is"]


def test_the_extractive_answer_quotes_only_sentences_that_address_the_question_best_first():
    strong = node(1, "1/", True, "The system is trained end to end. Policy gradient trained the reformulation system. "
                                 "Reformulation system training uses rewards. The system is small.")
    other = node(2, "2/", True, "An unrelated opening. The reformulation system was trained last year.")
    weak = node(3, "3/", True, "An unrelated opening. The model was built last year.")
    text, cited = extractive_answer("How is the reformulation system trained?",
                                    [ContextNode(strong, 0.9, ""), ContextNode(other, 0.6, ""), ContextNode(weak, 0.5, "")])
    lines = text.splitlines()[1:]
    assert lines[0].startswith("- Policy gradient trained the reformulation system.")   # every word: first
    assert lines[1].startswith("- The reformulation system was trained last year. [node 2")   # every word, 2nd passage
    # a sentence with under half the question's words that the best holds does not address it;
    # a passage none of whose sentences does is not cited
    assert not any("The system is small" in line or "unrelated" in line for line in lines)
    assert [c.node.id for c in cited] == [1, 2]
    # a bibliography entry is never quoted, however many of the question's words it holds
    entry = node(4, "4/", True, "Ann Lee. 2017. Training the reformulation system. In Proceedings of ACL, pp. 1-9.")
    text, cited = extractive_answer("How is the reformulation system trained?",
                                    [ContextNode(entry, 0.9, ""), ContextNode(other, 0.5, "")])
    assert "Proceedings" not in text and [c.node.id for c in cited] == [2]
    assert extractive_answer("anything", []) == ("The memory holds nothing relevant to this question.", [])


# --- a question over several chosen papers ----------------------------------------------------------
@pytest.fixture
def three(make_forest):
    """Three papers in one model_id: choosing two of them is asking over those two."""
    forest = make_forest(chunk_size=300)
    ids = {topic: forest.ingest_text("m", topic.capitalize(), topic_text(topic)).id
           for topic in ("volcanoes", "jazz", "photosynthesis")}
    return forest, ids


@pytest.mark.slow
def test_a_question_over_two_chosen_papers_reads_and_speaks_of_each(three):
    forest, ids = three
    state = forest.ask("m", "Who played bebop?", archive_ids=[ids["volcanoes"], ids["jazz"]])
    assert state.papers == {ids["jazz"]: "Jazz", ids["volcanoes"]: "Volcanoes"}   # the better match first
    assert {g.node.archive_id for g in state.guides} == {ids["jazz"], ids["volcanoes"]}   # guides in each
    lines = state.answer.splitlines()
    assert lines[1] == "Jazz:" and "Charlie Parker" in lines[2]
    assert lines[-1] == "Nothing in Volcanoes addresses this."
    assert {c.node.archive_id for c in state.cited} == {ids["jazz"]}
    data = json.loads(json.dumps(state.to_dict()))
    assert data["papers"] == [{"archive_id": ids["jazz"], "name": "Jazz"},
                              {"archive_id": ids["volcanoes"], "name": "Volcanoes"}]
    # asked over all of the model_id's papers, or over one: as before, no paper named
    for scope in (None, [ids["jazz"]]):
        state = forest.ask("m", "Who played bebop?", archive_ids=scope)
        assert not state.papers and "Nothing in" not in state.answer and "Jazz:" not in state.answer


@pytest.mark.slow
def test_an_llm_is_told_the_papers_asked(three):
    forest, ids = three
    with FakeAnthropic() as fake:
        loop = AgentLoop(forest, LLMPolicy(ClaudeLLM("test-key", "claude-test", retries=0, base_url=fake.url)))
        for scope, told in (((ids["jazz"], ids["volcanoes"]), True), (None, False)):
            state = loop.start("m", "Who played bebop?", archive_ids=scope)
            fake.script = [json.dumps({"action": "ANSWER", "payload": {"final_answer": "Charlie Parker",
                                                                       "cited_node_ids": []}})]
            loop.step(state)
            prompt = json.loads(fake.requests[-1]["messages"][0]["content"].rsplit("}", 1)[0] + "}")
            if told:
                assert prompt["input_data"]["papers_asked"] == [{"archive_id": ids["jazz"], "title": "Jazz"},
                                                               {"archive_id": ids["volcanoes"], "title": "Volcanoes"}]
                assert "each paper" in prompt["constraints"]["papers_asked"]
            else:
                assert "papers_asked" not in prompt["input_data"] and "constraints" not in prompt
            assert prompt["input_data"]["user_query"] == "Who played bebop?"
