"""The `openai` LLM and embedder, through the real `openai` client against a local server that
speaks the API (testkit/fake_openai.py), and through the engine, the CLI and the write queue."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from testkit.fake_openai import DIM, FakeOpenAI, Fault, hashed_embedding

from forest.errors import ModelUnavailable
from forest.models import llm as llm_module
from forest.models.llm import LLMError
from forest.models.openai_api import OpenAIEmbedder, OpenAILLM
from forest.models.replies import AgentStep, SummaryReply, TitledSummaryReply
from forest.models.summarizers import EXTRACTIVE_LABEL, LLMSummarizer
from testkit.processes import forest_env, start_serve, stop_process
from testkit.topics import topic_text


def client(fake: FakeOpenAI, stream: bool = True, retries: int = 2, timeout: float = 10.0, **kwargs) -> OpenAILLM:
    return OpenAILLM(fake.url, "test-chat", retries=retries, timeout=timeout, stream=stream, **kwargs)


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_a_reply_is_asked_for_by_its_json_schema_and_validated(stream):
    with FakeOpenAI() as fake:
        fake.script = [json.dumps({"summary": "Lava flows downhill.", "title": "Volcanoes"})]
        reply = client(fake, stream).ask("Summarize: lava flows downhill.", TitledSummaryReply)
    assert (reply.summary, reply.title) == ("Lava flows downhill.", "Volcanoes")
    request = fake.requests[0]
    assert request["stream"] is stream
    assert request["response_format"]["type"] == "json_schema"
    assert request["response_format"]["json_schema"]["schema"] == TitledSummaryReply.model_json_schema()


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_a_server_without_json_schema_gets_a_tool_call_then_json_mode_then_the_prompt(stream):
    """As DeepSeek (no json_schema) or an older llama.cpp (no tools): each refused form is dropped for
    good, so later calls start with the form that works."""
    with FakeOpenAI(refuses=("json_schema", "tool", "json_object_schema")) as fake:
        llm = client(fake, stream)
        fake.script = [json.dumps({"summary": "first"}), json.dumps({"summary": "second"})]
        first = llm.ask("one", SummaryReply)
        second = llm.ask("two", SummaryReply)
    assert (first.summary, second.summary) == ("first", "second")
    assert fake.forms() == ["json_schema", "tool", "json_object_schema", "json_object", "json_object"]
    assert llm.structured_output == "json_object"


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_tool_call_arguments_are_the_reply(stream):
    with FakeOpenAI(refuses=("json_schema",)) as fake:
        fake.script = [json.dumps({"action": "EXPLORE", "payload": {"node_id_to_explore": "7"}})]
        step = client(fake, stream).ask("decide", AgentStep, context={"explorable": {7}, "passages": set()})
    assert fake.forms() == ["json_schema", "tool"] and step.payload.node_id_to_explore == 7
    assert fake.requests[1]["tool_choice"] == {"type": "function", "function": {"name": "reply"}}


def test_a_malformed_answer_is_asked_for_again_with_what_was_wrong():
    with FakeOpenAI() as fake:
        fake.script = ['{"summary": "unclosed', json.dumps({"summary": "x" * 300}), json.dumps({"summary": "fine"})]
        reply = client(fake).ask("Summarize.", SummaryReply, context={"max_chars": 200})
    assert reply.summary == "fine" and len(fake.requests) == 3
    second, third = (r["messages"][0]["content"] for r in fake.requests[1:])
    assert "could not be used" in second and "not a JSON object" in second or "JSON" in second
    assert "300 characters, the limit is 200" in third


def test_answers_that_stay_unusable_fall_back_to_the_labelled_offline_summary():
    with FakeOpenAI() as fake:
        fake.script = ["Sure! Here it is."] * 3
        summary = LLMSummarizer(client(fake), 200).summarize_leaf(
            "Volcanoes form where magma reaches the surface. They erupt ash and lava.")
    assert summary.source == EXTRACTIVE_LABEL and "Volcanoes form" in summary.text and len(fake.requests) == 3


def test_a_refusal_is_not_retried_and_falls_back():
    with FakeOpenAI() as fake:
        fake.respond = lambda prompt: "I can't help with that."
        fake.script = []
        llm = client(fake)
        with pytest.raises(LLMError):
            llm.ask("Summarize.", SummaryReply)
    assert len(fake.requests) == 3  # unusable text: retried up to retries + 1 attempts, then LLMError


def test_429_waits_what_retry_after_asks_then_succeeds():
    with FakeOpenAI() as fake:
        fake.script = [Fault(429, "rate limited", {"retry-after": "1.5"}), json.dumps({"summary": "after the wait"})]
        started = time.monotonic()
        reply = client(fake).ask("Summarize.", SummaryReply)
        waited = time.monotonic() - started
    assert reply.summary == "after the wait" and 1.5 <= waited < 5


@pytest.mark.parametrize("fault", [Fault(500, "boom"), Fault(200, body=b"{not json"), Fault(hang_seconds=3)],
                         ids=["500", "malformed-body", "timeout"])
def test_a_server_fault_is_retried_then_the_answer_is_used(fault):
    with FakeOpenAI() as fake:
        fake.script = [fault, json.dumps({"summary": "second time lucky"})]
        reply = client(fake, timeout=1.0).ask("Summarize.", SummaryReply)
    assert reply.summary == "second time lucky" and len(fake.requests) == 2


@pytest.mark.parametrize("body", [b"<html><body>502 Bad Gateway</body></html>",
                                  b'{"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}'],
                         ids=["html", "no-choices"])
def test_a_reply_not_in_the_apis_shape_is_retried_then_the_answer_is_used(body):
    with FakeOpenAI() as fake:
        fake.script = [Fault(200, body=body), json.dumps({"summary": "second time lucky"})]
        reply = client(fake, stream=False).ask("Summarize.", SummaryReply)
    assert reply.summary == "second time lucky" and len(fake.requests) == 2


def test_a_rejection_of_another_field_does_not_give_up_a_structured_output_form():
    """OpenAI's reasoning models refuse max_tokens with "Unsupported parameter": that says nothing
    about json_schema, so the form stays (it used to step down to the prompt alone for good)."""
    with FakeOpenAI() as fake:
        llm = client(fake)
        fake.script = [Fault(400, "Unsupported parameter: 'max_tokens' is not supported with this model.")]
        with pytest.raises(LLMError, match="HTTP 400.*max_tokens"):
            llm.ask("Summarize.", SummaryReply)
    assert llm.structured_output == "json_schema" and fake.forms() == ["json_schema"]


def test_a_slow_stream_is_cut_when_the_calls_budget_ends(monkeypatch):
    """Each read's timeout bounds a silence; the budget bounds the whole reply."""
    monkeypatch.setattr(llm_module, "CALL_BUDGET_SECONDS", 2.0)
    with FakeOpenAI() as fake:
        fake.chunk_seconds = 0.2  # a piece every 0.2 s: never silent for a 1 s timeout, 7 s in all
        fake.script = [json.dumps({"summary": "x" * 240})]
        started = time.monotonic()
        with pytest.raises(ModelUnavailable, match="time ran out"):
            client(fake, retries=0, timeout=1.0).ask("Summarize.", SummaryReply)
    assert time.monotonic() - started < 4


