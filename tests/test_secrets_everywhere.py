"""Secrets in every shape, along the faces where each was found stored or echoed (issue 36, item 2),
and the statuses and modes of item 10:
- a passphrase of several words after a secret cue, in any case, is redacted;
- metadata values of every type (a card number as an int, a PIN under a "pin" key) are redacted;
- an id shaped like a key (a 40-character AWS secret, a provider key) is refused as user_id,
  agent_id, run_id and model_id, over REST and MCP, and neither a reply nor GET /calls repeats it,
  nor the refusal of a metadata key that is a secret;
- a key a model server echoes back ("Incorrect API key provided: Bearer sk-...") is masked in the
  error a client gets and in the warnings logged between retries;
- the Markdown export turns remote images into links; `forest export -o` writes 0600;
- a PostgreSQL outage is a 503 on every face, the memory tool included (it answered 200 "fallback").
Each failed on the code before."""
from __future__ import annotations

import asyncio
import json
import logging
import stat
from pathlib import Path

import httpx
import pytest
from testkit.fake_openai import FakeOpenAI, Fault
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from testkit.processes import forest_env, free_port
from testkit.topics import topic_text
from forest.redaction import redact
from forest.serving.http import ThreadServer

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
AWS_SECRET_NO_SLASH = "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY12"
PROVIDER_KEY = "sk-proj-Zq8mW2xR7tY4uI9oP3aS6dF1gH5jK0lL"
ECHOED = "sk-live-0a9B8c7D6e5F4g3H2i1J0k9L8m7N6o5P"


@pytest.mark.parametrize("text, secret", [
    ("my password is correct horse battery staple", "correct horse battery staple"),
    ("MY PASSWORD IS ORANGE TIGER LAMP", "ORANGE TIGER LAMP"),
    ("Password: Blue Elephant Sunrise, and the door opens", "Blue Elephant Sunrise"),
    ("the wifi passphrase is purple monkey dishwasher and my pin is 8812", "purple monkey dishwasher"),
])
def test_a_passphrase_of_several_words_is_redacted_in_any_case(text, secret):
    redacted = redact(text).text
    assert "[PASSWORD]" in redacted and not any(word in redacted for word in secret.split()), redacted


@pytest.mark.parametrize("text", ["my password is too long to remember", "my password is the same as my email one",
                                  "My password is correct, the login failed for another reason",
                                  "my password was changed last week by IT", "my password is case sensitive"])
def test_prose_about_a_password_stays(text):
    assert redact(text).text == text


def _raw_store(forest) -> bytes:
    folder = Path(forest.db.path).parent
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def test_metadata_values_of_any_type_are_redacted_before_storage(personal, forest):
    reply = personal.memory_tool("add", "ann", text="I paid for the flight",
                                 metadata={"card": 4111111111111111, "pin": 7351, "api_key": "abc123-def",
                                           "year": 2024, "seats": 2, "paid": True}).to_dict()
    assert reply["status"] == "success", reply
    assert personal.memories("ann")[0].metadata == {"card": "[CARD_NUMBER]", "pin": "[PIN]", "api_key": "[API_KEY]",
                                                   "year": 2024, "seats": 2, "paid": True}
    # a search filter on the redacted key finds it (the filter is redacted as the value was)
    found = personal.memory_tool("search", "ann", query="flight", filters={"pin": 7351}).to_dict()
    assert [r["metadata"]["pin"] for r in found["payload"]["results"]] == ["[PIN]"]
    forest.db.close()
    raw = _raw_store(forest)
    assert b"4111111111111111" not in raw and b"abc123-def" not in raw


def _mcp_call(url: str, tool: str, arguments: dict):
    async def call():
        http = create_mcp_http_client()
        async with (http, streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
                    ClientSession(read, write) as session):
            await session.initialize()
            return await session.call_tool(tool, arguments)
    return asyncio.run(call())


@pytest.mark.slow
def test_an_id_shaped_like_a_key_is_refused_on_every_face_and_echoed_nowhere(make_forest):
    forest = make_forest()
    server = ThreadServer(forest, port=free_port()).start()
    secrets = [AWS_SECRET, AWS_SECRET_NO_SLASH, PROVIDER_KEY]
    try:
        rest = [httpx.post(f"{server.url}/tools/{tool}", json=arguments, timeout=60) for tool, arguments in (
            ("memory", {"user_id": AWS_SECRET, "action": "add", "text": "I like tea"}),
            ("memory", {"user_id": "ann", "agent_id": AWS_SECRET, "action": "add", "text": "I like tea"}),
            ("process_memory", {"user_id": "ann", "run_id": AWS_SECRET_NO_SLASH, "input": "I like tea"}),
            ("process_memory", {"user_id": "ann", "input": "I like tea", "metadata": {PROVIDER_KEY.replace("-", "_"): 1}}),
            ("add_document", {"model_id": AWS_SECRET_NO_SLASH, "name": "jazz", "text": topic_text("jazz")}),
            ("add_research_note", {"model_id": PROVIDER_KEY, "session_id": "s", "kind": "finding", "text": "x"}),
        )]
        by_mcp = _mcp_call(server.url, "memory", {"user_id": AWS_SECRET_NO_SLASH, "action": "search", "query": "tea"})
        calls = httpx.get(f"{server.url}/calls", timeout=30).text
    finally:
        server.stop()
    for reply in rest:
        assert reply.status_code == 400 or reply.json().get("status") == "fallback", reply.text
        assert "looks like a secret" in reply.text, reply.text
    assert "looks like a secret" in by_mcp.content[0].text
    shown = " ".join(r.text for r in rest) + by_mcp.content[0].text + calls
    for secret in [*secrets, PROVIDER_KEY.replace("-", "_")]:
        assert secret not in shown and secret[:20] not in shown
    assert forest.model_ids() == [] and forest.personal.memories("ann") == []


