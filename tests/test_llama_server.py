"""The `openai` provider against a real OpenAI-compatible server: llama-cpp-python's
`python -m llama_cpp.server` on the Gemma 3 270M GGUF (testkit/llama_server.py), started once
for the module. The model is a base model: what is checked is the protocol (how structure is asked
and taken, streaming, a server killed mid-call), and that whatever it answers is used or labelled
as the offline fallback, never half-kept.

The tier needs the `llm-server` extra (`make test` installs it, as does `make llm-server`): without it the module is
skipped, said once in the summary."""
from __future__ import annotations

import json
import threading
import time

import pytest
from testkit.llama_server import MODEL_ALIAS, LlamaServer, missing
from pydantic import Field

from forest.errors import ModelUnavailable
from forest.models.openai_api import OpenAILLM
from forest.models.replies import Reply, SummaryReply
from forest.models.summarizers import EXTRACTIVE_LABEL
from forest.personal.privacy import PrivacyClassifier
from forest.recall.agent import OFFLINE_LABEL
from testkit.processes import forest_env
from testkit.topics import topic_text
from test_openai_provider import run_forest

if missing():
    pytest.skip(f"the llm_server tier needs {' and '.join(missing())}: `make llm-server` installs them "
                "(pip install -e '.[llm-server]')", allow_module_level=True)

pytestmark = [pytest.mark.llm_server, pytest.mark.slow]
LABEL = f"openai:{MODEL_ALIAS}"
# The model writes until the grammar closes the JSON or max_tokens ends it, and a token the grammar
# refuses makes the server try others across Gemma's 262k vocabulary (a second or more, at times):
# a low cap keeps a call to seconds on 2 cores. One request may take what the call's whole budget
# allows: an abandoned non-streamed request keeps the one-at-a-time server busy, so a retry after a
# timeout only queues behind it.
MAX_TOKENS = 64
TIMEOUT = 140


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with LlamaServer(tmp_path_factory.mktemp("llama")) as running:
        yield running


def llm(server: LlamaServer, stream: bool = True) -> OpenAILLM:
    return OpenAILLM(server.url, MODEL_ALIAS, timeout=TIMEOUT, stream=stream, max_tokens=MAX_TOKENS)


def settings(server: LlamaServer) -> dict:
    return {"llm": "openai", "llm_base_url": server.url, "llm_model": MODEL_ALIAS, "llm_max_tokens": MAX_TOKENS,
            "llm_timeout_seconds": TIMEOUT, "chunk_size": 400}


