"""The Claude path with the real `anthropic` client against a local Messages API server."""
import json
import logging

from conftest import topic_text
from fake_anthropic import FakeAnthropic
from forest.llm import ClaudeJSON
from forest.summarizers import EXTRACTIVE_LABEL, ClaudeSummarizer


def summarizer_for(fake, retries=2):
    return ClaudeSummarizer(ClaudeJSON("test-key", "claude-test", retries=retries, base_url=fake.url), 200)


def test_leaf_and_parent_prompts_are_the_seeds_and_replies_are_parsed():
    with FakeAnthropic() as fake:
        summarizer = summarizer_for(fake)
        leaf = summarizer.summarize_leaf("Magma rises through the crust and erupts.")
        parent = summarizer.summarize_parent(["first child", "second child"])
    assert leaf.text.startswith("CLAUDE: Magma rises") and leaf.source == "claude:claude-test"
    assert parent.text == "CLAUDE: first child / second child"
    leaf_prompt = json.loads(fake.requests[0]["messages"][0]["content"].rsplit("}", 1)[0] + "}")
    assert leaf_prompt["role"] == "你是一个严谨的信息归档员。"
    assert leaf_prompt["constraints"]["max_length_chars"] == 200
    parent_prompt = json.loads(fake.requests[1]["messages"][0]["content"].rsplit("}", 1)[0] + "}")
    assert parent_prompt["input_data"]["child_summaries"] == ["first child", "second child"]


def test_bad_output_is_retried_then_accepted():
    with FakeAnthropic() as fake:
        fake.script = ["Sure! Here is a summary.", json.dumps({"summary": "x" * 500}),
                       "```json\n{\"summary\": \"fenced but fine\"}\n```"]
        summary = summarizer_for(fake).summarize_leaf("some text")
    assert summary.text == "fenced but fine" and len(fake.requests) == 3


def test_persistent_failure_falls_back_to_the_labelled_extractive_summary(caplog):
    with FakeAnthropic() as fake, caplog.at_level(logging.WARNING):
        fake.script = [(500, "overloaded")] * 10 + ["not json"] * 10
        summary = summarizer_for(fake, retries=1).summarize_leaf(
            "Volcanoes form where magma reaches the surface. They erupt ash and lava.")
    assert summary.source == EXTRACTIVE_LABEL
    assert "Volcanoes form" in summary.text
    assert "using the extractive summary" in caplog.text


def test_ingest_with_an_api_key_uses_claude_for_every_summary(make_forest, monkeypatch):
    with FakeAnthropic() as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        forest = make_forest(anthropic_api_key="test-key", claude_model="claude-test", chunk_size=300)
        archive = forest.ingest_text("m", "claude", topic_text("jazz"))
        nodes = forest.tree("m", archive.id)
    assert {n.summary_source for n in nodes} == {"claude:claude-test"}
    assert all(n.summary.startswith("CLAUDE: ") and len(n.summary) <= 200 for n in nodes)
    assert len(fake.requests) == len(nodes)
