"""FalkorDB through the `falkordb` client: falkordb://[:password@]host:port or
falkordb+unix:///path/to/socket.sock (the `graph` extra)."""
from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from forest.storage.graphs.base import GRAPH_NAME, GraphStore, GraphStoreError

# A graph store that does not answer must not hold up a write for long: the mirror is repaired later.
CONNECT_TIMEOUT_SECONDS = 2.0
QUERY_TIMEOUT_SECONDS = 10.0


def redis_url(url: str) -> str:
    """The Redis URL the client connects to: falkordb:// is redis://, falkordb+unix:// is unix://."""
    parts = urlsplit(url)
    return ("unix://" if parts.scheme.lower() == "falkordb+unix" else "redis://") + url.split("://", 1)[1]


class FalkorGraphStore(GraphStore):
    def __init__(self, url: str) -> None:
        from falkordb import FalkorDB
        from redis.exceptions import RedisError

        self._errors = (RedisError, OSError)
        self._client = FalkorDB.from_url(redis_url(url), socket_connect_timeout=CONNECT_TIMEOUT_SECONDS,
                                         socket_timeout=QUERY_TIMEOUT_SECONDS)
        self._graph = self._client.select_graph(GRAPH_NAME)
        self._schema_made = False

    def run(self, query: str, parameters: dict[str, Any]) -> list[list[Any]]:
        if not self._schema_made:
            self.ensure_schema()
        try:
            return self._graph.query(query, parameters).result_set
        except self._errors as exc:
            raise GraphStoreError(f"FalkorDB: {type(exc).__name__}: {exc}") from exc

    def ensure_schema(self) -> None:
        """FalkorDB's own syntax: a range index on (user_id, name), then a unique constraint over it
        (which needs the index); either may exist already."""
        for make in (self._graph.create_node_range_index, self._graph.create_node_unique_constraint):
            try:
                make("Entity", "user_id", "name")
            except self._errors as exc:
                if "already" not in str(exc).lower():
                    raise GraphStoreError(f"FalkorDB: {type(exc).__name__}: {exc}") from exc
        self._schema_made = True

    def close(self) -> None:
        self._client.close()
