"""An archive's tree as something to read: vis-network data for the drawing and the outline beside
it (the Forest page's component lays both out and folds them in the browser).

Every node carries what a reader needs at a glance: a summary node its title, a leaf its page and
first words; a tooltip with the summary; its kind, colour and parent. Levels below the first two
start folded, except along what a query lit up (hits, their LCA, the path the agent took) and
down to the selected node, so a 1,000-leaf tree opens as its table of contents. The merge replay
draws the forest as it stood after one merge, with the query's overlay on what existed then.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from forest.records import cite
from forest.tree.outline import HEADING_JOIN
from forest.storage.paths import path_ids
from forest.records import MemoryNode, MergeStep
from forest.text import truncate

if TYPE_CHECKING:
    from forest.recall.agent import AgentState

OPEN_LEVELS = 2        # depth 0 and 1 start unfolded: the document and its sections show their children
LABEL_CHARS = 60       # a summary node's title in the drawing (wrapped to three lines)
LEAF_CHARS = 60        # a leaf is labelled by its page and first words (wrapped to two lines)
OUTLINE_CHARS = 90     # the outline has room for more of them
KINDS = {  # kind: (colour, what the legend calls it)
    "summary": ("#4f7cac", "section or summary"),
    "leaf": ("#5a9e6f", "passage"),
    "caption": ("#d08c3c", "figure or table caption"),
    "hit": ("#d64541", "search hit"),
    "lca": ("#e3b505", "common ancestor of hits"),
    "agent": ("#8e44ad", "the agent's path"),
}
EDGE = "#b8c2cc"


@dataclass(frozen=True)
class Overlay:
    """What a query lit up: raw hits, their lowest common ancestors and the paths from each hit up
    to its LCA; the nodes the agent explored and cited, and the path down through them."""

    hit_ids: frozenset[int] = frozenset()
    lca_ids: frozenset[int] = frozenset()
    path_edges: frozenset[tuple[int, int]] = frozenset()    # (parent, child)
    agent_ids: frozenset[int] = frozenset()
    agent_edges: frozenset[tuple[int, int]] = frozenset()

    @property
    def lit(self) -> frozenset[int]:
        return self.hit_ids | self.lca_ids | self.agent_ids

    def within(self, shown: dict[int, MemoryNode]) -> Overlay:
        """The overlay on the forest as it stood after a merge (`shown`: its nodes). A hit made
        by a later merge lights up the trees it is made of at that point; a common ancestor or an
        agent's node made later is not there yet, so it is left out."""
        present = frozenset(shown)
        later_hits = self.hit_ids - present
        stand_ins = frozenset(n.id for n in shown.values() if n.parent_id not in shown
                              and later_hits.intersection(path_ids(n.path)))
        return Overlay((self.hit_ids & present) | stand_ins, self.lca_ids & present, self.path_edges,
                       self.agent_ids & present, self.agent_edges)


def _edges_below(chain: list[int], stop: int) -> set[tuple[int, int]]:
    return {(chain[i], chain[i + 1]) for i in range(stop, len(chain) - 1)}


def overlay_for(nodes: list[MemoryNode], hit_ids: list[int], lca_ids: list[int],
                agent_ids: list[int] = ()) -> Overlay:
    """Hits with every edge up to the LCA above them (or their root); the agent's explored and cited
    nodes with every edge from the highest of them on each one's chain down to it."""
    by_id = {n.id: n for n in nodes}
    lcas, agent = set(lca_ids) & set(by_id), set(agent_ids) & set(by_id)
    path_edges: set[tuple[int, int]] = set()
    for hit in (h for h in hit_ids if h in by_id):
        chain = path_ids(by_id[hit].path)          # root ... hit
        path_edges |= _edges_below(chain, max((i for i, n in enumerate(chain) if n in lcas), default=0))
    agent_edges: set[tuple[int, int]] = set()
    for node_id in agent:
        chain = path_ids(by_id[node_id].path)
        agent_edges |= _edges_below(chain, min(i for i, n in enumerate(chain) if n in agent))
    return Overlay(frozenset(h for h in hit_ids if h in by_id), frozenset(lcas), frozenset(path_edges),
                   frozenset(agent), frozenset(agent_edges))


