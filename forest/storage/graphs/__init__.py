"""The graph stores the personal knowledge graph is mirrored in (FalkorDB, Neo4j), chosen by the
scheme of `graph_url`; each client library is imported only when its store is opened."""
from __future__ import annotations

import importlib
from urllib.parse import urlsplit

from forest.errors import ConfigError
from forest.storage.graphs.base import GraphStore

# URL scheme -> "module:class" of the store that speaks it.
GRAPH_STORES = {
    "falkordb": "forest.storage.graphs.falkordb:FalkorGraphStore",
    "falkordb+unix": "forest.storage.graphs.falkordb:FalkorGraphStore",
    **{scheme: "forest.storage.graphs.neo4j:Neo4jGraphStore" for scheme in ("bolt", "bolt+s", "neo4j", "neo4j+s")},
}


def open_graph_store(url: str) -> GraphStore:
    """The store `url` names (falkordb://host:port, falkordb+unix:///path.sock, bolt:// or neo4j://);
    a ConfigError for any other scheme."""
    scheme = urlsplit(url).scheme.lower()
    if scheme not in GRAPH_STORES:
        raise ConfigError(f"graph_url must start with one of {', '.join(s + '://' for s in GRAPH_STORES)}, "
                          f"got {scheme + '://' if scheme else 'no scheme'}")
    module, name = GRAPH_STORES[scheme].split(":")
    try:
        return getattr(importlib.import_module(module), name)(url)
    except ImportError as exc:
        raise ConfigError(f"graph_url {scheme}:// needs the {exc.name} package: pip install "
                          "'memory-forest[graph]'") from None
