"""Forest: an archive's tree to read — its outline beside the drawing (vis-network, pyvis' bundled
copy: nothing fetched), titles on every node, levels below the first two folded. Click a node to
see its details and open its page; replay the merges; overlay a query's hits, their LCA, the
paths between and the path the agent took."""
from pathlib import Path

import streamlit as st

from forest import ForestError
from forest.text import safe_markdown
from forest.views.tree_view import Overlay, describe_merge, describe_overlay, overlay_for, vis_data, vis_network_js
from workbench.reading import show_source
from workbench.shared import get_forest, page_start

HERE = Path(__file__).parent
tree_component = st.components.v2.component(
    "memory_forest_tree", js=vis_network_js() + (HERE / "forest_tree.js").read_text(encoding="utf-8"),
    css=(HERE / "forest_tree.css").read_text(encoding="utf-8"), isolate_styles=False)
MERGE_SAID = ("The tree was built bottom-up, by merges: each joined the two most alike neighbouring trees under a new "
              "node. The drawing shows the forest after the chosen merge; nodes made later are not there yet.")
MERGES_FOLDED = ("Merges run inside each section first, then join the sections. The tree keeps a few wide levels, so "
                 "most merges are folded into a wider node and leave the drawing as it was.")

forest = get_forest()
model_id = page_start(forest, "Forest")
archive_col, query_col = st.columns([2, 3])
archives = {f"{a.id}: {a.name} ({a.leaves} passages)": a for a in forest.archives(model_id)}
archive = archives[archive_col.selectbox("Archive", list(archives))]
try:
    nodes = forest.tree(model_id, archive.id)
    history = forest.merge_history(model_id, archive.id)
except ForestError as exc:
    st.error(str(exc))
    st.stop()
by_id = {n.id: n for n in nodes}

upto = None
if history:
    last = history[-1].merge_order
    upto = st.slider("Merge replay: the forest after merge", 0, last, last, help=f"{MERGE_SAID} {MERGES_FOLDED}")
    step = next((s for s in history if s.merge_order == upto), None)
    said = describe_merge(step, last, nodes) if step is not None else "Before the first merge: every passage is a tree " \
        "of its own."
    st.caption(f"{MERGE_SAID}  \n**{safe_markdown(said)}**")

agent = st.session_state.get("agent")   # the Ask page's run, if it asked about this forest
asked = agent.question if agent is not None and agent.model_id == model_id else ""
query = query_col.text_input("Query overlay", value=asked,
                             placeholder="a question: lights up its hits, their LCA and the agent's path")
overlay = Overlay()
if query.strip():
    try:
        # one search: the hits and the common ancestor they collapse to (retrieve's representatives)
        mine = [r for r in forest.retrieve(model_id, query) if r.node.archive_id == archive.id]
    except ForestError as exc:
        st.error(str(exc))
        st.stop()
    walked = [*agent.explored, *(c.node.id for c in agent.cited)] if query == asked else []
    overlay = overlay_for(nodes, [h.node.id for r in mine for h in r.hits],
                          [r.node.id for r in mine if r.kind == "lca"], walked)
    query_col.caption(safe_markdown(describe_overlay(nodes, overlay, upto))
                      + ("; the agent's path from the Ask page (purple)" if walked else
                         "; ask it on the Ask page to see the agent's path"))


@st.dialog("Source", width="large")
def source_dialog(node_id: int) -> None:
    show_source(forest, model_id, node_id, key="tree")


# The selection lives under its own key: the drawing's clicks and the Node box both write it, and it
# outlasts a visit to another page (Streamlit drops a widget's state when the widget is not drawn).
choices = [n.id for n in sorted(nodes, key=lambda n: (n.depth, n.first_leaf or 0))]
if st.session_state.get("tree_selected") not in by_id:
    st.session_state["tree_selected"] = choices[0]
st.session_state["tree_node"] = st.session_state["tree_selected"]


def picked_in_drawing() -> None:
    chosen = st.session_state[f"tree-{archive.id}"].get("selected")
    if chosen in by_id:
        st.session_state["tree_selected"] = chosen


def picked_in_box() -> None:
    st.session_state["tree_selected"] = st.session_state["tree_node"]


drawing, details = st.columns([3.4, 1])
with drawing:
    tree_component(data=vis_data(nodes, upto, overlay, st.session_state["tree_selected"]), key=f"tree-{archive.id}",
                   on_selected_change=picked_in_drawing)
    st.caption("Click a node (in the outline or the drawing) to see it here; double-click a box, or use the "
               "outline's arrows, to fold or unfold; hover for a summary; drag to pan, scroll to zoom; drag the "
               "outline's right edge to widen it.")

with details:
    selected = st.selectbox("Node", choices, key="tree_node", on_change=picked_in_box,
                            format_func=lambda i: " · ".join(filter(None, (by_id[i].name, by_id[i].citation))))
    node = by_id[selected]
    with st.container(key="tree-detail", border=True):
        st.subheader(safe_markdown(node.name), anchor=False)
        st.caption(safe_markdown(" · ".join(part for part in (
            node.citation, f"{node.leaf_count} passages" if not node.is_leaf else node.chunk_kind,
            f"depth {node.depth}", f"merged at {node.merge_similarity:.2f}" if node.merge_similarity is not None else "",
            f"node {node.id}") if part)))
        if upto is not None and not node.is_leaf and (node.merge_order or 0) > upto:
            st.info(f"Made by merge {node.merge_order}: not in the drawing at merge {upto}.")
        if node.is_leaf:
            st.text(node.content[:1200] + ("…" if len(node.content) > 1200 else ""))
        else:
            st.markdown(safe_markdown(f"{node.summary}  \n*summary by {node.summary_source}*"))
        if st.button("Show on the page", key="tree-open-source"):
            source_dialog(node.id)
        children = sorted((n for n in nodes if n.parent_id == node.id), key=lambda c: c.first_leaf or 0)
        if children:
            st.dataframe([{"id": c.id, "title": c.title or c.content[:60], "pages": c.citation}
                          for c in children], hide_index=True, height=min(36 * (len(children) + 1), 260))
