"""The tools served for agents, through real clients: the MCP SDK over streamable HTTP (thread
server) and stdio (a `forest serve` subprocess), REST with httpx, and the `openai` client."""
import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx
import openai
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from testkit.processes import forest_env, free_port
from testkit.topics import topic_text
from forest import ConfigError
from forest.serving.http import CHAT_ROUTE, MAX_BODY_BYTES, ThreadServer, build_http_app
from forest.serving.tools import ForestTools

FOREST = str(Path(sys.executable).parent / "forest")
TOKEN = "k7Qe2-Rz9xPwLm4NvB8cY1tH"  # what secrets.token_urlsafe makes: long, nothing repeated


@pytest.fixture(scope="module")
def served(tmp_path_factory, embedder):
    from forest import MemoryForest

    data_dir = tmp_path_factory.mktemp("served") / "store"
    forest = MemoryForest(data_dir=data_dir, embedder=embedder, chunk_size=300)
    alice = forest.ingest_text("alice", "earth and music", "## Volcanoes\n\n" + topic_text("volcanoes") +
                               "\n\n## Jazz\n\n" + topic_text("jazz"))
    bob = forest.ingest_text("bob", "plants", topic_text("photosynthesis"))
    server = ThreadServer(forest, port=free_port()).start()
    yield server, forest, alice, bob, data_dir
    server.stop()
    forest.close()


async def _mcp_session(url: str, calls, headers: dict | None = None):
    client = create_mcp_http_client(headers=headers)
    async with client, streamable_http_client(url, http_client=client) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await calls(session)


def _leaf_and_summary(forest, model_id, archive_id):
    nodes = forest.tree(model_id, archive_id)
    return next(n for n in nodes if n.is_leaf), next(n for n in nodes if not n.is_leaf)