def test_forest_models_check_says_the_llm_answers_and_how_structure_is_asked(server, tmp_path):
    """llama-cpp-python answers a json_schema response format with a 500 naming
    ('body', 'response_format', 'type'): the check steps down instead of reporting the server down."""
    env = forest_env(tmp_path / "store", FOREST_LLM="openai", FOREST_LLM_BASE_URL=server.url,
                     FOREST_LLM_MODEL=MODEL_ALIAS, FOREST_LLM_MAX_TOKENS=str(MAX_TOKENS),
                     FOREST_LLM_TIMEOUT_SECONDS=str(TIMEOUT))
    checked = run_forest(env, "models", "--check", "--json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = next(c for c in json.loads(checked.stdout)["checked"] if c["kind"] == "llm")
    assert report["ok"] and report["url"] == server.url and report["model"] == MODEL_ALIAS
    assert report["refused_forms"] == ["json_schema"] and report["structured_output"] == "tool"


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_a_reply_comes_through_whole_and_streamed(server, stream):
    client = llm(server, stream)
    reply = client.ask("Summarize in one sentence: Lava flows downhill from the crater and cools into rock.",
                       SummaryReply)
    assert isinstance(reply, SummaryReply) and reply.summary
    assert client.structured_output == "tool" and client.counts["asked"] == 1


def test_an_ingest_takes_summaries_from_the_model_or_the_labelled_fallback_and_keeps_it_whole(server, make_forest):
    forest = make_forest(**settings(server))
    archive = forest.ingest_text("m", "volcanoes", topic_text("volcanoes"))
    nodes = forest.tree("m", archive.id)
    sources = {n.summary_source for n in nodes}
    assert sources <= {LABEL, EXTRACTIVE_LABEL} and LABEL in sources, sources
    assert all(n.summary.strip() for n in nodes)
    assert len(forest.vectors.ids("m")) == len(nodes) and forest.doctor().healthy
    assert forest.models_in_use()["llm"] == {"provider": "openai", "model": MODEL_ALIAS, "url": server.url}


def test_one_agent_step_goes_through_the_llm_policy(server, make_forest):
    # Summaries offline (the ingest test takes them from the model), one attempt, one passage shown:
    # the agent's prompt is the longest the model gets
    forest = make_forest(**settings(server), summarizer="textrank", llm_retries=0)
    forest.ingest_text("m", "volcanoes", topic_text("volcanoes"))
    state = forest.step_asking(forest.start_asking("m", "How do volcanoes erupt?", top_k=1))
    [step] = state.steps
    # The model's own decision, valid against the ids it was shown, or the offline policy saying why
    assert step.decision.source == LABEL or step.decision.source.startswith(f"{OFFLINE_LABEL} (fallback: ")
    assert forest.answer_policy == LABEL


def test_a_privacy_classification_goes_through_it(server, embedder):
    decision = PrivacyClassifier(embedder, llm(server)).classify("I moved to Porto with my sister last spring.")
    assert decision.label in ("PRIVATE", "PUBLIC")
    assert decision.decided_by == LABEL or decision.decided_by == "fallback:llm-error"


def test_an_update_decision_goes_through_it_and_its_answer_is_kept_to(server, make_forest):
    """A write with the model configured asks it, once, whether the statement replaces the person's
    closest memory; whatever a 270M base model answers (or fails to), the write completes and the
    store says who decided."""
    forest = make_forest(**settings(server), memory_privacy_filter=False, llm_retries=0)
    tool, client = forest.personal.memory_tool, forest.personal.policy.updates.llm
    try:
        assert tool("add", "bob", text="I booked a table for two at 20:00 on Sunday.").to_dict()["status"] == "success"
        asked = client.counts["asked"]
        assert tool("add", "bob", text="Can we instead try booking the table at 19:00?").to_dict()["status"] == \
            "success"
        assert client.counts["asked"] - asked == 2   # the statement's facts, then the update decision
        memories = [m.memory for m in forest.personal.store.memories("bob")]
        updates = [e for e in tool("history", "bob").to_dict()["payload"]["history"] if e["event"] == "UPDATE"]
        if len(memories) == 1:   # the model said it replaces the booking at 20:00
            assert memories == ["Can we instead try booking the table at 19:00?"]
            assert f"judged by {LABEL}" in updates[0]["reason"]
        else:
            assert len(memories) == 2 and not updates
    finally:
        forest.personal.stop()


class LongReply(Reply):
    """A reply the grammar cannot close early: the model is still writing when the server dies."""

    text: str = Field(min_length=3000)


def test_the_server_killed_mid_call_is_a_clean_model_unavailable_naming_its_url(tmp_path):
    with LlamaServer(tmp_path) as doomed:
        client = OpenAILLM(doomed.url, MODEL_ALIAS, retries=1, timeout=30)
        raised: list[BaseException] = []

        def call() -> None:
            try:
                client.ask("Write a long story about a volcano.", LongReply, max_tokens=2000)
            except BaseException as exc:  # noqa: BLE001 - what the caller would get
                raised.append(exc)

        caller = threading.Thread(target=call)
        started = time.monotonic()
        caller.start()
        time.sleep(3)  # well into the reply: 3,000 characters take far longer on 2 cores
        assert caller.is_alive(), "the call ended before the server was killed"
        doomed.process.kill()
        caller.join(timeout=120)
    assert not caller.is_alive() and time.monotonic() - started < 60
    [error] = raised
    assert isinstance(error, ModelUnavailable), repr(error)
    assert str(error).startswith(f"the LLM server at {doomed.url} ({LABEL}) did not answer")
    assert "Traceback" not in str(error) and "\n" not in str(error)
