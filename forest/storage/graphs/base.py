"""What every graph store is: the user's knowledge graph as Cypher sees it, one query text for
FalkorDB and Neo4j alike (openCypher both run: no elementId, no vector functions, parameters for
every value that comes from a user).

One graph per deployment, every node and edge carrying `user_id`, rather than one graph per user:
Neo4j Community holds one database, a FalkorDB graph's name cannot be a query parameter (per-user
graphs would mean names built from user ids), and every query below matches `user_id` first, so
one user's walk never reaches another's nodes. Nodes are :Entity {user_id, name: the entity key
(forest.personal.graph.entity_key), display: its first spelling}; each SQL triple is one
:RELATION edge {user_id, relationship, source, target (as spelled), source_key, target_key,
memory_ids (the memories stating it), valid_from (when it was first stated: ISO-8601 UTC, as every
output shows times; a float would not survive FalkorDB's replies to the digit), triple_id (its SQL
row: the stored order the walk breaks ties by), valid_to (when a later statement superseded it;
absent while it holds)}. An edge lives exactly as long as its SQL row: a superseded fact's edge is
closed (valid_to set) like its row, an erased memory's edge goes with its row. The reads of what
holds now (the walk, the entities it starts from, current_edges) skip closed edges; `edges` shows
them too, for what was true and for the mirror's own bookkeeping.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from forest.errors import ForestError

GRAPH_NAME = "forest_memory"

UPSERT_EDGES = """
UNWIND $edges AS e
MERGE (s:Entity {user_id: $user_id, name: e.source_key}) ON CREATE SET s.display = e.source
MERGE (t:Entity {user_id: $user_id, name: e.target_key}) ON CREATE SET t.display = e.target
MERGE (s)-[r:RELATION {user_id: $user_id, relationship: e.relationship}]->(t)
SET r.source = e.source, r.target = e.target, r.source_key = e.source_key, r.target_key = e.target_key,
    r.memory_ids = e.memory_ids, r.valid_from = e.valid_from, r.valid_to = e.valid_to, r.triple_id = e.triple_id
"""
REMOVE_EDGES = """
UNWIND $keys AS k
MATCH (:Entity {user_id: $user_id, name: k[0]})-[r:RELATION {user_id: $user_id, relationship: k[1]}]->
      (:Entity {user_id: $user_id, name: k[2]})