@pytest.mark.slow
def test_every_tool_over_streamable_http(served):
    server, forest, alice, bob, _ = served
    bob_leaf, _ = _leaf_and_summary(forest, "bob", bob.id)
    alice_leaves = [n.id for n in forest.tree("alice", alice.id) if n.is_leaf]
    progress = []

    async def calls(session):
        listed = await session.list_tools()
        results = {"tools": {t.name: t for t in listed.tools}}
        call = session.call_tool
        results["retrieve"] = await call("retrieve_memory", {"model_id": "alice", "query": "explosive eruptions",
                                                             "top_k": 4})
        summary = next(n for n in results["retrieve"].structured_content["representative_nodes"]
                       if n["node_type"] == "SUMMARY_NODE")
        results["explore"] = await call("explore_memory_node", {"model_id": "alice", "node_id": summary["id"],
                                                                "query": "explosive eruptions", "threshold": 0})
        results["search"] = await call("search_memory", {"model_id": "alice", "query": "bebop", "top_k": 3})
        results["node"] = await call("get_memory_node", {"model_id": "alice", "node_id": summary["id"]})
        results["archives"] = await call("list_archives", {"model_id": "alice"})
        results["tree"] = await call("get_archive_tree", {"model_id": "alice", "archive_id": alice.id, "max_depth": 1})

        async def on_progress(done, total, message):
            progress.append((done, total, message))

        results["add"] = await call("add_document", {"model_id": "alice", "name": "plants too",
                                                     "text": topic_text("photosynthesis")},
                                    progress_callback=on_progress)
        results["ask"] = await call("ask_memory", {"model_id": "alice", "question": "Who played bebop?"})
        results["compare"] = await call("compare_papers", {"model_id": "alice", "questions": ["Who played bebop?"]})
        results["other"] = await call("get_memory_node", {"model_id": "alice", "node_id": bob_leaf.id})
        results["bad"] = await call("retrieve_memory", {"model_id": "alice", "query": "x", "top_k": 0})
        # Research memory (DeepScholar spec).
        results["note"] = await call("add_research_note", {"model_id": "alice", "session_id": "s1", "kind": "finding",
                                                           "text": "Pyroclastic flows outrun cars", "source": "p. 1"})
        results["session_ask"] = await call("ask_memory", {"model_id": "alice", "session_id": "s1",
                                                           "question": "How do explosive eruptions happen?"})
        results["know"] = await call("update_semantic_knowledge", {"model_id": "alice", "topic": "eruptions",
                                                                   "conclusion": "Gas-rich magma explodes."})
        results["know2"] = await call("update_semantic_knowledge", {"model_id": "alice", "topic": "Eruptions",
                                                                    "conclusion": "Viscous, gas-rich magma explodes."})
        results["brief"] = await call("get_research_briefing", {"model_id": "alice", "session_id": "s1"})
        results["episodic"] = await call("search_episodic_memory", {"model_id": "alice", "time_range": "1d",
                                                                    "query": "how do explosive eruptions happen"})
        results["episodic_bob"] = await call("search_episodic_memory", {"model_id": "bob",
                                                                        "query": "how do explosive eruptions happen"})
        results["bad_range"] = await call("search_episodic_memory", {"model_id": "alice", "query": "x",
                                                                     "time_range": "soonish"})
        results["reconcile"] = await call("reconcile_passages", {"model_id": "alice", "node_id_a": alice_leaves[0],
                                                                 "node_id_b": alice_leaves[-1]})
        results["reconcile_bob"] = await call("reconcile_passages", {"model_id": "alice", "node_id_a": alice_leaves[0],
                                                                     "node_id_b": bob_leaf.id})
        # Personal memory (NeuroMemory v2 and mem0 memory-tool specs), per user_id.
        results["remember"] = await call("memory", {"user_id": "alice", "action": "add",
                                                    "text": ["灿灿是小朱的女儿", "灿灿还有一个弟弟，叫帅帅"],
                                                    "metadata": {"scene": "family"}})
        results["process"] = await call("process_memory", {"user_id": "alice", "input": "小朱的孩子叫什么？"})
        results["process_bob"] = await call("process_memory", {"user_id": "bob", "input": "小朱的孩子叫什么？"})
        results["debug"] = await call("debug_process_memory", {"user_id": "alice", "input": "我喜欢爵士乐"})
        results["graph"] = await call("get_user_graph", {"user_id": "alice"})
        results["recall"] = await call("memory", {"user_id": "alice", "action": "search", "query": "灿灿的弟弟",
                                                  "filters": {"scene": "family"}})
        results["bad_action"] = await call("memory", {"user_id": "alice", "action": "forget"})
        results["clear"] = await call("clear_user_memory", {"user_id": "bob"})
        return results

    r = asyncio.run(_mcp_session(server.url + "/mcp", calls))
    for key in ("note", "session_ask", "know", "know2", "brief", "episodic", "episodic_bob", "reconcile"):
        assert not r[key].is_error, (key, r[key].content)
    research = r["session_ask"].structured_content["research"]
    assert research["session_id"] == "s1" and "Pyroclastic flows outrun cars" in research["briefing"]
    assert r["session_ask"].structured_content["preamble"].count("[Key Findings]") == 1
    assert r["know2"].structured_content["version"] == 2
    assert r["know2"].structured_content["history"][0]["conclusion"] == "Gas-rich magma explodes."
    brief = r["brief"].structured_content
    assert "Viscous, gas-rich magma explodes." in brief["preamble"] and brief["workspace"][0]["kind"] == "finding"
    events = r["episodic"].structured_content["events"]
    assert events[0]["kind"] == "ask" and "explosive eruptions" in events[0]["content"]
    assert all(0 <= e["retention"] <= 1 and e["score"] <= e["similarity"] + 1e-9 for e in events)
    assert r["episodic_bob"].structured_content["events"] == []
    assert r["bad_range"].is_error and "time_range" in r["bad_range"].content[0].text
    verdict = r["reconcile"].structured_content
    assert verdict["reviewed_by"].startswith("offline") and verdict["a"]["key"] == f"node:{alice_leaves[0]}"
    assert r["reconcile_bob"].is_error and "not found" in r["reconcile_bob"].content[0].text
    for key in ("remember", "process", "process_bob", "debug", "graph", "recall", "clear"):
        assert not r[key].is_error, (key, r[key].content)
    assert r["remember"].structured_content["status"] == "success"
    context = r["process"].structured_content
    assert context["metadata"]["has_memory"] and ("小朱", "女儿", "灿灿") in {
        (g["source"], g["relationship"], g["target"]) for g in context["graph_relations"]}
    assert r["process_bob"].structured_content["metadata"]["has_memory"] is False
    assert "=== Storage decision ===" in r["debug"].structured_content["trace"]
    assert "帅帅" in r["graph"].structured_content["entities"]
    assert r["recall"].structured_content["payload"]["results"][0]["metadata"] == {"scene": "family"}
    assert r["bad_action"].structured_content["status"] == "fallback"
    assert set(r["tools"]) == set(ForestTools.NAMES)
    assert "explore_memory_node" in r["tools"]["retrieve_memory"].description
    assert r["tools"]["explore_memory_node"].input_schema["properties"]["node_id"]["type"] == "integer"
    for key in ("retrieve", "explore", "search", "node", "archives", "tree", "add", "ask", "compare"):
        assert not r[key].is_error, (key, r[key].content)
    assert [c["found"] for c in r["compare"].structured_content["cells"]] == [True, False]   # music, plants
    children = r["explore"].structured_content["children"]
    assert children
    for child in children:   # a summary child by what it covers, a passage by its text
        shown = {"title", "summary", "leaf_count"} if child["node_type"] == "SUMMARY_NODE" else {"content", "section"}
        assert {"id", "node_type", "relevance_score", "citation", *shown} <= set(child)
    assert "Parker" in r["search"].structured_content["hits"][0]["content"]
    assert {a["name"] for a in r["archives"].structured_content["archives"]} == {"earth and music"}
    assert max(n["depth"] for n in r["tree"].structured_content["nodes"]) <= 1
    assert r["add"].structured_content["archive"]["name"] == "plants too"
    assert {"chunk", "summarize", "embed", "store"} <= {m.split(":")[0] for _, _, m in progress}
    ask = r["ask"].structured_content
    assert ask["answer"] and ask["cited_nodes"] and ask["trace"][-1]["decision"]["action"] == "ANSWER"
    assert any("Parker" in c["summary"] or "bebop" in c["summary"].lower() for c in ask["cited_nodes"]) or \
        "Parker" in ask["answer"]
    assert ask["cited_nodes"][0]["citation"] == "§Jazz"
    # Another model_id's node does not exist here; bad arguments say what is wrong. No traceback.
    assert r["other"].is_error and "not found" in r["other"].content[0].text
    assert r["bad"].is_error and "top_k" in r["bad"].content[0].text
    assert all("Traceback" not in res.content[0].text for res in (r["other"], r["bad"]))
    # The call log the workbench shows: every tool, its time, and whether it failed and why.
    logged = server.calls.latest()
    assert set(ForestTools.NAMES) <= {c["tool"] for c in logged}
    assert any(c["tool"] == "get_memory_node" and not c["ok"] and "not found" in c["error"] for c in logged)
    assert all(c["error"] is None for c in logged if c["ok"])
    assert all(c["ms"] >= 0 and c["model_id"] in ("alice", "bob") for c in logged)  # user_ids for personal tools
    forest.delete_archive("alice", r["add"].structured_content["archive"]["id"])


