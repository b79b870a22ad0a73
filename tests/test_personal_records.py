"""Personal memory's typed records (forest/personal/records.py): PersonalMemory's and MemoryTool's
public methods return records, not dicts, and every face (the MCP `memory` tool, REST, mem0's
routes, the CLI's --json) sends what record.to_dict() gives for the same call."""
import asyncio
import dataclasses
import inspect
import json
import subprocess
import sys
import typing
from pathlib import Path

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from testkit.processes import forest_env, free_port
from forest.compat.mem0.shapes import history_shape, memory_ref, memory_shape
from forest.personal import records
from forest.personal.service import PersonalMemory
from forest.personal.tool import MemoryTool
from forest.serving.http import ThreadServer

FOREST = str(Path(sys.executable).parent / "forest")
SAID = ["I live in Berlin.", "My sister Mia is a doctor in Porto.", "I like green tea with jasmine."]


def _loose(annotation: typing.Any) -> bool:
    """The annotation is, or holds, a dict or Any: an untyped reply."""
    if annotation is typing.Any or annotation is dict or typing.get_origin(annotation) is dict:
        return True
    return any(_loose(arg) for arg in typing.get_args(annotation))


@pytest.mark.parametrize("service", [PersonalMemory, MemoryTool])
def test_every_public_method_returns_a_typed_record(service):
    checked = []
    for name, member in vars(service).items():
        function = member.fget if isinstance(member, property) else member
        if name.startswith("_") or not inspect.isfunction(function):
            continue
        returns = typing.get_type_hints(function).get("return", typing.Any)
        assert not _loose(returns), f"{service.__name__}.{name} returns {returns}"
        checked.append(name)
    assert len(checked) >= (14 if service is PersonalMemory else 5)
    if service is PersonalMemory:
        hints = {name: typing.get_type_hints(getattr(service, name))["return"]
                 for name in ("process_memory", "memory_tool", "user_graph", "clear_user_memory", "write_queue")}
        assert hints == {"process_memory": records.MemoryContext, "memory_tool": records.ToolReply,
                         "user_graph": records.UserGraph, "clear_user_memory": records.Cleared,
                         "write_queue": records.WriteQueue}


def test_records_are_frozen_slotted_and_serializable():
    made = [kind for kind in vars(records).values() if dataclasses.is_dataclass(kind)
            and kind.__module__ == records.__name__]
    assert len(made) >= 15
    for kind in made:
        assert kind.__dataclass_params__.frozen and "__slots__" in vars(kind), kind.__name__
        assert callable(getattr(kind, "to_dict", None)), f"{kind.__name__} has no wire shape"


@pytest.fixture(scope="module")
def served(tmp_path_factory, embedder):
    from forest import MemoryForest

    data_dir = tmp_path_factory.mktemp("records") / "store"
    forest = MemoryForest(data_dir=data_dir, embedder=embedder)
    forest.personal.memory_tool("add", "ann", text=SAID)
    forest.personal.memory_tool("add", "bob", text="I live in Oslo.")
    server = ThreadServer(forest, port=free_port()).start()
    yield server, forest, data_dir
    server.stop()
    forest.close()


def _mcp(url: str, name: str, arguments: dict) -> dict:
    async def call() -> dict:
        client = create_mcp_http_client()
        async with client, streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool(name, arguments)
                assert not result.is_error, result.content
                return result.structured_content
    return asyncio.run(call())


# (tool, arguments, the same call of the Python API)
CALLS = [
    ("memory", {"user_id": "ann", "action": "search", "query": "where does my sister work", "top_k": 2},
     lambda p: p.memory_tool("search", "ann", query="where does my sister work", top_k=2)),
    ("memory", {"user_id": "ann", "action": "history"}, lambda p: p.memory_tool("history", "ann")),
    ("memory", {"user_id": "ann", "action": "delete", "memory_id": 99999},  # another's or no memory: refused
     lambda p: p.memory_tool("delete", "ann", memory_id=99999)),
    ("get_user_graph", {"user_id": "ann"}, lambda p: p.user_graph("ann")),
    ("get_user_graph", {"user_id": "ann", "include_ended": True}, lambda p: p.user_graph("ann", include_ended=True)),
]


