"""The ANSWER/EXPLORE loop (seed 000 §3.2, §5.2): stepped by hand, overridden, run to the end,
offline and with Claude (the real client against a local Messages API server)."""
import json

import pytest

from conftest import topic_text
from fake_anthropic import FakeAnthropic
from forest import InvalidInput
from forest.agent import ANSWER, EXPLORE, OFFLINE_LABEL, AgentLoop, ClaudePolicy, OfflinePolicy
from forest.llm import ClaudeJSON

DOC = "## Volcanoes\n\n" + topic_text("volcanoes") + "\n\n## Jazz\n\n" + topic_text("jazz")


@pytest.fixture
def forest(make_forest):
    forest = make_forest(chunk_size=300)
    forest.ingest_text("m", "earth and music", DOC, threshold=0.0)  # one tree: exploring is needed
    return forest


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


def test_ask_runs_to_an_answer_and_serializes_the_trace(forest):
    state = forest.ask("m", "Who played bebop?")
    data = json.loads(json.dumps(state.to_dict()))
    assert data["done"] and "Parker" in data["answer"]
    assert data["trace"][-1]["decision"]["action"] == ANSWER
    assert all(step["decided_by"] for step in data["trace"])
    assert data["cited_nodes"][0]["citation"] == "§Jazz"
    assert forest.ask("nobody", "anything").answer.startswith("The memory holds nothing")


def test_claude_decides_with_the_seed_prompt_and_bad_replies_fall_back(forest):
    with FakeAnthropic() as fake:
        policy = ClaudePolicy(ClaudeJSON("test-key", "claude-test", retries=1, base_url=fake.url))
        loop = AgentLoop(forest, policy)
        state = loop.start("m", "Who played bebop?")
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
        assert (shown["title"], shown["leaf_count"]) == (root.title, root.leaf_count) and "page_start" in shown
        assert [a["action_name"] for a in prompt["available_actions"]] == [ANSWER, EXPLORE]
        loop.step(state)  # two unusable replies (retries=1): this step falls back to the offline policy
        assert state.steps[1].decision.source.startswith(OFFLINE_LABEL + " (fallback")
        assert not state.done
        passages = [c.node for c in state.context if c.node.is_leaf]
        cited = passages[0]
        fake.script = [json.dumps({"action": "ANSWER", "payload": {"final_answer": "Charlie Parker",
                                                                   "cited_node_ids": [424242]}}),
                       json.dumps({"action": "ANSWER", "payload": {"final_answer": f"Charlie Parker [node {cited.id}]",
                                                                   "cited_node_ids": [cited.id]}})]
        loop.step(state)   # a citation of a node it was not shown is refused and asked again
        assert state.answer == f"Charlie Parker [node {cited.id}]" and state.answered_by == "claude:claude-test"
        assert [c.node.id for c in state.cited] == [cited.id]    # what the model cites, not all it saw
        assert state.to_dict()["trace"][-1]["decision"]["payload"]["cited_node_ids"] == [cited.id]