DELETE r
"""
PRUNE_ENTITIES = "MATCH (e:Entity {user_id: $user_id}) WHERE NOT (e)--() DELETE e"
CLEAR_USER = "MATCH (e:Entity {user_id: $user_id}) DETACH DELETE e"
_EDGE_FIELDS = ("r.triple_id, r.source, r.relationship, r.target, r.source_key, r.target_key, r.memory_ids, "
                "r.valid_from, r.valid_to")
USER_EDGES = (f"MATCH (:Entity {{user_id: $user_id}})-[r:RELATION]->(:Entity {{user_id: $user_id}}) "
              f"RETURN {_EDGE_FIELDS} ORDER BY r.triple_id")
# Entities some fact that holds now touches (a place only a closed edge reaches starts no walk).
ENTITY_NAMES = ("MATCH (e:Entity {user_id: $user_id})-[r:RELATION {user_id: $user_id}]-(:Entity) "
                "WHERE r.valid_to IS NULL WITH DISTINCT e RETURN e.display ORDER BY e.name")
USERS = "MATCH (e:Entity) RETURN DISTINCT e.user_id"


def edges_within(max_depth: int) -> str:
    """The open edges at most max_depth hops from the start entities, either way, along open edges,
    in stored order. A variable-length bound cannot be a parameter in Cypher: max_depth is an int
    checked here, never user text."""
    if not isinstance(max_depth, int) or not 1 <= max_depth <= 5:
        raise ValueError(f"max_depth is 1-5, got {max_depth!r}")
    return (f"MATCH (s:Entity {{user_id: $user_id}}) WHERE s.name IN $start "
            f"MATCH p = (s)-[:RELATION*0..{max_depth - 1}]-(:Entity)-[r:RELATION {{user_id: $user_id}}]-(:Entity) "
            f"WHERE all(x IN relationships(p) WHERE x.valid_to IS NULL) "
            f"WITH DISTINCT r RETURN {_EDGE_FIELDS} ORDER BY r.triple_id")


class GraphStoreError(ForestError):
    """The graph store failed (it is down, or refused a query): not "the graph is empty"."""


@dataclass(frozen=True)
class GraphEdge:
    """One fact as both SQL and the graph hold it."""
    triple_id: int
    source: str
    relationship: str
    target: str
    source_key: str
    target_key: str
    memory_ids: tuple[int, ...]
    valid_from: str
    valid_to: str | None = None   # set when a later statement superseded the fact

    @property
    def key(self) -> tuple[str, str, str]:
        """What identifies the fact (SQL's unique key beside user_id)."""
        return self.source_key, self.relationship, self.target_key

    def parameters(self) -> dict[str, Any]:
        return {"triple_id": self.triple_id, "source": self.source, "relationship": self.relationship,
                "target": self.target, "source_key": self.source_key, "target_key": self.target_key,
                "memory_ids": list(self.memory_ids), "valid_from": self.valid_from, "valid_to": self.valid_to}


def _edge(row: list[Any]) -> GraphEdge:
    triple_id, source, relationship, target, source_key, target_key, memory_ids, valid_from, valid_to = row
    return GraphEdge(int(triple_id), source, relationship, target, source_key, target_key,
                     tuple(int(i) for i in memory_ids or ()), str(valid_from), None if valid_to is None else str(valid_to))


class GraphStore(ABC):
    """The queries above, run by a store's own client (`run`); schema in the store's own syntax."""

    @abstractmethod
    def run(self, query: str, parameters: dict[str, Any]) -> list[list[Any]]:
        """The query's rows; GraphStoreError when the store fails."""

    @abstractmethod
    def ensure_schema(self) -> None:
        """The index and uniqueness constraint on (user_id, name) of :Entity, made once."""

    @abstractmethod
    def close(self) -> None: ...

    def upsert(self, user_id: str, edges: list[GraphEdge]) -> None:
        if edges:
            self.run(UPSERT_EDGES, {"user_id": user_id, "edges": [e.parameters() for e in edges]})

    def remove(self, user_id: str, keys: list[tuple[str, str, str]]) -> None:
        """Drop these facts' edges, then the entities no edge touches any more."""
        if keys:
            self.run(REMOVE_EDGES, {"user_id": user_id, "keys": [list(k) for k in keys]})
            self.run(PRUNE_ENTITIES, {"user_id": user_id})

    def clear(self, user_id: str) -> None:
        self.run(CLEAR_USER, {"user_id": user_id})

    def edges(self, user_id: str) -> list[GraphEdge]:
        """Every edge of the user, closed ones too, in stored (SQL) order."""
        return [_edge(row) for row in self.run(USER_EDGES, {"user_id": user_id})]

    def current_edges(self, user_id: str) -> list[GraphEdge]:
        """The user's edges that hold now, in stored order."""
        return [e for e in self.edges(user_id) if e.valid_to is None]

    def entity_names(self, user_id: str) -> list[str]:
        return [row[0] for row in self.run(ENTITY_NAMES, {"user_id": user_id})]

    def within(self, user_id: str, start_keys: list[str], max_depth: int) -> list[GraphEdge]:
        """The edges within max_depth hops of the start entities (by key), in stored order."""
        if not start_keys:
            return []
        return [_edge(row) for row in self.run(edges_within(max_depth), {"user_id": user_id, "start": start_keys})]

    def users(self) -> list[str]:
        return [row[0] for row in self.run(USERS, {})]