@pytest.mark.slow
def test_every_tool_over_stdio_from_a_subprocess(tmp_path):
    # Its own store, written by the `forest` CLI first: one process at a time uses an embedded Chroma.
    data_dir = tmp_path / "store"
    notes = tmp_path / "notes.md"
    notes.write_text("## Volcanoes\n\n" + topic_text("volcanoes") + "\n\n## Jazz\n\n" + topic_text("jazz"), encoding="utf-8")
    subprocess.run([FOREST, "ingest", str(notes), "--model-id", "alice", "--chunk-size", "300"],
                   env=forest_env(data_dir), check=True, capture_output=True, timeout=300)

    async def run():
        params = StdioServerParameters(command=FOREST, args=["serve", "--transport", "stdio"],
                                       env=forest_env(data_dir))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            call = session.call_tool
            out = {"names": {t.name for t in (await session.list_tools()).tools}}
            out["archives"] = await call("list_archives", {"model_id": "alice"})
            archive_id = out["archives"].structured_content["archives"][0]["id"]
            out["tree"] = await call("get_archive_tree", {"model_id": "alice", "archive_id": archive_id})
            out["retrieve"] = await call("retrieve_memory", {"model_id": "alice", "query": "magma"})
            root = next(n for n in out["tree"].structured_content["nodes"] if n["parent_id"] is None)
            out["explore"] = await call("explore_memory_node", {"model_id": "alice", "node_id": root["id"],
                                                                "query": "magma", "threshold": 0})
            out["search"] = await call("search_memory", {"model_id": "alice", "query": "bebop", "top_k": 2})
            out["node"] = await call("get_memory_node", {"model_id": "alice", "node_id": root["id"]})
            out["add"] = await call("add_document", {"model_id": "carol", "name": "plants",
                                                     "text": topic_text("photosynthesis")})
            out["ask"] = await call("ask_memory", {"model_id": "alice", "question": "How do volcanoes form?"})
            out["missing"] = await call("get_archive_tree", {"model_id": "nobody", "archive_id": archive_id})
            out["carol"] = await call("list_archives", {"model_id": "carol"})
            return out

    out = asyncio.run(run())
    assert out["names"] == set(ForestTools.NAMES)
    for key in ("archives", "tree", "retrieve", "explore", "search", "node", "add", "ask"):
        assert not out[key].is_error, (key, out[key].content)
    assert out["explore"].structured_content["children"]
    assert "Parker" in out["search"].structured_content["hits"][0]["content"]
    assert "magma" in out["ask"].structured_content["answer"].lower()
    assert out["missing"].is_error and "not found" in out["missing"].content[0].text
    assert [a["name"] for a in out["carol"].structured_content["archives"]] == ["plants"]


