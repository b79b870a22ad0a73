"""How the `openai` LLM asks for structure from servers that take only some forms, as real servers
answer (llama-cpp-python refuses a response_format it does not know with a 500, not a 400), with
the real `openai` client against testkit/fake_openai.py. The same against the real llama.cpp server:
tests/test_llama_server.py."""
from __future__ import annotations

import json
import time

import pytest
from testkit.fake_openai import FakeOpenAI, Fault

from forest.models.llm import LLMError
from forest.models.openai_api import OpenAILLM
from forest.models.replies import SummaryReply, TitledSummaryReply
from testkit.processes import forest_env
from test_openai_provider import client, run_forest


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_a_500_naming_response_format_steps_down_at_once_instead_of_calling_the_server_down(stream):
    """llama-cpp-python answers json_schema with HTTP 500 "Input should be 'text' or 'json_object'"
    on ('body', 'response_format', 'type'): the next form is asked at once, no retry, no wait."""
    with FakeOpenAI(refuses=("json_schema",), refuses_with=500) as fake:
        llm = client(fake, stream)
        fake.script = [json.dumps({"summary": "Lava flows downhill."})]
        started = time.monotonic()
        reply = llm.ask("Summarize: lava flows downhill.", SummaryReply)
        took = time.monotonic() - started
    assert reply.summary == "Lava flows downhill." and took < 2  # a retry would have waited its backoff
    assert fake.forms() == ["json_schema", "tool"]
    assert (llm.structured_output, llm.refused_forms) == ("tool", ("json_schema",))
    assert llm.counts["stepped_down"] == 1 and llm.counts["repaired"] == 0


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_llama_cpps_json_object_with_a_schema_is_the_step_after_a_tool_call(stream):
    with FakeOpenAI(refuses=("json_schema", "tool"), refuses_with=500) as fake:
        llm = client(fake, stream)
        fake.script = [json.dumps({"summary": "Magma rises.", "title": "Volcanoes"})]
        reply = llm.ask("Summarize.", TitledSummaryReply)
    assert (reply.summary, reply.title) == ("Magma rises.", "Volcanoes")
    assert fake.forms() == ["json_schema", "tool", "json_object_schema"]
    assert fake.requests[2]["response_format"] == {"type": "json_object",
                                                   "schema": TitledSummaryReply.model_json_schema()}
    assert llm.structured_output == "json_object_schema"


def test_a_500_that_names_no_field_is_a_server_fault_retried_and_no_form_is_given_up():
    with FakeOpenAI() as fake:
        llm = client(fake)
        fake.script = [Fault(500, "CUDA error: out of memory"), json.dumps({"summary": "after the fault"})]
        reply = llm.ask("Summarize.", SummaryReply)
    assert reply.summary == "after the fault" and fake.forms() == ["json_schema", "json_schema"]
    assert llm.structured_output == "json_schema" and llm.refused_forms == ()


def test_what_a_server_took_is_remembered_for_the_next_client_of_the_same_url_and_model():
    with FakeOpenAI(models=("test-chat", "other-chat"), refuses=("json_schema", "tool"), refuses_with=500) as fake:
        client(fake).ask("one", SummaryReply)
        again = client(fake)
        again.ask("two", SummaryReply)
        other_model = OpenAILLM(fake.url, "other-chat", timeout=10)
        other_model.ask("three", SummaryReply)
    assert fake.forms() == ["json_schema", "tool", "json_object_schema",  # the first client learns
                            "json_object_schema",                          # the next starts there
                            "json_schema", "tool", "json_object_schema"]   # another model: its own ladder
    assert again.structured_output == other_model.structured_output == "json_object_schema"
    assert again.counts["stepped_down"] == 0


def test_raw_control_characters_in_a_replys_strings_are_taken_as_they_are():
    """A grammar-constrained small model wrote a raw carriage return inside a string: invalid JSON,
    but nothing else is in doubt, so it is used without a second request."""
    with FakeOpenAI() as fake:
        llm = client(fake)
        fake.script = ['{"summary": "Lava flows\rdownhill.\tFast."}']
        reply = llm.ask("Summarize.", SummaryReply)
    assert reply.summary == "Lava flows\rdownhill.\tFast." and len(fake.requests) == 1
    assert llm.counts["loosened"] == 1 and llm.counts["repaired"] == 0


def test_a_reply_broken_otherwise_is_still_asked_for_again_with_what_was_wrong():
    """Control characters are the only thing let through: NaN, or a string left open, are refused
    as before and repaired by asking again with the error said."""
    with FakeOpenAI() as fake:
        llm = client(fake)
        fake.script = ['{"summary": "cut\roff', '{"summary": NaN}', json.dumps({"summary": "fine"})]
        reply = llm.ask("Summarize.", SummaryReply)
    assert reply.summary == "fine" and len(fake.requests) == 3
    second, third = (r["messages"][0]["content"] for r in fake.requests[1:])
    assert "could not be used" in second and "not a JSON object" in second
    assert "NaN is not a JSON number" in third
    assert llm.counts["repaired"] == 1 and llm.counts["loosened"] == 0


def test_a_server_refusing_every_form_is_still_asked_with_the_prompt_alone():
    with FakeOpenAI(refuses=("json_schema", "tool", "json_object_schema", "json_object"), refuses_with=500) as fake:
        llm = client(fake, retries=0)
        fake.script = ["not json at all"]
        with pytest.raises(LLMError, match="not a JSON object"):
            llm.ask("Summarize.", SummaryReply)
    assert fake.forms() == ["json_schema", "tool", "json_object_schema", "json_object", "prompt"]
    assert llm.structured_output == "prompt" and llm.counts["stepped_down"] == 4


@pytest.mark.slow
def test_forest_models_check_says_which_form_the_server_took_and_which_it_refused(tmp_path):
    with FakeOpenAI(refuses=("json_schema",), refuses_with=500) as fake:
        env = forest_env(tmp_path / "store", FOREST_LLM="openai", FOREST_LLM_BASE_URL=fake.url,
                         FOREST_LLM_MODEL="test-chat")
        checked = run_forest(env, "models", "--check")
        as_json = run_forest(env, "models", "--check", "--json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert (f"llm: openai test-chat at {fake.url}: answers (" in checked.stdout
            and "structure asked as tool, the server having refused json_schema)" in checked.stdout)
    llm = next(c for c in json.loads(as_json.stdout)["checked"] if c["kind"] == "llm")
    assert llm["ok"] and llm["structured_output"] == "tool" and llm["refused_forms"] == ["json_schema"]


def test_llm_max_tokens_caps_every_replys_tokens_below_each_uses_own(make_forest):
    with FakeOpenAI() as fake:
        forest = make_forest(llm="openai", llm_base_url=fake.url, llm_model="test-chat", llm_max_tokens=64)
        forest.llm.ask("Summarize.", SummaryReply, max_tokens=1024)
        forest.llm.ask("Summarize.", SummaryReply, max_tokens=20)
    assert [r["max_tokens"] for r in fake.requests] == [64, 20]
