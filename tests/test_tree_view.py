"""forest.tree_view: what the Forest page draws — labels a person can read, levels folded below the
first two except down to what a query lit up or the selection, merge replay, overlay colours."""
from forest.records import LEAF, SUMMARY, MemoryNode
from forest.tree_view import KINDS, overlay_for, vis_data, vis_network_css, vis_network_js


def node(i, parent, path, depth, kind, first, last, merge=None, **fields) -> MemoryNode:
    return MemoryNode(i, 1, parent, path, depth, kind, fields.pop("content", f"text of passage {i}"),
                      f"summary {i}", "test", first if kind == LEAF else None, None, first, last, merge,
                      0.5 if merge else None, page_start=first + 1, page_end=last + 1, **fields)


#            9 Paper (depth 0)
#     8 Method (1)          3 leaf (1)
#   7 Training (2)
#  1 leaf  2 leaf (3)
NODES = [node(9, None, "9/", 0, SUMMARY, 0, 2, 3, title="A Paper"),
         node(8, 9, "9/8/", 1, SUMMARY, 0, 1, 2, title="2 Method and a very long heading that will not fit in a box"),
         node(7, 8, "9/8/7/", 2, SUMMARY, 0, 1, 1, title="2.1 Training"),
         node(1, 7, "9/8/7/1/", 3, LEAF, 0, 0, content="We train   the network for forty epochs with Adam."),
         node(2, 7, "9/8/7/2/", 3, LEAF, 1, 1, chunk_kind="caption", content="Figure 2: Loss."),
         node(3, 9, "9/3/", 1, LEAF, 2, 2)]


def shown(data) -> dict:
    return {n["id"]: n for n in data["nodes"]}


def test_nodes_say_what_they_are_and_levels_below_two_start_folded():
    data = vis_data(NODES)
    nodes = shown(data)
    assert nodes[9]["label"] == "A Paper" and nodes[8]["label"] == "2 Method and a very long heading that will not…"
    assert nodes[1]["label"] == "p. 1 · We train the…"   # one line: page and first words
    assert nodes[1]["text"] == "We train the network for forty epochs with Adam."   # the outline's longer line
    assert [nodes[i]["kind"] for i in (9, 1, 2)] == ["summary", "leaf", "caption"]
    assert nodes[7]["pages"] == "pp. 1-2" and nodes[7]["leaves"] == 2 and nodes[3]["pages"] == "p. 3"
    assert {i for i, n in nodes.items() if n["open"]} == {9, 8}                    # 7 is folded: its leaves hidden
    assert "2.1 Training" in nodes[7]["title"] and "summary 7" in nodes[7]["title"]   # the tooltip
    assert {(e["from"], e["to"]) for e in data["edges"]} == {(9, 8), (8, 7), (7, 1), (7, 2), (9, 3)}
    assert [item["kind"] for item in data["legend"]] == list(KINDS)


def test_a_query_unfolds_down_to_its_hits_and_colours_hits_lca_paths_and_the_agent():
    overlay = overlay_for(NODES, hit_ids=[1, 3, 404], lca_ids=[9], agent_ids=[8, 1])
    assert overlay.path_edges == {(9, 8), (8, 7), (7, 1), (9, 3)} and overlay.hit_ids == {1, 3}
    assert overlay.agent_edges == {(8, 7), (7, 1)}       # from the highest node it explored down
    data = vis_data(NODES, overlay=overlay)
    nodes = shown(data)
    assert nodes[7]["open"] and nodes[1]["lit"] and not nodes[2]["lit"]
    assert nodes[1]["color"] == nodes[3]["color"] == KINDS["hit"][0] and nodes[9]["color"] == KINDS["lca"][0]
    assert nodes[8]["color"] == KINDS["agent"][0] and nodes[2]["color"] == KINDS["caption"][0]
    widths = {(e["from"], e["to"]): (e["color"], e["width"]) for e in data["edges"]}
    assert widths[(7, 1)] == (KINDS["agent"][0], 4) and widths[(9, 3)] == (KINDS["hit"][0], 4)
    assert widths[(7, 2)][1] == 1
    assert data["key"] != vis_data(NODES)["key"]          # a new overlay redraws the tree


def test_the_selected_node_is_in_sight_without_redrawing():
    plain, chosen = vis_data(NODES), vis_data(NODES, selected=2)
    assert shown(chosen)[7]["open"] and chosen["selected"] == 2
    assert chosen["key"] == plain["key"]                  # only the highlight moves


def test_merge_replay_leaves_out_later_merges_and_their_children_become_roots():
    nodes = shown(vis_data(NODES, upto_merge=1))
    assert set(nodes) == {7, 1, 2, 3}
    assert nodes[7]["parent"] is None and nodes[3]["parent"] is None and nodes[1]["parent"] == 7


def test_vis_network_and_its_stylesheet_are_bundled_locally():
    css = vis_network_css()
    assert css.startswith("div.vis-tooltip{") and "position:absolute" in css and "url(" not in css
    assert vis_network_js().startswith("/**") and "Network" in vis_network_js()