@pytest.mark.slow
def test_rest_parity_openapi_and_errors(served):
    server, forest, alice, bob, _ = served
    leaf, summary = _leaf_and_summary(forest, "alice", alice.id)
    with httpx.Client(base_url=server.url, timeout=60) as http:
        got = http.get("/tools/explore_memory_node",
                       params={"model_id": "alice", "node_id": summary.id, "query": "eruptions", "threshold": 0})
        assert got.status_code == 200 and got.json()["children"]
        posted = http.post("/tools/retrieve_memory", json={"model_id": "alice", "query": "bebop"})
        assert posted.status_code == 200 and posted.json()["representative_nodes"]
        assert http.get("/tools/get_memory_node", params={"model_id": "bob", "node_id": leaf.id}).status_code == 404
        bad = http.get("/tools/retrieve_memory", params={"model_id": "alice", "query": "x", "top_k": "lots"})
        assert bad.status_code == 400 and "top_k" in bad.json()["error"] and "Traceback" not in bad.text
        exact = http.get("/tools/search_memory", params={"model_id": "alice", "query": "Parker", "mode": "bm25"})
        assert exact.status_code == 200 and "Parker" in exact.json()["hits"][0]["content"]
        fuzzy = http.get("/tools/search_memory", params={"model_id": "alice", "query": "x", "mode": "fuzzy"})
        assert fuzzy.status_code == 400 and "search mode" in fuzzy.json()["error"]
        assert http.get("/tools/no_such_tool").status_code == 404
        assert http.post("/tools/list_archives", content=b"not json",
                         headers={"content-type": "application/json"}).status_code == 400
        schema = http.get("/openapi.json").json()
        assert {f"/tools/{name}" for name in ForestTools.NAMES} <= set(schema["paths"])
        params = {p["name"] for p in schema["paths"]["/tools/explore_memory_node"]["get"]["parameters"]}
        assert {"model_id", "node_id", "query", "threshold"} == params
        big = http.post("/tools/list_archives", content=b"{" + b" " * (MAX_BODY_BYTES + 1) + b"}",
                        headers={"content-type": "application/json"})
        assert big.status_code == 413

        def chunked():  # no content-length: counted as it arrives
            for _ in range(10):
                yield b" " * (MAX_BODY_BYTES // 8)

        assert http.post("/tools/list_archives", content=chunked()).status_code == 413
        # DNS rebinding: a foreign Host or Origin is refused on a loopback bind without a token.
        assert http.get("/tools/list_archives", params={"model_id": "alice"},
                        headers={"host": "evil.example.com"}).status_code == 403
        assert http.post("/v1/chat/completions", json={"model": "alice", "messages": []},
                         headers={"origin": "http://evil.example.com"}).status_code == 403
        # Writing tools take POST only; over REST they work without MCP progress.
        assert http.get("/tools/add_document", params={"model_id": "carol", "name": "x", "text": "y"}).status_code == 405
        added = http.post("/tools/add_document", json={"model_id": "carol", "name": "plants",
                                                       "text": topic_text("photosynthesis")})
        assert added.status_code == 200 and added.json()["archive"]["name"] == "plants"
        assert http.get("/tools/update_semantic_knowledge",
                        params={"model_id": "carol", "topic": "t", "conclusion": "c"}).status_code == 405
        known = http.post("/tools/update_semantic_knowledge", json={"model_id": "carol", "topic": "photosynthesis",
                                                                     "conclusion": "Light reactions split water."})
        assert known.status_code == 200 and known.json()["version"] == 1
        # Tools with side effects other than writing are POST only too (recall counts, Claude calls).
        for name in ("search_episodic_memory", "ask_memory", "reconcile_passages", "debug_process_memory"):
            assert http.get(f"/tools/{name}", params={"model_id": "carol", "query": "q"}).status_code == 405
        recalled = http.post("/tools/search_episodic_memory", json={"model_id": "carol", "query": "water splitting"})
        # A browser request another site started is refused even without an Origin (an <img> sends none).
        assert http.get("/tools/list_archives", params={"model_id": "alice"},
                        headers={"sec-fetch-site": "cross-site"}).status_code == 403
        assert http.post("/tools/list_archives", json={"model_id": "alice"},
                         headers={"origin": "null"}).status_code == 403
        assert http.get("/tools/list_archives", params={"model_id": "alice"},
                        headers={"sec-fetch-site": "same-origin"}).status_code == 200
        assert recalled.status_code == 200 and recalled.json()["events"][0]["kind"] == "knowledge"
        odd = http.post("/v1/chat/completions", json={"model": "alice", "messages": [
            {"role": "user", "content": [{"type": "text", "text": 5}]}]})
        assert odd.status_code == 400 and "string" in odd.json()["error"]


def test_openai_client_chat_stream_and_models(served):
    server, *_ = served
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="not-needed-on-loopback")
    assert {"alice", "bob"} <= {m.id for m in client.models.list()}
    reply = client.chat.completions.create(model="bob", messages=[
        {"role": "system", "content": "Answer from memory."},
        {"role": "user", "content": "What does chlorophyll absorb?"}])
    text = reply.choices[0].message.content
    assert reply.object == "chat.completion" and "light" in text.lower()
    extra = reply.model_extra["memory_forest"]
    assert extra["cited_nodes"] and extra["answered_by"] == "offline:deterministic-policy"
    streamed = client.chat.completions.create(model="bob", stream=True, messages=[
        {"role": "user", "content": "What does chlorophyll absorb?"}])
    assert "".join(c.choices[0].delta.content or "" for c in streamed) == text
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="bob", messages=[{"role": "assistant", "content": "hi"}])
    nobody = client.chat.completions.create(model="nobody", messages=[{"role": "user", "content": "anything?"}])
    assert "nothing relevant" in nobody.choices[0].message.content  # an empty forest, not someone else's
    # The workbench's call log shows the chats too, newest first, and why the bad one failed (the
    # server is the module's: earlier tests' chats follow this test's four).
    chats = [(c["model_id"], c["ok"], c["error"]) for c in server.calls.latest() if c["tool"] == CHAT_ROUTE]
    assert chats[:4] == [("nobody", True, None), ("bob", False, "no user message to answer"), ("bob", True, None),
                     ("bob", True, None)]


