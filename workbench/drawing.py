"""The tree drawing (vis-network, pyvis' bundled copy: nothing fetched) beside its outline, for the
Forest page and the Ask page's step-through: one component, so both draw a tree the same way."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import streamlit as st

from forest.records import MemoryNode
from forest.views.tree_view import Overlay, vis_data, vis_network_js

HERE = Path(__file__).parent
tree_component = st.components.v2.component(
    "memory_forest_tree", js=vis_network_js() + (HERE / "forest_tree.js").read_text(encoding="utf-8"),
    css=(HERE / "forest_tree.css").read_text(encoding="utf-8"), isolate_styles=False)


def draw_tree(nodes: list[MemoryNode], key: str, overlay: Overlay = Overlay(), selected: int | None = None,
              on_select: Callable[[int], None] | None = None, upto: int | None = None) -> None:
    """The archive's tree (`nodes`) with `overlay` lit and `selected` in view; a click on a node
    calls `on_select` with its id."""
    by_id = {n.id for n in nodes}

    def clicked() -> None:
        chosen = st.session_state[key].get("selected")
        if on_select is not None and chosen in by_id:
            on_select(chosen)

    tree_component(data=vis_data(nodes, upto, overlay, selected), key=key, on_selected_change=clicked)