def test_credentials_in_a_server_url_never_reach_messages_or_logs(caplog):
    url = "http://lab:s3cret@127.0.0.1:9/v1?api-key=k3y"
    with pytest.raises(ModelUnavailable) as raised:
        OpenAILLM(url, "test-chat", retries=1, timeout=1).ask("x", SummaryReply)
    with pytest.raises(ModelUnavailable) as embedding:
        OpenAIEmbedder(url, "test-embed", retries=0, timeout=1)
    shown = str(raised.value) + str(embedding.value) + caplog.text
    assert "s3cret" not in shown and "k3y" not in shown and "http://lab:***@127.0.0.1:9/v1?api-key=***" in shown


def test_an_embedding_server_refusing_the_text_is_bad_input_not_a_server_down():
    from forest.errors import InvalidInput, ServiceUnavailable

    with FakeOpenAI() as fake:
        embedder = OpenAIEmbedder(fake.url, "test-embed", similarity_floor=0.0)
        fake.embedding_script = [Fault(400, "input is too long for this model")]
        with pytest.raises(InvalidInput, match="refused the text.*too long") as raised:
            embedder.embed_passages(["a very long text"])
    assert not isinstance(raised.value, ServiceUnavailable) and len(fake.embedding_requests) == 2


def test_a_server_that_stays_down_is_one_clear_error_naming_it(monkeypatch):
    monkeypatch.setattr(llm_module, "CALL_BUDGET_SECONDS", 4.0)
    with FakeOpenAI() as fake:
        fake.script = [Fault(503, "overloaded")] * 10
        with pytest.raises(ModelUnavailable, match=f"LLM server at {fake.url} \\(openai:test-chat\\).*overloaded"):
            client(fake, retries=5).ask("Summarize.", SummaryReply)
    with pytest.raises(ModelUnavailable, match="LLM server at http://127.0.0.1:9/v1 .*did not answer"):
        OpenAILLM("http://127.0.0.1:9/v1", "test-chat", retries=0, timeout=2).ask("x", SummaryReply)


