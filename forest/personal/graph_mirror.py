"""The knowledge graph mirrored in a Cypher store (FalkorDB, Neo4j: forest.storage.graphs), kept in
step with SQL, which stays the truth.

A write that adds, supersedes or drops facts marks their keys (PersonalStore.add_triples,
drop_facts; clear marks the whole user); before its transaction commits, under the user's write
lock, the mirror reads those facts as the transaction left them and makes the graph say the same:
the live and the closed ones upserted (a superseded fact's edge carries its valid_to), the gone
ones removed. Reading the state rather than replaying changes
makes every sync idempotent: a key marked by a write that rolled back is simply synced again.

The graph store down: the SQL write goes on and commits (it is the truth); the keys stay marked
and are synced by the user's next write, once the store answers (it is tried again at most every
RETRY_SECONDS); the outage is logged once. Until then the user's graph reads come from SQL. Drift
a process could not repair (it ended, or the user wrote no more) is found and repaired per user by
`forest doctor --repair` (drift, repair).
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from forest.storage.graphs.base import GraphEdge, GraphStore, GraphStoreError

log = logging.getLogger("forest.personal.graph_mirror")

RETRY_SECONDS = 5.0
Key = tuple[str, str, str]
# The user's facts as SQL holds them (those with these keys; None: all).
EdgeReader = Callable[[str, list[Key] | None], list[GraphEdge]]


class GraphMirror:
    def __init__(self, graph: GraphStore, label: str, clock: Callable[[], float] = time.monotonic) -> None:
        """`label`: the store as it may be logged (no password)."""
        self.graph = graph
        self.label = label
        self._clock = clock
        self._pending: dict[str, set[Key] | None] = {}   # user -> keys to sync; None: the whole user
        self._lock = threading.Lock()
        self._down_since: float | None = None

    # --- the write path ---------------------------------------------------------------------
    def touch(self, user_id: str, keys: list[Key]) -> None:
        with self._lock:
            if self._pending.get(user_id, set()) is not None:
                self._pending.setdefault(user_id, set()).update(keys)

    def touch_user(self, user_id: str) -> None:
        with self._lock:
            self._pending[user_id] = None

    def sync(self, user_id: str, read: EdgeReader) -> bool:
        """Make the graph say what SQL says of the user's marked facts; False (the keys stay
        marked) when the store is down. Never raises for the store's failure: the write goes on."""
        with self._lock:
            if user_id not in self._pending:
                return True
            if self._down_since is not None and self._clock() - self._down_since < RETRY_SECONDS:
                return False
            keys = self._pending.pop(user_id)
        try:
            self._apply(user_id, read, None if keys is None else sorted(keys))
        except GraphStoreError as exc:
            with self._lock:
                held = self._pending.get(user_id, set())
                self._pending[user_id] = None if keys is None or held is None else held | keys
                if self._down_since is None:
                    log.warning("the graph mirror %s failed: writes go on in SQL (the truth); the mirror catches up "
                                "with each user's next write once it answers, or with `forest doctor --repair`: %s",
                                self.label, exc)
                self._down_since = self._clock()
            return False
        with self._lock:
            if self._down_since is not None:
                log.warning("the graph mirror %s answers again", self.label)
                self._down_since = None
        return True

    def _apply(self, user_id: str, read: EdgeReader, keys: list[Key] | None) -> None:
        live = read(user_id, keys)
        marked = {e.key for e in self.graph.edges(user_id)} if keys is None else set(keys)
        self.graph.upsert(user_id, live)
        self.graph.remove(user_id, sorted(marked - {e.key for e in live}))

    # --- reads ------------------------------------------------------------------------------
    def answers_for(self, user_id: str) -> bool:
        """Whether the graph may answer for the user: it is up and holds all the user's writes."""
        with self._lock:
            return self._down_since is None and user_id not in self._pending

    def read(self, user_id: str, what: Callable[[GraphStore], Any]) -> Any | None:
        """`what` asked of the graph when it answers for the user; None (ask SQL) otherwise."""
        if not self.answers_for(user_id):
            return None
        try:
            return what(self.graph)
        except GraphStoreError as exc:
            with self._lock:
                if self._down_since is None:
                    log.warning("the graph mirror %s failed: graph reads come from SQL meanwhile: %s", self.label, exc)
                self._down_since = self._clock()
            return None

    # --- doctor -----------------------------------------------------------------------------
    def drift(self, users: list[str], read: EdgeReader) -> dict[str, dict[str, int]]:
        """Per user whose graph differs from SQL: edges missing from the graph, extra in it, and
        stale (another spelling, memory ids, valid_from or valid_to than the SQL row's)."""
        found = {}
        for user_id in sorted(set(users) | set(self.graph.users())):
            truth = {e.key: e for e in read(user_id, None)}
            mirrored = {e.key: e for e in self.graph.edges(user_id)}
            counts = {"missing": len(truth.keys() - mirrored.keys()), "extra": len(mirrored.keys() - truth.keys()),
                      "stale": sum(truth[k] != mirrored[k] for k in truth.keys() & mirrored.keys())}
            if any(counts.values()):
                found[user_id] = counts
        return found

    def repair(self, user_id: str, read: EdgeReader) -> None:
        """The user's graph made equal to SQL (the marks of this process's writes are then spent)."""
        with self._lock:
            self._pending.pop(user_id, None)
        self._apply(user_id, read, None)
        with self._lock:
            self._down_since = None  # it answered: reads may come from it again

    def close(self) -> None:
        self.graph.close()
