"""A user's knowledge graph as a picture: networkx -> pyvis, as one self-contained HTML page
(pyvis' own vis-network inlined: the workbench runs offline)."""
from __future__ import annotations

import json
import re
from html import escape
from typing import Any

import networkx as nx

_REMOTE = re.compile(r'<script[^>]*\ssrc="https?://[^"]*"[^>]*>\s*</script>|<link[^>]*\shref="https?://[^"]*"[^>]*>')
# Canvas text needs a font with CJK glyphs where the system has one (vis-network defaults to arial).
FONTS = "Noto Sans CJK SC, PingFang SC, Microsoft YaHei, Hiragino Sans GB, Arial, sans-serif"
SPEAKER_COLOUR, ENTITY_COLOUR, EDGE_COLOUR = "#d08c3c", "#4f7cac", "#8a96a3"


def graph_html(relations: list[dict[str, Any]], speaker: str = "user", height_px: int = 500) -> str:
    """relations: {source, relationship, target} dicts (get_user_graph's)."""
    speaker = escape(speaker)
    from pyvis.network import Network

    graph = nx.MultiDiGraph()
    for r in relations:
        # Names come from what users said: escaped, so none can close the page's <script>.
        graph.add_edge(escape(r["source"]), escape(r["target"]), label=escape(r["relationship"]))
    net = Network(height=f"{height_px}px", width="100%", directed=True, cdn_resources="in_line")
    for entity in graph.nodes:
        net.add_node(entity, label=entity, title=f"{entity}: {graph.degree(entity)} relations",
                     color=SPEAKER_COLOUR if entity == speaker else ENTITY_COLOUR, shape="dot",
                     size=14 + 3 * min(graph.degree(entity), 6))
    for source, target, data in graph.edges(data=True):
        net.add_edge(source, target, label=data["label"], title=data["label"], color=EDGE_COLOUR, arrows="to")
    net.set_options(json.dumps({
        "physics": {"barnesHut": {"springLength": 140}, "stabilization": {"iterations": 150}},
        "nodes": {"font": {"face": FONTS}},
        "edges": {"font": {"size": 11, "align": "middle", "face": FONTS}, "smooth": {"type": "dynamic"}}}))
    # pyvis' template also links Bootstrap from a CDN (for menus this page does not use): dropped,
    # so the page makes no network request.
    return _REMOTE.sub("", net.generate_html(notebook=False))