@pytest.mark.slow
def test_off_loopback_needs_a_token_on_every_route(tmp_path, embedder):
    from forest import MemoryForest

    forest = MemoryForest(data_dir=tmp_path / "store", embedder=embedder)
    forest.ingest_text("alice", "notes", topic_text("jazz"))
    with pytest.raises(ConfigError, match="FOREST_API_TOKEN"):
        build_http_app(forest, host="0.0.0.0")
    for weak in ("x", "s3cret", "a" * 40, "abab" * 10):  # a public bind used to take any token at all
        with pytest.raises(ConfigError, match="strong API token: FOREST_API_TOKEN must have at least 24 characters"):
            build_http_app(forest, host="0.0.0.0", token=weak)
    server = ThreadServer(forest, host="0.0.0.0", port=free_port(), token=TOKEN).start()
    try:
        url = f"http://127.0.0.1:{server.port}"
        with httpx.Client(base_url=url) as http:
            assert http.get("/health").status_code == 200
            for path in ("/tools/list_archives?model_id=alice", "/v1/models", "/openapi.json"):
                assert http.get(path).status_code == 401
                assert http.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401
            ok = http.get("/tools/list_archives", params={"model_id": "alice"},
                          headers={"Authorization": f"Bearer {TOKEN}"})
            assert ok.status_code == 200
            assert http.post("/mcp", json={}).status_code == 401
        client = openai.OpenAI(base_url=url + "/v1", api_key=TOKEN)
        assert client.chat.completions.create(model="alice", messages=[{"role": "user", "content": "bebop?"}])
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=url + "/v1", api_key="wrong").models.list()

        async def calls(session):
            return await session.call_tool("list_archives", {"model_id": "alice"})

        listed = asyncio.run(_mcp_session(url + "/mcp", calls, headers={"Authorization": f"Bearer {TOKEN}"}))
        assert [a["name"] for a in listed.structured_content["archives"]] == ["notes"]
    finally:
        server.stop()
        forest.close()


