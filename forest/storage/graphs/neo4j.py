"""Neo4j through the official `neo4j` driver: bolt://user:password@host:7687 or neo4j://... (the
`graph` extra). It runs base.py's queries, the ones tested against FalkorDB; no Neo4j server is
installable where this was written, so this class is untested against one (docs/server-stack.md)."""
from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from forest.storage.graphs.base import GraphStore, GraphStoreError

SCHEMA = (
    # Composite uniqueness (Neo4j 5+, Community included) is backed by an index of its own.
    "CREATE CONSTRAINT forest_entity_key IF NOT EXISTS FOR (e:Entity) REQUIRE (e.user_id, e.name) IS UNIQUE",
    "CREATE INDEX forest_relation_user IF NOT EXISTS FOR ()-[r:RELATION]-() ON (r.user_id)",
)
CONNECT_TIMEOUT_SECONDS = 2.0


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """The URL without user:password, and those as the driver's basic auth."""
    parts = urlsplit(url)
    if parts.username is None:
        return url, None
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=host)), (unquote(parts.username), unquote(parts.password or ""))


class Neo4jGraphStore(GraphStore):
    def __init__(self, url: str, driver: Any = None) -> None:
        """`driver`: a ready driver (anything with the driver's execute_query), else one for `url`."""
        from neo4j.exceptions import DriverError, Neo4jError

        self._errors = (DriverError, Neo4jError, OSError)
        if driver is None:
            from neo4j import GraphDatabase

            address, auth = split_credentials(url)
            driver = GraphDatabase.driver(address, auth=auth, connection_timeout=CONNECT_TIMEOUT_SECONDS)
        self._driver = driver
        self._schema_made = False

    def run(self, query: str, parameters: dict[str, Any]) -> list[list[Any]]:
        if not self._schema_made:
            self.ensure_schema()
        return self._execute(query, parameters)

    def _execute(self, query: str, parameters: dict[str, Any]) -> list[list[Any]]:
        try:
            records, _, _ = self._driver.execute_query(query, parameters)
        except self._errors as exc:
            raise GraphStoreError(f"Neo4j: {type(exc).__name__}: {exc}") from exc
        return [list(record.values()) for record in records]

    def ensure_schema(self) -> None:
        for statement in SCHEMA:
            self._execute(statement, {})
        self._schema_made = True

    def close(self) -> None:
        self._driver.close()