@pytest.mark.parametrize("tool, arguments, direct", CALLS,
                         ids=["search", "history", "refused", "graph", "graph-with-ended"])
def test_mcp_and_rest_send_the_records_dict(served, tool, arguments, direct):
    server, forest, _ = served
    record = direct(forest.personal)
    assert dataclasses.is_dataclass(record)
    expected = record.to_dict()
    assert _mcp(server.url + "/mcp", tool, arguments) == expected
    rest = httpx.post(f"{server.url}/tools/{tool}", json=arguments, timeout=60)
    assert rest.status_code == 200 and rest.json() == expected
    if tool == "memory" and arguments["action"] == "search":
        assert [r["memory"] for r in expected["payload"]["results"]][0] == SAID[1]
        assert all(r["user_id"] == "ann" for r in expected["payload"]["results"])


def test_mem0_routes_shape_the_same_records(served):
    server, forest, _ = served
    personal = forest.personal
    berlin = next(r for r in personal.memories("ann") if r.memory == SAID[0])
    ref = memory_ref("ann", berlin.id)
    got = httpx.get(f"{server.url}/v1/memories/{ref}/", timeout=60).json()
    assert got == memory_shape(berlin)
    plain = berlin.to_dict()
    assert {k: got[k] for k in ("memory", "user_id", "agent_id", "run_id", "created_at", "updated_at")} == \
        {k: plain[k] for k in ("memory", "user_id", "agent_id", "run_id", "created_at", "updated_at")}
    history = httpx.get(f"{server.url}/v1/memories/{ref}/history/", timeout=60).json()
    entries = personal.memory_tool("history", "ann", memory_id=berlin.id).payload.entries
    assert history == [history_shape("ann", e, n, {"agent_id": None, "run_id": None}) for n, e in enumerate(entries, 1)]
    found = httpx.post(f"{server.url}/v3/memories/search/", timeout=60,
                       json={"query": "where do I live", "filters": {"user_id": "ann"}, "top_k": 2}).json()
    hits = personal.tool.search("ann", "where do I live", 2)
    assert found == {"results": [memory_shape(h.record, round(h.score, 4)) for h in hits]}
    assert found["results"][0]["score"] == hits[0].to_dict()["score"] and found["results"][0]["memory"] == SAID[0]


@pytest.mark.parametrize("command, direct", [
    (("graph",), lambda p: p.user_graph("ann")),
    (("graph", "--ended"), lambda p: p.user_graph("ann", include_ended=True)),
    (("history",), lambda p: p.memory_tool("history", "ann")),
    (("search", "green", "tea"), lambda p: p.memory_tool("search", "ann", query="green tea")),
], ids=["graph", "graph-with-ended", "history", "search"])
def test_cli_json_is_the_records_dict(served, command, direct):
    _, forest, data_dir = served
    done = subprocess.run([FOREST, "personal", command[0], *command[1:], "--user-id", "ann", "--json"],
                          env=forest_env(data_dir), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == direct(forest.personal).to_dict()


def test_process_memory_over_mcp_and_rest_is_the_records_dict(served):
    """The same context three ways (the input is a question: the write path keeps nothing of it),
    equal but for the time the retrieval took."""
    server, forest, _ = served
    arguments = {"user_id": "ann", "input": "Where does my sister Mia work?"}

    def untimed(reply: dict) -> dict:
        assert isinstance(reply["metadata"].pop("retrieval_time_ms"), float)
        assert forest.personal.drain()
        assert sorted(m.memory for m in forest.personal.memories("ann")) == sorted(SAID)  # the other tests' store
        return reply

    direct = untimed(forest.personal.process_memory("ann", arguments["input"]).to_dict())
    assert direct["vector_chunks"][0]["memory"] == SAID[1] and direct["metadata"]["queued"] is True
    assert untimed(_mcp(server.url + "/mcp", "process_memory", arguments)) == direct
    assert untimed(httpx.post(f"{server.url}/tools/process_memory", json=arguments, timeout=60).json()) == direct
