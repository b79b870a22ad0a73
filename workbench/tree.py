"""Forest: an archive's tree to read — its outline beside the drawing (vis-network, pyvis' bundled
copy: nothing fetched), titles on every node, levels below the first two folded. Click a node to
see its details and open its page; replay the merges; overlay a query's hits, their LCA, the
paths between and the path the agent took."""
import streamlit as st

from forest import ForestError
from forest.markdown_safety import literal, safe_markdown
from forest.views.tree_view import Overlay, agent_path, describe_merge, describe_overlay, overlay_for
from workbench import place
from workbench.drawing import draw_tree
from workbench.reading import show_source
from workbench.shared import get_forest, page_start
MERGE_SAID = ("The tree was built bottom-up, by merges: each joined the two most alike neighbouring trees under a new "
              "node. The drawing shows the forest after the chosen merge; nodes made later are not there yet.")
MERGES_FOLDED = ("Merges run inside each section first, then join the sections. The tree keeps a few wide levels, so "
                 "most merges are folded into a wider node and leave the drawing as it was.")

forest = get_forest()
model_id = page_start(forest, "Forest")
archive_col, query_col = st.columns([2, 3])
archives = {a.id: a for a in forest.archives(model_id)}
wanted = place.get_id("archive")
if wanted is None and archives:
    wanted = next(iter(archives))
    place.put("archive", wanted)
if wanted is not None and wanted not in archives:
    st.warning(f"model_id {model_id!r} has no archive {wanted}: choose one of its archives.")
place.show("tree_archive", wanted if wanted in archives else None)


def archive_picked() -> None:
    place.put("archive", st.session_state["tree_archive"])
    place.put("node", None)   # the new archive opens at its root


archive_id = archive_col.selectbox("Archive", list(archives), index=None, key="tree_archive", on_change=archive_picked,
                                   placeholder="Choose an archive",
                                   format_func=lambda i: f"{i}: {archives[i].name} ({archives[i].leaves} passages)")
if archive_id is None:
    st.stop()
archive = archives[archive_id]
try:
    nodes = forest.tree(model_id, archive.id)
    history = forest.merge_history(model_id, archive.id)
except ForestError as exc:
    st.error(literal(str(exc)))
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

# The Ask page's run, when it asked this question of this model_id: its path is drawn too.
run = st.session_state.get("ask_run")
place.show("tree_query", place.get("q") or "")
query = query_col.text_input("Query overlay", key="tree_query", on_change=place.moved("q", "tree_query", str.strip),
                             placeholder="a question: lights up its hits, their LCA and the agent's path")
asked = run["state"] if run and run["model_id"] == model_id and run["state"].question == query.strip() else None
overlay = Overlay()
if query.strip():
    try:
        # one search: the hits and the common ancestor they collapse to (retrieve's representatives)
        mine = [r for r in forest.retrieve(model_id, query) if r.node.archive_id == archive.id]
    except ForestError as exc:
        st.error(literal(str(exc)))
        st.stop()
    walked = agent_path(asked) if asked is not None else []
    overlay = overlay_for(nodes, [h.node.id for r in mine for h in r.hits],
                          [r.node.id for r in mine if r.kind == "lca"], walked)
    query_col.caption(safe_markdown(describe_overlay(nodes, overlay, upto))
                      + ("; the agent's path from the Ask page (purple)" if walked else
                         "; ask it on the Ask page to see the agent's path"))


@st.dialog("Source", width="large")
def source_dialog(node_id: int) -> None:
    show_source(forest, model_id, node_id, key="tree", in_dialog=True)


# The node shown is the place's: the drawing's clicks and the Node box both move it.
choices = [n.id for n in sorted(nodes, key=lambda n: (n.depth, n.first_leaf or 0))]
selected = place.get_id("node")
if selected is not None and selected not in by_id:
    st.warning(f"Archive {archive.id} has no node {selected}: showing its root.")
if selected not in by_id:
    selected = choices[0]
    place.put("node", selected)


drawing, details = st.columns([2.5, 1.2])
with drawing:
    draw_tree(nodes, f"tree-{archive.id}", overlay, selected, lambda chosen: place.put("node", chosen), upto)
    st.caption("Click a node (in the outline or the drawing) to see it here; double-click a box, or use the "
               "outline's arrows, to fold or unfold; hover for a summary; drag to pan, scroll to zoom; drag the "
               "outline's right edge to widen it.")

with details:
    place.show("tree_node", selected)
    st.selectbox("Node", choices, key="tree_node", on_change=place.moved("node", "tree_node"),
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