def test_a_wrong_key_or_model_is_refused_at_once_without_retries():
    with FakeOpenAI(api_key="right-key") as fake:
        with pytest.raises(ModelUnavailable, match="refused the call \\(HTTP 401"):
            OpenAILLM(fake.url, "test-chat", api_key="wrong-key", retries=3).ask("x", SummaryReply)
        with pytest.raises(ModelUnavailable, match="HTTP 404.*`no-such-model` does not exist"):
            OpenAILLM(fake.url, "no-such-model", api_key="right-key", retries=3).ask("x", SummaryReply)
        assert fake.requests == []  # neither reached a model


def test_embeddings_learn_the_dimension_batch_and_carry_the_configured_prefixes():
    with FakeOpenAI() as fake:
        embedder = OpenAIEmbedder(fake.url, "test-embed", query_prefix="query: ", passage_prefix="passage: ")
        texts = [f"passage number {i} about lava" for i in range(10)]
        vectors = embedder.embed_passages(texts, batch_size=4)
        query = embedder.embed_query("lava")
    assert embedder.dim == DIM and embedder.name == "openai/test-embed" and vectors.shape == (10, DIM)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    batches = [r["input"] for r in fake.embedding_requests[2:]]  # after the dimension and floor probes
    assert [len(b) for b in batches] == [4, 4, 2, 1]
    assert all(t.startswith("passage: ") for b in batches[:3] for t in b) and batches[3] == ["query: lava"]
    assert all(r["encoding_format"] == "float" for r in fake.embedding_requests)
    assert 0.0 <= embedder.similarity_floor <= 0.95 and float(query @ vectors[0]) > 0


def test_embeddings_retry_a_rate_limit_and_name_the_server_when_it_stays_down():
    with FakeOpenAI() as fake:
        embedder = OpenAIEmbedder(fake.url, "test-embed", similarity_floor=0.0, retries=1)
        fake.embedding_script = [Fault(429, "slow down", {"retry-after": "0.2"})]
        assert embedder.embed_passages(["a text"]).shape == (1, DIM)
        fake.embedding_script = [Fault(500, "gpu fell over")] * 2
        with pytest.raises(ModelUnavailable, match=f"embedding server at {fake.url} \\(openai/test-embed\\).*gpu fell over"):
            embedder.embed_passages(["another text"])


def engine_settings(fake: FakeOpenAI, embeddings: FakeOpenAI) -> dict:
    return {"llm": "openai", "llm_base_url": fake.url, "llm_model": "test-chat", "embedder": "openai",
            "embedding_base_url": embeddings.url, "embedding_model": "test-embed", "chunk_size": 300}


@pytest.mark.slow
def test_the_engine_summarizes_and_searches_with_the_openai_providers(make_forest):
    with FakeOpenAI() as fake, FakeOpenAI() as embeddings:
        forest = make_forest(**engine_settings(fake, embeddings))
        archive = forest.ingest_text("m", "jazz", topic_text("jazz"))
        nodes = forest.tree("m", archive.id)
        hits = forest.retrieve("m", "jazz improvisation")
        in_use = forest.models_in_use()
    assert {n.summary_source for n in nodes} == {"openai:test-chat"}
    assert all(n.summary.startswith("CLAUDE: ") for n in nodes)  # the fake's default summary
    assert hits and hits[0].node.archive_id == archive.id
    assert in_use["llm"] == {"provider": "openai", "model": "test-chat", "url": fake.url}
    assert in_use["embedder"]["url"] == embeddings.url and in_use["embedder"]["dim"] == DIM


@pytest.mark.slow
def test_an_embedding_server_down_mid_ingest_fails_it_cleanly_and_keeps_nothing(make_forest):
    with FakeOpenAI() as fake, FakeOpenAI() as embeddings:
        forest = make_forest(**engine_settings(fake, embeddings), llm_retries=0)
        kept = forest.ingest_text("m", "kept", topic_text("jazz"))
        embeddings.embedding_script = [Fault(500, "out of memory")] * 50
        with pytest.raises(ModelUnavailable, match=f"embedding server at {embeddings.url}.*out of memory"):
            forest.ingest_text("m", "doomed", topic_text("photosynthesis"))
        assert [a.name for a in forest.archives("m")] == ["kept"]
        assert forest.doctor().healthy and {n.archive_id for n in forest.tree("m", kept.id)} == {kept.id}