def agent_path(state: AgentState) -> list[int]:
    """The nodes an agent's walk went through: the summary nodes it explored, then the passages it
    read (those in its context) and cited."""
    read = [c.node.id for c in state.context if c.node.is_leaf]
    return list(dict.fromkeys([*state.explored, *read, *(c.node.id for c in state.cited)]))


def kind(node: MemoryNode) -> str:
    if not node.is_leaf:
        return "summary"
    return "caption" if node.chunk_kind == "caption" else "leaf"


def node_label(node: MemoryNode) -> str:
    """What a node says at a glance: a summary node its title (of a heading path, the last
    heading: the drawing shows the ones above as its parents), a leaf its page and first words."""
    if not node.is_leaf:
        return truncate((node.title or node.summary).split(HEADING_JOIN)[-1], LABEL_CHARS)
    where = f"p. {node.page_start}" if node.page_start is not None else f"#{node.leaf_index}"
    return truncate(f"{where} · {node.content}", LEAF_CHARS)


def pages(node: MemoryNode) -> str:
    """The node's page range, written as answers cite it."""
    return cite(node.page_start, node.page_end, None)


def vis_data(nodes: list[MemoryNode], upto_merge: int | None = None, overlay: Overlay = Overlay(),
             selected: int | None = None) -> dict[str, Any]:
    """Nodes, edges, legend and options for the Forest page's component. `upto_merge` shows the
    forest after that merge (summary nodes made later are left out, their children become roots);
    `overlay` colours a query's hits, LCAs, paths and the agent's path; the selected node's
    ancestors start unfolded so it is in sight."""
    shown = {n.id: n for n in nodes if n.is_leaf or upto_merge is None or (n.merge_order or 0) <= upto_merge}
    overlay = overlay.within(shown)
    in_sight = overlay.lit | ({selected} if selected in shown else set())
    unfold = {a for node_id in in_sight for a in path_ids(shown[node_id].path)[:-1]}
    out_nodes = []
    for node in shown.values():
        node_kind = kind(node)
        colour = (KINDS["lca"] if node.id in overlay.lca_ids else KINDS["hit"] if node.id in overlay.hit_ids
                  else KINDS["agent"] if node.id in overlay.agent_ids else KINDS[node_kind])[0]
        tip = "\n".join(part for part in (node.title, f"{'Passage' if node.is_leaf else 'Summary'} node {node.id}"
                                          f"{' · ' + node.citation if node.citation else ''}"
                                          f"{'' if node.is_leaf else f' · {node.leaf_count} passages'}",
                                          truncate(node.summary, 400)) if part)
        out_nodes.append({
            "id": node.id, "label": node_label(node), "tip": tip, "kind": node_kind, "color": colour,
            "parent": node.parent_id if node.parent_id in shown else None, "order": node.first_leaf or 0,
            "depth": node.depth, "pages": pages(node), "leaves": node.leaf_count,
            "text": node.title or truncate(node.content if node.is_leaf else node.summary, OUTLINE_CHARS),
            "open": not node.is_leaf and (node.depth < OPEN_LEVELS or node.id in unfold),
            "lit": node.id in overlay.lit,
        })
    edges = [{"from": n.parent_id, "to": n.id,
              "color": KINDS["agent"][0] if (n.parent_id, n.id) in overlay.agent_edges
              else KINDS["hit"][0] if (n.parent_id, n.id) in overlay.path_edges else EDGE,
              "width": 4 if (n.parent_id, n.id) in overlay.agent_edges | overlay.path_edges else 1}
             for n in shown.values() if n.parent_id in shown]
    options = {"physics": {"enabled": False}, "interaction": {"hover": True},
               "edges": {"smooth": {"type": "cubicBezier", "forceDirection": "horizontal", "roundness": 0.5}}}
    legend = [{"kind": k, "colour": colour, "label": label} for k, (colour, label) in KINDS.items()]
    # changes whenever the overlay does (the drawing is rebuilt then, not on a selection)
    key = f"{len(shown)}:{upto_merge}:{hash(overlay)}"
    return {"nodes": out_nodes, "edges": edges, "options": options, "legend": legend, "selected": selected,
            "key": key}


