"""Forest: an archive's tree drawn with vis-network (pyvis' bundled copy, no CDN). Click a node to
inspect it; replay the merges; overlay a query's hits, their LCA and the paths between."""
import streamlit as st

from forest import ForestError
from forest.tree_view import Overlay, overlay_for, vis_data, vis_network_js
from pages.shared import get_forest, page_start

# The drawing runs in the page (not an iframe), so a click comes back to Python as a trigger.
TREE_JS = vis_network_js() + """
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let holder = parentElement.querySelector("#forest-tree");
  if (!holder) {
    holder = document.createElement("div");
    holder.id = "forest-tree";
    holder.style.height = "620px";
    holder.style.border = "1px solid #ddd";
    parentElement.appendChild(holder);
  }
  const nodes = new vis.DataSet(data.nodes);
  const edges = new vis.DataSet(data.edges);
  const network = new vis.Network(holder, { nodes, edges }, data.options);
  window.memoryForestNetwork = network;  // for browser automation (tests, screenshots)
  network.once("afterDrawing", () => { holder.dataset.drawn = String(data.nodes.length); });
  network.on("click", (event) => {
    if (event.nodes.length) setTriggerValue("selected", event.nodes[0]);
  });
  // Double click folds or unfolds the subtree under a summary node.
  network.on("doubleClick", (event) => {
    if (!event.nodes.length) return;
    const below = [];
    const stack = network.getConnectedNodes(event.nodes[0], "to");
    while (stack.length) {
      const id = stack.pop();
      below.push(id);
      stack.push(...network.getConnectedNodes(id, "to"));
    }
    const hide = below.length && !nodes.get(below[0]).hidden;
    nodes.update(below.map((id) => ({ id, hidden: hide })));
  });
  return () => network.destroy();
}
"""
tree_component = st.components.v2.component("memory_forest_tree", js=TREE_JS, isolate_styles=False)

forest = get_forest()
model_id = page_start(forest, "Forest")
archives = {f"{a.id}: {a.name} ({a.nodes} nodes)": a for a in forest.archives(model_id)}
archive = archives[st.selectbox("Archive", list(archives))]
try:
    nodes = forest.tree(model_id, archive.id)
except ForestError as exc:
    st.error(str(exc))
    st.stop()
by_id = {n.id: n for n in nodes}
merges = sorted(n.merge_order for n in nodes if n.merge_order)

replay, query_col = st.columns(2)
with replay:
    upto = st.slider("Merge replay: the forest after merge", 0, merges[-1] if merges else 0,
                     merges[-1] if merges else 0, disabled=not merges) if merges else None
    merge_node = next((n for n in nodes if n.merge_order == upto), None)
    if merge_node is not None:
        st.caption(f"merge {upto}: node {merge_node.id} joined its two children at similarity "
                   f"{merge_node.merge_similarity if merge_node.merge_similarity is not None else 'n/a (joined archives)'}")
with query_col:
    query = st.text_input("Query overlay", placeholder="type a question to light up hits and their LCA")
overlay = None
if query.strip():
    try:
        hits = [h for h in forest.search(model_id, query) if h.node.archive_id == archive.id]
        lcas = [r.node.id for r in forest.retrieve(model_id, query) if r.kind == "lca" and r.node.archive_id == archive.id]
    except ForestError as exc:
        st.error(str(exc))
        st.stop()
    overlay = overlay_for(nodes, [h.node.id for h in hits], lcas)
    st.caption(f"{len(hits)} hits in this archive (red), LCA {', '.join(map(str, lcas)) or 'none'} (gold), "
               "paths from hits to it in red")

data = vis_data(nodes, upto, overlay or Overlay())
result = tree_component(data=data, key=f"tree-{archive.id}", on_selected_change=lambda: None)
st.caption("Click a node to inspect it; double-click a summary node to fold or unfold its subtree; "
           "hover for its summary.")

clicked = result.selected if result is not None and getattr(result, "selected", None) in by_id else None
choices = [n.id for n in sorted(nodes, key=lambda n: (n.depth, n.first_leaf or 0))]
if clicked is not None:
    st.session_state["tree_node"] = clicked
selected = st.selectbox("Node", choices, key="tree_node",
                        format_func=lambda i: f"{i} · {by_id[i].title or by_id[i].node_type} · {by_id[i].summary[:70]}")
node = by_id[selected]
st.subheader(node.title or f"Node {node.id} ({node.node_type})")
st.markdown(f"**Summary** ({node.summary_source}): {node.summary}")
meta = {"depth": node.depth, "path": node.path, "pages": node.citation or "-", "leaves":
        f"{node.first_leaf}-{node.last_leaf}", "merge": node.merge_order, "similarity": node.merge_similarity}
st.dataframe([meta], hide_index=True)
children = [by_id[i] for i in by_id if by_id[i].parent_id == node.id]
if children:
    st.markdown("**Children**")
    st.dataframe([{"id": c.id, "type": c.node_type, "summary": c.summary, "citation": c.citation}
                  for c in sorted(children, key=lambda c: c.first_leaf or 0)], hide_index=True)
with st.expander("Content", expanded=node.is_leaf):
    st.text(node.content[:20000])