@pytest.mark.slow
def test_an_llm_down_mid_ingest_fails_it_cleanly_naming_the_url(make_forest):
    with FakeOpenAI() as fake, FakeOpenAI() as embeddings:
        forest = make_forest(**engine_settings(fake, embeddings), llm_retries=0)
        fake.script = [json.dumps({"summary": "ok"})] * 3 + [Fault(502, "bad gateway")] * 500
        with pytest.raises(ModelUnavailable, match=f"LLM server at {fake.url}.*bad gateway"):
            forest.ingest_text("m", "doomed", topic_text("photosynthesis"))
        assert forest.archives("m") == [] and forest.doctor().healthy


@pytest.mark.slow
def test_personal_writes_wait_in_the_queue_while_the_llm_is_down(make_forest):
    with FakeOpenAI() as fake, FakeOpenAI() as embeddings:
        fake.respond = lambda prompt: json.dumps({"label": "PRIVATE", "reason": "about the user"}
                                                 if "PRIVATE" in prompt else {"triples": []})
        forest = make_forest(**engine_settings(fake, embeddings), llm_retries=0)
        fake.script = [Fault(503, "down for maintenance")] * 2
        forest.personal.process_memory("ann", "I moved to Porto last spring.")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            items = forest.personal.write_queue("ann").to_dict()["items"]
            if items and items[0]["status"] == "done":
                break
            time.sleep(0.2)
        memories = [m.memory for m in forest.personal.memories("ann")]
    assert items[0]["status"] == "done" and items[0]["attempts"] >= 2 and "down for maintenance" in items[0]["error"]
    assert memories == ["I moved to Porto last spring."]
    assert items[0]["decision"]["privacy"]["decided_by"] == "openai:test-chat"


def run_forest(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "forest"), *args], env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow
def test_forest_models_lists_the_parts_and_checks_that_the_configured_ones_answer(tmp_path):
    with FakeOpenAI() as fake, FakeOpenAI() as embeddings:
        env = forest_env(tmp_path / "store", FOREST_LLM="openai", FOREST_LLM_BASE_URL=fake.url,
                         FOREST_LLM_MODEL="test-chat", FOREST_LLM_API_KEY="sk-secret-1234",
                         FOREST_EMBEDDER="openai", FOREST_EMBEDDING_BASE_URL=embeddings.url,
                         FOREST_EMBEDDING_MODEL="test-embed")
        fine = run_forest(env, "models", "--check", "--json")
        fake.script = [Fault(401, "bad key")]
        refused = run_forest(env, "models", "--check")
    report = json.loads(fine.stdout)
    in_use = {(p["kind"], p["name"]) for p in report["installed"] if p["in_use"]}
    assert {("llm", "openai"), ("embedder", "openai"), ("summarizer", "llm")} <= in_use
    llm, embedder = (next(c for c in report["checked"] if c["kind"] == k) for k in ("llm", "embedder"))
    assert fine.returncode == 0 and llm["ok"] and llm["url"] == fake.url and llm["structured_output"] == "json_schema"
    assert embedder["ok"] and embedder["dim"] == DIM and embedder["url"] == embeddings.url
    assert refused.returncode == 1 and f"llm: openai test-chat at {fake.url}: FAILED" in refused.stdout
    assert "HTTP 401" in refused.stdout and "sk-secret-1234" not in refused.stdout + refused.stderr + fine.stdout


@pytest.mark.slow
def test_end_to_end_against_the_projects_own_chat_endpoint(tmp_path):
    """The project's /v1/chat/completions as a second real server: the real client reaches it whole
    and streamed and lists its models; the endpoint answers questions in prose, not the JSON a
    summary needs, so every use would take its offline path, and `forest models --check` says so."""
    data_dir = tmp_path / "store"
    (tmp_path / "jazz.md").write_text(topic_text("jazz"), encoding="utf-8")
    assert run_forest(forest_env(data_dir), "ingest", str(tmp_path / "jazz.md"), "--model-id", "m").returncode == 0
    process, url = start_serve(data_dir, forest_env(data_dir))
    try:
        import openai

        listed = [m.id for m in openai.OpenAI(base_url=f"{url}/v1", api_key="none").models.list()]
        problems = []
        for stream in (False, True):
            with pytest.raises(LLMError) as raised:
                OpenAILLM(f"{url}/v1", "m", retries=0, stream=stream).ask("What is jazz?", SummaryReply)
            problems.append(str(raised.value))
        checked = run_forest(forest_env(tmp_path / "other", FOREST_LLM="openai", FOREST_LLM_BASE_URL=f"{url}/v1",
                                        FOREST_LLM_MODEL="m"), "models", "--check", "--json")
    finally:
        stop_process(process)
    assert listed == ["m"]
    assert problems[0] == problems[1] and "not a JSON object" in problems[0]  # the same answer, whole and streamed
    llm = next(c for c in json.loads(checked.stdout)["checked"] if c["kind"] == "llm")
    assert checked.returncode == 1 and not llm["ok"] and "not with usable JSON" in llm["error"]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["chroma", "pgvector", "qdrant"])