def describe_merge(step: MergeStep, total: int, nodes: list[MemoryNode]) -> str:
    """What one merge did, in words: the two neighbouring pieces it joined (how many passages, on
    which pages), how alike they were, and the node it made or, when the tree folded that node
    into a wider one, the node it is part of."""
    leaves = {n.leaf_index: n for n in nodes if n.is_leaf}

    def piece(first: int, last: int) -> str:
        count, start, end = last - first + 1, leaves.get(first), leaves.get(last)
        where = cite(start.page_start, end.page_end, None) if start and end else ""
        return f"{count} passage{'s' if count > 1 else ''}" + (f" on {where}" if where else "")

    alike = "archives joined" if step.similarity is None else f"similarity {step.similarity:.2f}"
    text = (f"Merge {step.merge_order} of {total} joined {piece(step.first_leaf, step.split_leaf - 1)} and "
            f"the next {piece(step.split_leaf, step.last_leaf)} ({alike})")
    made = next((n for n in nodes if step.node_id is not None and n.id == step.node_id), None)
    if made is not None:
        return f"{text} and made “{made.name}”."
    wider = min((n for n in nodes if not n.is_leaf and n.first_leaf is not None and n.last_leaf is not None
                 and n.first_leaf <= step.first_leaf and step.last_leaf <= n.last_leaf),
                key=lambda n: n.leaf_count, default=None)
    if wider is None:
        return f"{text}."
    return (f"{text}: no node of its own, the tree keeps it inside “{wider.name}”, made at merge "
            f"{wider.merge_order}, so the drawing does not change.")


def describe_overlay(nodes: list[MemoryNode], overlay: Overlay, upto_merge: int | None = None) -> str:
    """The overlay's caption: how many hits, and what their common ancestor means — a section
    that holds them, or the whole document when they are spread over it — or that it is made by a
    later merge than the one the replay shows."""
    by_id = {n.id: n for n in nodes}
    later = sum(1 for i in overlay.hit_ids if upto_merge is not None and (by_id[i].merge_order or 0) > upto_merge)
    hits = len(overlay.hit_ids)
    parts = [f"{hits} hit{'s' if hits != 1 else ''} (red)"
             + (f", {later} of them made by later merges: lit through their parts" if later else "")]
    for lca in sorted(overlay.lca_ids, key=lambda i: by_id[i].first_leaf or 0):
        node = by_id[lca]
        if upto_merge is not None and (node.merge_order or 0) > upto_merge:
            parts.append(f"their common ancestor, “{node.name}”, is only made at merge {node.merge_order}")
        elif node.parent_id is None:
            parts.append(f"their common ancestor is the root, the whole of “{node.name}” (gold): the hits are "
                         "spread over the document, not gathered in one section")
        else:
            parts.append(f"their common ancestor (gold): “{node.name}”, {pages(node)}")
    if not overlay.lca_ids and hits == 1:
        parts.append("no common ancestor: a single hit in this document")
    return "; ".join(parts)


def _pyvis_lib() -> Path:
    """pyvis' copy of vis-network, found without importing pyvis (and networkx with it)."""
    return Path(importlib.util.find_spec("pyvis").submodule_search_locations[0]) / "templates" / "lib" / "vis-9.1.2"


@cache   # read once per process: every run of the Forest page mounts it
def vis_network_js() -> str:
    """The vis-network library pyvis ships (no CDN: the workbench runs offline)."""
    return (_pyvis_lib() / "vis-network.min.js").read_text(encoding="utf-8")