def test_rest_bodies_are_json_of_bounded_depth_and_only_post_runs_a_writing_tool(served, caplog):
    """JSON nested 1,000 deep used to give "500 Internal Server Error" as plain text and a
    RecursionError traceback in the log; HEAD ran tools that write (Starlette routes HEAD with GET:
    `curl -I .../tools/clear_user_memory?user_id=u` erased the user's memories); a text/plain POST,
    which a page on another loopback port may send without a CORS preflight, ran any tool."""
    server, forest, *_ = served
    forest.personal.memory_tool("add", "ursula", text="I play the oboe.")
    archives = {m: len(forest.archives(m)) for m in ("alice", "bob", "dave")}
    nested = "[" * 1000 + "]" * 1000
    with httpx.Client(base_url=server.url, timeout=60) as http:
        for route in ("/tools/list_archives", "/tools/add_document", CHAT_ROUTE):
            reply = http.post(route, content=nested, headers={"content-type": "application/json"})
            assert reply.status_code == 400 and reply.json() == {"error": "the body nests deeper than 64 levels"}
        for name, params in (("clear_user_memory", {"user_id": "ursula"}),
                             ("add_document", {"model_id": "dave", "name": "x", "text": "Bebop is fast jazz."})):
            reply = http.head(f"/tools/{name}", params=params)
            assert reply.status_code == 405
        assert http.head("/tools/list_archives", params={"model_id": "alice"}).status_code == 200  # reads only
        for route, body in (("/tools/add_document", {"model_id": "dave", "name": "x", "text": "Bebop is jazz."}),
                            (CHAT_ROUTE, {"model": "alice", "messages": [{"role": "user", "content": "bebop?"}]})):
            for media_type in ("text/plain", "application/x-www-form-urlencoded", None):
                reply = http.post(route, content=json.dumps(body),
                                  headers={"content-type": media_type} if media_type else {})
                assert reply.status_code == 415 and "Content-Type: application/json" in reply.json()["error"]
        assert http.post("/tools/list_archives", json={"model_id": "alice"},
                         headers={"content-type": "application/json; charset=utf-8"}).status_code == 200
    assert [m.memory for m in forest.personal.memories("ursula")] == ["I play the oboe."]
    assert {m: len(forest.archives(m)) for m in archives} == archives
    assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]


