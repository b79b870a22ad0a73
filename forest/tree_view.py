"""An archive's tree as a picture: networkx graph -> pyvis Network -> vis-network data.

Positions are computed here, not by a physics simulation: leaves in document order along the
bottom of their depth, each summary node centred over its children, depth downwards. That keeps
a 500-node tree readable and stable between redraws (merge replay, query overlays).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx

from forest.paths import path_ids
from forest.records import MemoryNode
from forest.text import truncate

X_STEP, Y_STEP = 60, 110
COLOURS = {"summary": "#4f7cac", "leaf": "#5a9e6f", "caption": "#d08c3c", "hit": "#d64541", "lca": "#e3b505",
           "path": "#d64541", "edge": "#b8c2cc"}


@dataclass(frozen=True)
class Overlay:
    """What a query lit up: raw hits, their lowest common ancestors, the paths between."""

    hit_ids: frozenset[int] = frozenset()
    lca_ids: frozenset[int] = frozenset()
    path_edges: frozenset[tuple[int, int]] = frozenset()  # (parent, child)


def overlay_for(nodes: list[MemoryNode], hit_ids: list[int], lca_ids: list[int]) -> Overlay:
    """Every edge on the way from each hit up to the LCA above it (or to its root)."""
    by_id = {n.id: n for n in nodes}
    lcas = set(lca_ids)
    edges = set()
    for hit in hit_ids:
        if hit not in by_id:
            continue
        chain = path_ids(by_id[hit].path)          # root ... hit
        stop = max((i for i, node_id in enumerate(chain) if node_id in lcas), default=0)
        edges.update((chain[i], chain[i + 1]) for i in range(stop, len(chain) - 1))
    return Overlay(frozenset(h for h in hit_ids if h in by_id), frozenset(lcas & set(by_id)), frozenset(edges))


def tree_graph(nodes: list[MemoryNode]) -> nx.DiGraph:
    graph = nx.DiGraph()
    for node in nodes:
        graph.add_node(node.id, node=node)
    for node in nodes:
        if node.parent_id is not None and node.parent_id in graph:
            graph.add_edge(node.parent_id, node.id)
    return graph


def positions(graph: nx.DiGraph) -> dict[int, tuple[float, float]]:
    place: dict[int, tuple[float, float]] = {}
    leaves = sorted((n for n in graph if graph.out_degree(n) == 0), key=lambda n: graph.nodes[n]["node"].first_leaf)
    for order, leaf in enumerate(leaves):
        place[leaf] = (order * X_STEP, graph.nodes[leaf]["node"].depth * Y_STEP)
    for node_id in sorted(graph, key=lambda n: -graph.nodes[n]["node"].depth):  # deepest first
        if node_id not in place:
            xs = [place[c][0] for c in graph.successors(node_id) if c in place]
            place[node_id] = (sum(xs) / len(xs) if xs else 0.0, graph.nodes[node_id]["node"].depth * Y_STEP)
    return place


def vis_data(nodes: list[MemoryNode], upto_merge: int | None = None, overlay: Overlay = Overlay()) -> dict[str, Any]:
    """Nodes, edges and options for vis-network. `upto_merge` shows the forest after that merge
    (summary nodes made later are left out); `overlay` colours a query's hits, LCAs and paths."""
    from pyvis.network import Network

    graph = tree_graph(nodes)
    place = positions(graph)
    shown = {n.id for n in nodes if n.is_leaf or upto_merge is None or (n.merge_order or 0) <= upto_merge}
    net = Network(directed=True, cdn_resources="in_line")
    for node in nodes:
        if node.id not in shown:
            continue
        x, y = place[node.id]
        kind = "summary" if not node.is_leaf else ("caption" if node.chunk_kind == "caption" else "leaf")
        colour = COLOURS["lca"] if node.id in overlay.lca_ids else COLOURS["hit"] if node.id in overlay.hit_ids \
            else COLOURS[kind]
        label = node_label(node)
        title = "\n".join(x for x in (node.title, f"{node.node_type} {node.id}", node.citation, node.summary) if x)
        net.add_node(node.id, label=label, title=title, x=x, y=y, color=colour,
                     shape="dot" if node.is_leaf else "box", size=10 if node.is_leaf else 16,
                     borderWidth=4 if node.id in overlay.hit_ids | overlay.lca_ids else 1)
    for parent, child in graph.edges:
        if parent in shown and child in shown:
            on_path = (parent, child) in overlay.path_edges
            net.add_edge(parent, child, color=COLOURS["path"] if on_path else COLOURS["edge"],
                         width=4 if on_path else 1)
    options = {"physics": {"enabled": False}, "interaction": {"hover": True, "tooltipDelay": 120},
               "edges": {"arrows": {"to": {"enabled": False}}, "smooth": False},
               "nodes": {"font": {"size": 11, "multi": False}}}
    return {"nodes": net.nodes, "edges": net.edges, "options": options}


def node_label(node: MemoryNode, width: int = 28) -> str:
    """What a node says at a glance: a summary node its title, a leaf its page (or number)."""
    if node.is_leaf:
        return f"p. {node.page_start}" if node.page_start is not None else f"#{node.leaf_index}"
    return truncate(node.title or node.summary, width)


def vis_network_js() -> str:
    """The vis-network library pyvis ships (no CDN: the workbench runs offline)."""
    import pyvis

    return (Path(pyvis.__file__).parent / "templates" / "lib" / "vis-9.1.2" / "vis-network.min.js").read_text(
        encoding="utf-8")
