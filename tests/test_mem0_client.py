"""mem0 spoken by the server (docs/mem0.md): the real mem0ai MemoryClient (2.2) against the HTTP app
served by uvicorn (the app `forest serve` runs), mem0's open-source server routes over httpx, and
forest.compat.mem0.Memory in place of mem0's Memory. Responses are checked against the schemas of
mem0's own OpenAPI file (tests/data/mem0_openapi.json, vendored with its source and licence)."""
from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

os.environ["MEM0_TELEMETRY"] = "False"  # read when mem0 is imported: nothing may leave the machine

import httpx
import jsonschema
import pytest
from mem0 import MemoryClient
from mem0.exceptions import MemoryNotFoundError, ValidationError

from testkit.processes import forest_env, free_port, start_serve, stop_process
from forest import MemoryForest, load_settings
from forest.compat.mem0 import Memory
from forest.errors import ConfigError
from forest.serving.http import ThreadServer

TOKEN = "mem0-test-token-" + "x7Qp2Lm9Zr4Kv8Nw"
OPENAPI = json.loads((Path(__file__).parent / "data" / "mem0_openapi.json").read_text(encoding="utf-8"))


def _nullable(schema: Any) -> Any:
    """OpenAPI 3.0's `nullable: true` as JSON Schema's type list, everywhere in a schema."""
    if isinstance(schema, list):
        return [_nullable(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    converted = {k: _nullable(v) for k, v in schema.items() if k != "nullable"}
    if schema.get("nullable") and "type" in schema:
        converted["type"] = [schema["type"], "null"]
    return converted


def conforms(body: Any, path: str, method: str, status: str = "200") -> Any:
    """`body` checked against mem0's response schema for the route; returned for more asserts."""
    schema = OPENAPI["paths"][path][method]["responses"][status]["content"]["application/json"]["schema"]
    jsonschema.validate(body, _nullable(schema))
    return body


@pytest.fixture(scope="module")
def served(tmp_path_factory, embedder):
    forest = MemoryForest(load_settings({"data_dir": tmp_path_factory.mktemp("mem0") / "store"}, environ={}),
                          embedder=embedder)
    server = ThreadServer(forest, port=free_port(), token=TOKEN).start()
    yield forest, server.url
    server.stop()
    forest.close()


@pytest.fixture
def outside_calls(monkeypatch) -> list[Any]:
    """Connections the test makes anywhere but this machine (mem0's telemetry would be one)."""
    made: list[Any] = []
    connect = socket.socket.connect

    def watched(sock, address):
        host = address[0] if isinstance(address, tuple) else ""
        if host and host not in ("127.0.0.1", "localhost", "::1"):
            made.append(address)
            raise OSError("no network beyond this machine in tests")
        return connect(sock, address)
    monkeypatch.setattr(socket.socket, "connect", watched)
    return made


@pytest.fixture
def client(served, outside_calls) -> MemoryClient:
    client = MemoryClient(api_key=TOKEN, host=served[1])
    yield client
    assert outside_calls == []


def http(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Token {TOKEN}"}, timeout=60)


def wait_for_event(url: str, event_id: str) -> dict[str, Any]:
    with http(url) as session:
        for _ in range(600):
            event = session.get(f"/v1/event/{event_id}/").json()
            if event["status"] not in ("PENDING", "RUNNING"):
                return conforms(event, "/v1/event/{event_id}/", "get")
            time.sleep(0.05)
    raise AssertionError(f"event {event_id} still {event['status']}")


def test_memory_client_adds_searches_updates_and_deletes(served, client):
    forest, url = served
    kept = conforms(client.add("I am allergic to peanuts", user_id="ana", agent_id="nurse", infer=False,
                               metadata={"topic": "health"}), "/v3/memories/add/", "post")
    assert kept["status"] == "SUCCEEDED" and kept["results"][0]["event"] == "ADD"
    allergy = kept["results"][0]["id"]
    assert isinstance(allergy, str)

    queued = conforms(client.add([{"role": "user", "content": "I started learning the cello in March"}],
                                 user_id="ana"), "/v3/memories/add/", "post")
    assert queued["status"] == "PENDING"
    event = wait_for_event(url, queued["event_id"])
    assert event["status"] == "SUCCEEDED"
    assert [r["data"]["memory"] for r in event["results"]] == ["I started learning the cello in March"]

    found = conforms(client.search("Which food is dangerous for Ana?", filters={"user_id": "ana"}, top_k=2),
                     "/v3/memories/search/", "post")["results"]
    assert found[0]["id"] == allergy and found[0]["metadata"] == {"topic": "health"}
    assert found[0]["agent_id"] == "nurse" and 0 <= found[0]["score"] <= 1

    first = conforms(client.get_all(filters={"user_id": "ana"}, page=1, page_size=1), "/v3/memories/", "post")
    second = client.get_all(filters={"user_id": "ana"}, page=2, page_size=1)
    assert first["count"] == 2 and first["next"] and first["previous"] is None and second["next"] is None
    assert {first["results"][0]["memory"], second["results"][0]["memory"]} == {
        "I am allergic to peanuts", "I started learning the cello in March"}

    assert conforms(client.get(allergy), "/v1/memories/{memory_id}/", "get")["memory"] == "I am allergic to peanuts"
    updated = conforms(client.update(allergy, text="I am allergic to peanuts and shellfish"),
                       "/v1/memories/{memory_id}/", "put")
    assert updated["memory"] == "I am allergic to peanuts and shellfish"
    history = conforms(client.history(allergy), "/v1/memories/{memory_id}/history/", "get")
    assert [(h["event"], h["old_memory"], h["new_memory"]) for h in history] == [
        ("ADD", None, "I am allergic to peanuts"),
        ("UPDATE", "I am allergic to peanuts", "I am allergic to peanuts and shellfish")]

    conforms(client.delete(allergy), "/v1/memories/{memory_id}/", "delete")
    with pytest.raises(MemoryNotFoundError):
        client.get(allergy)
    assert [h["event"] for h in client.history(allergy)][-1] == "DELETE"
    conforms(client.delete_all(user_id="ana"), "/v1/memories/", "delete")
    assert client.get_all(filters={"user_id": "ana"})["count"] == 0


def test_search_filters_combine_users_agents_and_metadata(served, client):
    for user, agent, text, place in (("bo", "coach", "Bo runs ten kilometres every Sunday", "park"),
                                     ("bo", "chef", "Bo cooks risotto on Fridays", "home"),
                                     ("cy", "coach", "Cy swims before work", "pool"),
                                     ("dee", "coach", "Dee runs marathons", "road")):
        client.add(text, user_id=user, agent_id=agent, infer=False, metadata={"place": place})

    def memories(filters: dict[str, Any], query: str = "sport and food") -> set[str]:
        reply = client.search(query, filters=filters, top_k=10)
        conforms(reply, "/v3/memories/search/", "post")
        return {m["memory"] for m in reply["results"]}

    assert memories({"user_id": "bo"}) == {"Bo runs ten kilometres every Sunday", "Bo cooks risotto on Fridays"}
    assert memories({"AND": [{"user_id": "bo"}, {"agent_id": "coach"}]}) == {"Bo runs ten kilometres every Sunday"}
    assert memories({"OR": [{"user_id": "bo"}, {"user_id": "cy"}], "agent_id": "coach"}) == {
        "Bo runs ten kilometres every Sunday", "Cy swims before work"}
    assert memories({"user_id": {"in": ["cy", "dee"]}}) == {"Cy swims before work", "Dee runs marathons"}
    assert memories({"user_id": "bo", "place": {"in": ["home", "pool"]}}) == {"Bo cooks risotto on Fridays"}
    assert memories({"user_id": "bo", "NOT": [{"agent_id": "chef"}]}) == {"Bo runs ten kilometres every Sunday"}
    assert len(client.search("running", filters={"user_id": {"in": ["bo", "cy", "dee"]}}, top_k=1)["results"]) == 1
    assert client.get_all(filters={"OR": [{"user_id": "cy"}, {"user_id": "dee"}]})["count"] == 2
    for unbounded in ({"agent_id": "coach"}, {"OR": [{"user_id": "bo"}, {"agent_id": "coach"}]}):
        with pytest.raises(ValidationError, match="user_id"):
            client.search("running", filters=unbounded)


def test_a_wrong_or_absent_key_is_refused(served, outside_calls):
    url = served[1]
    with pytest.raises(ValueError, match="401"):
        MemoryClient(api_key="not-the-token", host=url)
    for headers in ({}, {"Authorization": "Token nope"}, {"Authorization": f"Basic {TOKEN}"}):
        reply = httpx.post(f"{url}/v3/memories/search/", json={"query": "x", "filters": {"user_id": "ana"}},
                           headers=headers)
        assert reply.status_code == 401 and "token" in reply.json()["error"]
    bearer = httpx.get(f"{url}/v1/ping/", headers={"Authorization": f"Bearer {TOKEN}"})
    assert conforms(bearer.json(), "/v1/ping/", "get")["status"] == "ok"
    assert outside_calls == []


def test_one_user_never_sees_another_on_any_face(served, client):
    forest, url = served
    secret = client.add("Eve's locker code is 4471", user_id="eve", infer=False)["results"][0]["id"]
    client.add("Finn likes jazz", user_id="finn", infer=False)
    assert client.search("locker code", filters={"user_id": "finn"})["results"][0]["memory"] == "Finn likes jazz"
    number = secret.split(".")[0]
    finns_view = client.get_all(filters={"user_id": "finn"})["results"][0]["id"]
    forged = f"{number}.{finns_view.split('.')[1]}"   # Eve's number under Finn's name
    for call in (lambda: client.get(forged), lambda: client.history(forged), lambda: client.delete(forged),
                 lambda: client.update(forged, text="mine now")):
        with pytest.raises(MemoryNotFoundError):
            call()
    assert client.get(secret)["memory"] == "Eve's locker code is 4471"

    with http(url) as session:   # the REST memory tool and the mem0 routes see one store
        tool = session.post("/tools/memory", json={"action": "search", "user_id": "eve", "query": "locker"}).json()
        assert [m["id"] for m in tool["payload"]["results"]] == [int(number)]
        added = session.post("/tools/memory", json={"action": "add", "user_id": "finn",
                                                    "text": "Finn plays the trumpet"}).json()
        assert added["status"] == "success"
        tool_for_finn = session.post("/tools/memory", json={"action": "search", "user_id": "finn",
                                                            "query": "locker code"}).json()
        assert all(m["user_id"] == "finn" for m in tool_for_finn["payload"]["results"])
    assert "Finn plays the trumpet" in {m["memory"] for m in client.search(
        "music", filters={"user_id": "finn"})["results"]}
    assert all(m["user_id"] == "eve" for m in client.get_all(filters={"user_id": "eve"})["results"])


def test_entities_are_listed_and_deleted_by_user(served, client):
    forest, url = served
    client.add("Gus keeps bees", user_id="gus", agent_id="farmhand", run_id="spring", infer=False)
    listed = conforms(client.users(), "/v1/entities/", "get")
    gus = {(e["type"], e["name"]) for e in listed["results"] if e["owner"] == "gus"}
    assert gus == {("user", "gus"), ("agent", "farmhand"), ("run", "spring")}
    with http(url) as session:
        refused = session.delete("/v2/entities/agent/farmhand/")
        assert refused.status_code == 400 and "user_id" in refused.json()["error"]
        assert session.delete("/v2/entities/planet/mars/").status_code == 400
    client.delete_users(user_id="gus")
    assert client.get_all(filters={"user_id": "gus"})["count"] == 0
    assert "gus" not in {e["owner"] for e in client.users()["results"]}


def test_batch_update_and_delete(served, client):
    ids = [r["id"] for r in client.add([{"role": "user", "content": "Hal drinks tea"},
                                        {"role": "user", "content": "Hal reads sci-fi"}],
                                       user_id="hal", infer=False)["results"]]
    assert client.batch_update([{"memory_id": ids[0], "text": "Hal drinks green tea"}])["message"]
    assert client.get(ids[0])["memory"] == "Hal drinks green tea"
    client.update(ids[1], metadata={"shelf": "top"})          # metadata alone: the words stay
    assert client.get(ids[1])["memory"] == "Hal reads sci-fi" and client.get(ids[1])["metadata"] == {"shelf": "top"}
    client.batch_delete([{"memory_id": i} for i in ids])
    assert client.get_all(filters={"user_id": "hal"})["count"] == 0


def test_bad_input_gets_one_line_4xx(served):
    url = served[1]
    with http(url) as session:
        cases = [
            (session.get("/v1/memories/not-an-id/"), 400),
            (session.get("/v1/memories/1.YW5h.h1/history/"), 400),
            (session.get("/v1/memories/999999.YW5h/"), 404),
            (session.post("/v3/memories/search/", json={"query": "x", "filters": {"user_id": {"like": "a"}}}), 400),
            (session.post("/v3/memories/search/", json={"query": "x", "filters": {"user_id": "ana"}, "top_k": 0}),
             400),
            (session.post("/v3/memories/add/", json={"messages": "hi"}), 400),
            (session.post("/v3/memories/add/", json={"messages": [{"role": "user"}], "user_id": "ana"}), 400),
            (session.post("/v3/memories/", json=[]), 400),
            (session.get("/v1/event/12.YW5h/"), 404),
            (session.delete("/v1/memories/"), 400),
        ]
    for reply, status in cases:
        assert reply.status_code == status, reply.text
        assert "\n" not in reply.json()["error"] and "Traceback" not in reply.text


def test_open_source_server_routes(served):
    url = served[1]
    with http(url) as session:
        added = session.post("/memories", json={"messages": [{"role": "user", "content": "Ivy grows tomatoes"}],
                                                "user_id": "ivy", "infer": False}).json()["results"]
        ref = added[0]["id"]
        assert added[0]["memory"] == "Ivy grows tomatoes"
        inferred = session.post("/memories", json={"messages": [{"role": "user", "content": "My dog is called Rex"}],
                                                   "user_id": "ivy"}).json()["results"]
        assert [r["memory"] for r in inferred] == ["My dog is called Rex"]
        assert {m["memory"] for m in session.get("/memories", params={"user_id": "ivy"}).json()["results"]} == {
            "Ivy grows tomatoes", "My dog is called Rex"}
        assert session.get("/memories").status_code == 400      # no user: not everyone's memories
        assert session.get(f"/memories/{ref}").json()["memory"] == "Ivy grows tomatoes"
        assert session.put(f"/memories/{ref}", json={"text": "Ivy grows cherry tomatoes"}).status_code == 200
        assert [h["event"] for h in session.get(f"/memories/{ref}/history").json()] == ["ADD", "UPDATE"]
        found = session.post("/search", json={"query": "pet name", "user_id": "ivy", "top_k": 1}).json()["results"]
        assert found[0]["memory"] == "My dog is called Rex"
        assert session.delete(f"/memories/{ref}").status_code == 200
        session.post("/memories", json={"messages": [{"role": "user", "content": "Jo sails"}], "user_id": "jo",
                                        "infer": False})
        refused = session.post("/reset")
        assert refused.status_code == 400 and "user" in refused.json()["error"]
        assert session.post("/reset", params={"user_id": "ivy"}).status_code == 200
        assert session.get("/memories", params={"user_id": "ivy"}).json()["results"] == []
        assert [m["memory"] for m in session.get("/memories", params={"user_id": "jo"}).json()["results"]] == [
            "Jo sails"]
        assert session.delete("/memories", params={"user_id": "jo"}).status_code == 200
        assert session.get("/memories", params={"user_id": "jo"}).json()["results"] == []


def test_compat_memory_replaces_mem0_memory(make_forest):
    memory = Memory(forest=make_forest())
    added = memory.add("I moved to Lisbon in May", user_id="kai", metadata={"kind": "move"})["results"]
    assert [r["memory"] for r in added] == ["I moved to Lisbon in May"] and added[0]["event"] == "ADD"
    kept = memory.add([{"role": "user", "content": "Kai's favourite tea is oolong"}], user_id="kai",
                      agent_id="barista", infer=False)["results"][0]
    assert memory.search("which city did I move to", filters={"user_id": "kai"}, top_k=1)["results"][0]["memory"] == \
        "I moved to Lisbon in May"
    assert [m["memory"] for m in memory.search("tea", user_id="kai", filters={"agent_id": "barista"})["results"]] \
        == ["Kai's favourite tea is oolong"]
    assert len(memory.get_all(filters={"user_id": "kai"})["results"]) == 2
    updated = memory.update(kept["id"], text="Kai's favourite tea is sencha")
    assert updated == {"message": "Memory updated successfully!"}
    assert memory.get(kept["id"])["memory"] == "Kai's favourite tea is sencha"
    assert [h["event"] for h in memory.history(kept["id"])] == ["ADD", "UPDATE"]
    memory.delete(kept["id"])
    assert memory.get(kept["id"]) is None
    with pytest.raises(ValueError, match="user_id"):
        memory.search("tea", filters={"agent_id": "barista"})
    memory.add("Lu paints", user_id="lu", infer=False)
    memory.delete_all(user_id="kai")
    assert memory.get_all(filters={"user_id": "kai"})["results"] == []
    memory.reset()
    assert memory.get_all(filters={"user_id": "lu"})["results"] == []


def test_compat_memory_opens_the_default_store(tmp_path, monkeypatch):
    monkeypatch.setenv("FOREST_DATA_DIR", str(tmp_path / "default"))
    memory = Memory()
    try:
        memory.add("Mo collects stamps", user_id="mo", infer=False)
        assert memory.forest.settings.data_dir == tmp_path / "default"
        assert memory.get_all(filters={"user_id": "mo"})["results"][0]["memory"] == "Mo collects stamps"
    finally:
        memory.close()


def test_secrets_sent_through_mem0_are_not_kept(served, client):
    forest, url = served
    client.add("my email password is Tr0ub4dor&3", user_id="nia", infer=False)
    queued = client.add("the db is postgres://admin:S3cr3tPr0d@db.example.com:5432/app", user_id="nia",
                        metadata={"note": "billing key sk_live_4eC39HqLyjWDarjtT1zdp7dcTYooMQauvdEDq54NiTphI7jx"})
    wait_for_event(url, queued["event_id"])
    shown = json.dumps(client.get_all(filters={"user_id": "nia"}))
    stored = b"".join(p.read_bytes() for p in Path(forest.settings.data_dir).rglob("*.sqlite3*"))
    assert b"nia" in stored   # the store was read
    for secret in ("Tr0ub4dor&3", "S3cr3tPr0d", "sk_live_4eC39HqLyjWDarjtT1zdp7dcTYooMQauvdEDq54NiTphI7jx"):
        assert secret not in shown and secret.encode() not in stored


@pytest.mark.slow
def test_memory_client_against_forest_serve(tmp_path, outside_calls):
    """The command a deployer runs, with its token from the environment."""
    process, url = start_serve(tmp_path / "store", forest_env(tmp_path / "store", FOREST_API_TOKEN=TOKEN))
    try:
        client = MemoryClient(api_key=TOKEN, host=url)
        event = wait_for_event(url, client.add("I keep a sourdough starter called Bubbles", user_id="ola")["event_id"])
        assert event["status"] == "SUCCEEDED"
        found = client.search("what is my starter's name", filters={"user_id": "ola"}, top_k=1)["results"]
        assert found[0]["memory"] == "I keep a sourdough starter called Bubbles"
        with pytest.raises(ValueError, match="401"):
            MemoryClient(api_key="guessed", host=url)
    finally:
        stop_process(process)
    assert outside_calls == []


def test_an_inferred_add_is_refused_while_personal_memory_is_switched_off(make_forest):
    """mem0's asynchronous add queues a write: with memory_enabled off, as process_memory does,
    nothing is queued, and the caller is told why."""
    forest = make_forest(memory_enabled=False)
    with pytest.raises(ConfigError, match="switched off"):
        forest.personal.queue_write("ann", "I live in Lisbon")
    assert forest.personal.write_queue("ann").to_dict()["state"] == {"pending": 0, "done": 0, "failed": 0}