def test_the_vector_endpoint_answers_deep_json_with_a_clear_error(tmp_path):
    """The endpoint another process reaches the vector store through answered 500 to deep JSON."""
    import http.client

    from forest.storage.ownership import acquire

    owned = acquire(tmp_path / "chroma")
    try:
        port, token = owned._server.port, owned._server.token
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("POST", "/ids", ("[" * 1000 + "]" * 1000).encode(), {"Authorization": f"Bearer {token}"})
        reply = connection.getresponse()
        assert (reply.status, json.loads(reply.read())) == (
            400, {"error": "the vector request nests deeper than 64 levels", "kind": "InvalidInput"})
    finally:
        owned.release()


@pytest.mark.slow
def test_serve_on_a_public_address_refuses_a_weak_token(tmp_path):
    done = subprocess.run([FOREST, "serve", "--transport", "http", "--host", "0.0.0.0", "--port", str(free_port())],
                          env=forest_env(tmp_path / "store", FOREST_API_TOKEN="x"), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("forest: binding 0.0.0.0 (not loopback) needs a strong API token"), done.stderr


def test_a_server_on_another_loopback_address_answers_its_own_host(tmp_path, embedder):
    """`--host 127.0.0.2` answered 403 to every request naming it (only 127.0.0.1, localhost and
    [::1] were taken for loopback); a name DNS could rebind is still refused."""
    from forest import MemoryForest

    forest = MemoryForest(data_dir=tmp_path / "store", embedder=embedder)
    forest.ingest_text("alice", "notes", topic_text("jazz"))
    server = ThreadServer(forest, host="127.0.0.2", port=free_port()).start()
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            listed = http.get("/tools/list_archives", params={"model_id": "alice"})
            assert listed.status_code == 200 and [a["name"] for a in listed.json()["archives"]] == ["notes"]
            assert http.post("/tools/list_archives", json={"model_id": "alice"},
                             headers={"origin": server.url}).status_code == 200
            assert http.get("/tools/list_archives", params={"model_id": "alice"},
                            headers={"host": "rebound.example:80"}).status_code == 403

        async def calls(session):
            return await session.call_tool("list_archives", {"model_id": "alice"})

        listed = asyncio.run(_mcp_session(server.url + "/mcp", calls))
        assert [a["name"] for a in listed.structured_content["archives"]] == ["notes"]
    finally:
        server.stop()
        forest.close()


def test_ask_memory_over_chosen_archives_stays_in_the_model_id(served):
    server, _, alice, bob, _ = served
    with httpx.Client(base_url=server.url, timeout=120) as http:
        asked = http.post("/tools/ask_memory", json={"model_id": "alice", "question": "Who played bebop?",
                                                     "archive_ids": [alice.id]})
        assert asked.status_code == 200 and {n["archive_id"] for n in asked.json()["cited_nodes"]} == {alice.id}
        theirs = http.post("/tools/ask_memory", json={"model_id": "alice", "question": "Who played bebop?",
                                                      "archive_ids": [bob.id]})
        assert theirs.status_code == 404 and f"archive {bob.id} not found" in theirs.text
        assert "plants" not in theirs.text and "Traceback" not in theirs.text
        bad = http.post("/tools/ask_memory", json={"model_id": "alice", "question": "q", "archive_ids": "all"})
        assert bad.status_code == 400 and "Traceback" not in bad.text