@pytest.mark.slow
def test_a_key_a_model_server_echoes_is_masked_in_the_reply_and_the_logs(make_forest, caplog):
    caplog.set_level(logging.WARNING)
    with FakeOpenAI() as fake:
        forest = make_forest(llm="openai", llm_base_url=fake.url, llm_model="test-chat", llm_retries=1)
        forest.ingest_text("lab", "jazz", topic_text("jazz"), threshold=0.0)
        server = ThreadServer(forest, port=free_port()).start()
        try:
            fake.script = [Fault(503, f"overloaded; your key Bearer {ECHOED} is queued"),
                           Fault(401, f"Incorrect API key provided: Bearer {ECHOED}. Find your key at ...")]
            refused = httpx.post(f"{server.url}/tools/ask_memory", timeout=120,
                                 json={"model_id": "lab", "question": "Where did jazz come from?"})
            calls = httpx.get(f"{server.url}/calls", timeout=30).text
        finally:
            server.stop()
    assert refused.status_code == 503 and "HTTP 401" in refused.text and "Incorrect API key provided" in refused.text
    assert "overloaded" in caplog.text   # the retry's warning was logged, its key masked
    for shown in (refused.text, calls, caplog.text):
        assert ECHOED not in shown and ECHOED[8:24] not in shown


def test_the_markdown_export_turns_remote_images_into_links(forest, tmp_path):
    forest.ingest_text("lab", "jazz ![t](http://127.0.0.1:9/title.png)",
                       f"## Jazz\n\n{topic_text('jazz')} ![chart](https://example.org/p.png) <img src='http://x/y.png'>",
                       threshold=0.0)
    forest.research.add_note("lab", "s", "finding", "Bebop ![x](http://127.0.0.1:9/note.png) was fast")
    files = forest.export_markdown("lab", tmp_path / "vault")
    notes = [(tmp_path / "vault" / name).read_text(encoding="utf-8") for name in files]
    # the Markdown after the front matter (whose properties an editor shows as text)
    text = "".join(note.split("---\n", 2)[-1] if note.startswith("---\n") else note for note in notes)
    assert "![" not in text and "<img" not in text.replace("\\<img", "")   # raw HTML is escaped, as text
    assert "[chart](https://example.org/p.png)" in text and "[x](http://127.0.0.1:9/note.png)" in text


@pytest.mark.slow
def test_forest_export_writes_the_archive_0600_even_over_a_0644_file(tmp_path):
    import subprocess
    import sys

    data_dir = tmp_path / "store"
    (tmp_path / "jazz.md").write_text(topic_text("jazz"), encoding="utf-8")
    forest = [str(Path(sys.executable).parent / "forest")]
    env = forest_env(data_dir)
    subprocess.run([*forest, "ingest", str(tmp_path / "jazz.md"), "--model-id", "m"], env=env, check=True,
                   capture_output=True)
    fresh, existing = tmp_path / "fresh.json", tmp_path / "existing.json"
    existing.write_text("old")
    existing.chmod(0o644)
    for out in (fresh, existing):
        subprocess.run([*forest, "export", "1", "--model-id", "m", "-o", str(out)], env=env, check=True,
                       capture_output=True)
        assert stat.S_IMODE(out.stat().st_mode) == 0o600, out
        assert json.loads(out.read_text(encoding="utf-8"))["nodes"]


@pytest.mark.slow
def test_a_database_outage_is_a_503_on_every_face_the_memory_tool_included(postgres, postgres_url, tmp_path,
                                                                          embedder, monkeypatch):
    from forest import MemoryForest

    monkeypatch.setattr("forest.storage.sql.postgres.POOL_WAIT_SECONDS", 2.0)
    forest = MemoryForest(data_dir=tmp_path / "store", database_url=postgres_url, vector_store="pgvector",
                          embedder=embedder, chunk_size=300)
    server = ThreadServer(forest, port=free_port()).start()
    add = {"user_id": "ann", "action": "add", "text": "I live in Porto"}
    search = {"user_id": "ann", "action": "search", "query": "where do I live"}
    try:
        forest.embedder.embed_query("loaded before the outage")
        # personal memory open (as in any running server): its tool answered 200 "fallback" to an outage
        assert httpx.post(f"{server.url}/tools/memory", json=add, timeout=60).json()["status"] == "success"
        postgres.stop(mode="immediate")
        try:
            rest = [httpx.post(f"{server.url}/tools/memory", json=arguments, timeout=60) for arguments in (add, search)]
            chat = httpx.post(f"{server.url}/v1/chat/completions", timeout=60,
                              json={"model": "lab", "messages": [{"role": "user", "content": "Who played bebop?"}]})
            mem0 = httpx.post(f"{server.url}/memories", timeout=60,
                              json={"messages": [{"role": "user", "content": "I live in Porto"}], "user_id": "ann",
                                    "infer": False})
            by_mcp = _mcp_call(server.url, "memory", add)
        finally:
            postgres.start()
    finally:
        server.stop()
        forest.close()
    for reply in [*rest, chat, mem0]:
        assert reply.status_code == 503, reply.text
        assert "PostgreSQL" in reply.json()["error"] and "\n" not in reply.json()["error"]
    assert by_mcp.is_error and "PostgreSQL" in by_mcp.content[0].text


def test_words_after_bearer_or_basic_are_not_taken_for_keys():
    from forest.errors import mask_keys

    said = "HTTP 401: Basic authentication required; bearer tokenization failed"
    assert mask_keys(said) == said
    assert mask_keys("Incorrect API key provided: Bearer abcdef0123456789") == \
        "Incorrect API key provided: Bearer [API_KEY]"