def test_a_change_of_embedder_is_refused_until_forest_reembed_re_embeds_the_model_id(make_forest, request, tmp_path,
                                                                                      backend):
    from conftest import new_database

    from forest.errors import ConfigError

    stores = {"vector_store": backend}
    if backend == "pgvector":
        stores["database_url"] = new_database(request.getfixturevalue("postgres"))
    if backend == "qdrant":
        stores["qdrant_url"] = str(tmp_path / "qdrant")
    with FakeOpenAI(models=["test-chat", "embed-a", "embed-b"]) as server:
        def forest_with(model: str):
            return make_forest(tmp_path / "store", embedder="openai", embedding_base_url=server.url,
                               embedding_model=model, chunk_size=300, **stores)

        before = forest_with("embed-a")
        jazz = before.ingest_text("m", "jazz", topic_text("jazz"))
        before.ingest_text("m", "plants", topic_text("photosynthesis"))
        before.ingest_text("other", "volcanoes", topic_text("volcanoes"))
        nodes = len(before.tree("m", jazz.id)) + len(before.tree("m", before.archives("m")[1].id))
        before.close()

        after = forest_with("embed-b")
        with pytest.raises(ConfigError, match="made by openai/embed-a.*forest reembed --model-id m"):
            after.retrieve("m", "jazz improvisation")
        done = after.reembed("m")
        hits = after.retrieve("m", "jazz improvisation")
        with pytest.raises(ConfigError, match="forest reembed --model-id other"):
            after.retrieve("other", "lava")  # another model_id is left as it was
        after.reembed("other")
        healthy = after.doctor()
    assert done["nodes_reembedded"] == nodes and done["vectors_of_other_embedders_dropped"] == nodes
    assert done["embedder"] == "openai/embed-b" and hits and hits[0].node.archive_id == jazz.id
    assert healthy.healthy, healthy


@pytest.mark.slow
def test_the_agent_decides_through_the_openai_llm(make_forest):
    from testkit.fake_openai import _default_reply

    answer = json.dumps({"action": "ANSWER", "payload": {"final_answer": "Jazz grew from blues.", "cited_node_ids": []}})
    with FakeOpenAI() as fake, FakeOpenAI() as embeddings:
        fake.respond = lambda prompt: answer if "cited_node_ids" in prompt else _default_reply(prompt)
        forest = make_forest(**engine_settings(fake, embeddings))
        forest.ingest_text("m", "jazz", topic_text("jazz"))
        state = forest.ask("m", "Where did jazz come from?")
    assert (state.answer, state.answered_by) == ("Jazz grew from blues.", "openai:test-chat")
    assert forest.answer_policy == "openai:test-chat"


@pytest.mark.slow
def test_a_model_server_down_is_a_503_naming_it_over_rest_not_a_stack_trace(tmp_path):
    import httpx

    from testkit.processes import free_port

    data_dir = tmp_path / "store"
    (tmp_path / "jazz.md").write_text(topic_text("jazz"), encoding="utf-8")
    assert run_forest(forest_env(data_dir), "ingest", str(tmp_path / "jazz.md"), "--model-id", "m").returncode == 0
    dead = f"http://127.0.0.1:{free_port()}/v1"
    process, url = start_serve(data_dir, forest_env(data_dir, FOREST_LLM="openai", FOREST_LLM_BASE_URL=dead,
                                                    FOREST_LLM_MODEL="test-chat", FOREST_LLM_RETRIES="0"))
    try:
        reply = httpx.post(f"{url}/tools/ask_memory", json={"model_id": "m", "question": "Where did jazz come from?"},
                           timeout=120)
    finally:
        stop_process(process)
    assert reply.status_code == 503, reply.text
    assert f"the LLM server at {dead} (openai:test-chat) did not answer" in reply.json()["error"]
    assert "Traceback" not in reply.text


