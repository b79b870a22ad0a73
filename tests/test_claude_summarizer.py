"""The Claude path with the real `anthropic` client against a local Messages API server."""
import json
import logging

from testkit.topics import topic_text
from testkit.fake_anthropic import FakeAnthropic
from forest.models.claude import ClaudeLLM
from forest.models.extractive import TermStats
from forest.models.summarizers import EXTRACTIVE_LABEL, EXTRACTIVE_NODE_LABEL, LLMSummarizer, NodeBrief


def summarizer_for(fake, retries=2):
    return LLMSummarizer(ClaudeLLM("test-key", "claude-test", retries=retries, base_url=fake.url), 200)


def brief(title, parts):
    return NodeBrief(title, parts, [1] * len(parts), TermStats.from_texts(parts))


def prompt_of(request):
    return json.loads(request["messages"][0]["content"].rsplit("}", 1)[0] + "}")


def test_leaf_and_parent_prompts_are_the_seeds_and_replies_are_parsed():
    with FakeAnthropic() as fake:
        summarizer = summarizer_for(fake)
        leaf = summarizer.summarize_leaf("Magma rises through the crust and erupts.")
        parent = summarizer.summarize_node(brief("3 Method › 3.2 Training", ["first child", "second child"]))
        group = summarizer.summarize_node(brief(None, ["lava flows downhill", "ash clouds rise"]))
    assert leaf.text.startswith("CLAUDE: Magma rises") and leaf.source == "claude:claude-test"
    assert parent.text == "CLAUDE: first child / second child" and parent.title == "3 Method › 3.2 Training"
    leaf_prompt = prompt_of(fake.requests[0])
    assert leaf_prompt["role"] == "你是一个严谨的信息归档员。"
    assert leaf_prompt["constraints"]["max_length_chars"] == 200
    parent_prompt = prompt_of(fake.requests[1])
    assert parent_prompt["role"] == "你是一个高级知识整合专家，擅长从多个相关的信息片段中提炼出更高层次的共同主题。"
    assert parent_prompt["input_data"]["child_summaries"] == ["first child", "second child"]
    assert parent_prompt["input_data"]["heading_path"] == "3 Method › 3.2 Training"   # the heading path as context
    assert "title" not in parent_prompt["output_format"]["json_structure"]
    # without a heading the model names the node too
    assert "title" in prompt_of(fake.requests[2])["output_format"]["json_structure"]
    assert group.title == "CLAUDE TITLE: lava flows downhill /"


def test_a_node_reply_without_the_title_it_was_asked_for_falls_back_to_the_labelled_extractive_one():
    with FakeAnthropic() as fake:
        fake.script = [json.dumps({"summary": "no title here"})] * 3
        summary = summarizer_for(fake).summarize_node(brief(None, ["Lava flows downhill fast. It burns trees.",
                                                                   "Ash clouds rise high. Planes stay grounded."]))
    assert summary.source == EXTRACTIVE_NODE_LABEL and summary.title


def test_bad_output_is_retried_then_accepted():
    with FakeAnthropic() as fake:
        fake.script = ["Sure! Here is a summary.", json.dumps({"summary": "x" * 500}),
                       "```json\n{\"summary\": \"fenced but fine\"}\n```"]
        summary = summarizer_for(fake).summarize_leaf("some text")
    assert summary.text == "fenced but fine" and len(fake.requests) == 3


def test_persistently_unusable_answers_fall_back_to_the_labelled_extractive_summary(caplog):
    with FakeAnthropic() as fake, caplog.at_level(logging.WARNING):
        fake.script = [(500, "overloaded")] + ["not json"] * 10
        summary = summarizer_for(fake, retries=1).summarize_leaf(
            "Volcanoes form where magma reaches the surface. They erupt ash and lava.")
    assert summary.source == EXTRACTIVE_LABEL
    assert "Volcanoes form" in summary.text
    assert "using the extractive summary" in caplog.text and len(fake.requests) == 2


def test_a_server_that_stays_down_is_a_clear_error_not_a_fallback():
    import pytest

    from forest.errors import ModelUnavailable

    with FakeAnthropic() as fake:
        fake.script = [(500, "overloaded")] * 10
        with pytest.raises(ModelUnavailable, match=f"LLM server at {fake.url} \\(claude:claude-test\\).*overloaded"):
            summarizer_for(fake, retries=1).summarize_leaf("Volcanoes form where magma reaches the surface.")
    assert len(fake.requests) == 2


def test_ingest_with_an_api_key_uses_claude_for_every_summary(make_forest, monkeypatch):
    with FakeAnthropic() as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        forest = make_forest(anthropic_api_key="test-key", claude_model="claude-test", chunk_size=300)
        archive = forest.ingest_text("m", "claude", topic_text("jazz"))
        nodes = forest.tree("m", archive.id)
    assert {n.summary_source for n in nodes} == {"claude:claude-test"}
    assert all(n.summary.startswith("CLAUDE: ") and len(n.summary) <= (200 if n.is_leaf else 400) for n in nodes)
    assert all(n.title for n in nodes if not n.is_leaf)
    assert len(fake.requests) == len(nodes)


def test_one_time_budget_bounds_a_call_and_its_retries(monkeypatch):
    """Claude hangs on every request: the call gives up within its budget (the SDK's own retries
    nested in ours used to allow (retries + 1) x 2 attempts of the full timeout: 6 x 60 s by
    default, longer than the personal write queue's lease)."""
    import time

    import pytest

    from forest.errors import ModelUnavailable
    from forest.models import llm
    from forest.models.replies import SummaryReply

    monkeypatch.setattr(llm, "CALL_BUDGET_SECONDS", 5.0)
    with FakeAnthropic() as fake:
        fake.hang = lambda prompt: True
        client = ClaudeLLM("test-key", "claude-test", retries=5, base_url=fake.url, timeout=2.0)
        started = time.monotonic()
        with pytest.raises(ModelUnavailable, match="did not answer.*timed out"):
            client.ask("a prompt", SummaryReply)
        spent = time.monotonic() - started
    # 2-second attempts with short waits between them, none begun that would end after the 5 s
    assert 4.0 <= spent < 7.5 and 2 <= fake.held <= 3, (spent, fake.held)