@pytest.mark.slow
def test_a_compaction_the_llm_cannot_do_is_put_off_not_a_failed_write(make_forest):
    """add_message commits, then compacts when due: a model server down then must not turn the kept
    message into an error that tells the caller to send it again."""
    with FakeOpenAI() as fake:
        forest = make_forest(llm="openai", llm_base_url=fake.url, llm_model="test-chat", llm_retries=0,
                             session_token_limit=500)
        research = forest.research
        fake.respond = lambda prompt: json.dumps({"findings": [], "summary": "The session so far."})
        fake.script = [Fault(503, "overloaded")] * 3
        for n in range(12):
            research.add_message("m", "s", "user", f"Message {n}: " + "fusion adds latency " * 12)
        kept = research.messages("m", "s", include_compacted=True)
        live = research.messages("m", "s")
    assert len([m for m in kept if m.role == "user"]) == 12  # every message kept, none twice
    assert any(m.content == "The session so far." for m in live)  # compacted once the server answered


class DrippingServer:
    """A model server that answers every request with one byte every `every` seconds, forever: the
    headers of a 200 never end. Each read's timeout is met; only a budget on the call ends it."""

    def __init__(self, every: float = 0.3) -> None:
        self.every = every
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.listener.settimeout(0.2)
        while not self.stop.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                continue
            threading.Thread(target=self._drip, args=(connection,), daemon=True).start()

    def _drip(self, connection: socket.socket) -> None:
        with connection:
            connection.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10_000:
                if self.stop.wait(self.every):
                    return
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return

    def __enter__(self) -> DrippingServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.listener.close()


def test_a_server_dripping_a_byte_at_a_time_is_cut_off_when_the_calls_budget_ends(monkeypatch):
    """A byte every 0.3 s never lets a 1 s read timeout fire; the call's 2 s budget ends it anyway,
    for the LLM and for the embedder (each used to be held for as long as the server went on)."""
    monkeypatch.setattr(llm_module, "CALL_BUDGET_SECONDS", 2.0)
    monkeypatch.setattr("forest.models.openai_api.CALL_BUDGET_SECONDS", 2.0)
    with DrippingServer() as server:
        for stream in (True, False):
            started = time.monotonic()
            with pytest.raises(ModelUnavailable, match=server.url):
                OpenAILLM(server.url, "test-chat", retries=2, timeout=1.0, stream=stream).ask("Summarize.", SummaryReply)
            assert time.monotonic() - started < 3.5, stream
        started = time.monotonic()
        with pytest.raises(ModelUnavailable, match=f"embedding server at {server.url}"):
            OpenAIEmbedder(server.url, "test-embed", retries=2, timeout=1.0)
        assert time.monotonic() - started < 3.5


@pytest.mark.parametrize("poison, why", [
    (np.nan, "not finite"), (np.inf, "not finite"), (0.0, "all zeros")])
def test_vectors_that_are_not_finite_or_all_zeros_fail_the_ingest_and_nothing_is_stored(make_forest, poison, why):
    def embed(texts):
        rows = hashed_embedding(texts)
        rows[["photosynthesis" in t.lower() for t in texts]] = poison
        return rows

    with FakeOpenAI() as fake, FakeOpenAI(embed=embed) as embeddings:
        forest = make_forest(**engine_settings(fake, embeddings), llm_retries=0)
        kept = forest.ingest_text("m", "kept", topic_text("jazz"))
        with pytest.raises(ModelUnavailable, match=f"openai/test-embed gave .* vectors that are {why}"):
            forest.ingest_text("m", "poisoned", topic_text("photosynthesis"))
        with pytest.raises(ModelUnavailable, match=why):
            forest.retrieve("m", "photosynthesis in leaves")
        assert [a.name for a in forest.archives("m")] == ["kept"]
        assert forest.doctor().healthy and forest.retrieve("m", "jazz improvisation")[0].node.archive_id == kept.id


def test_vectors_too_wide_or_ragged_are_refused_before_they_are_read_in(make_forest):
    with FakeOpenAI(embed=lambda texts: np.ones((len(texts), 20_000), dtype=np.float32)) as wide:
        with pytest.raises(ModelUnavailable, match="unusable vectors: vectors of 20,000 dimensions"):
            OpenAIEmbedder(wide.url, "test-embed", retries=0)
