"""forest.views.tree_view: what the Forest page draws — labels a person can read, levels folded below the
first two except down to what a query lit up or the selection, merge replay, overlay colours."""
import pytest

from forest.records import LEAF, SUMMARY, MemoryNode, MergeStep
from forest.views.tree_view import KINDS, describe_merge, describe_overlay, overlay_for, vis_data, vis_network_js


def node(i, parent, path, depth, kind, first, last, merge=None, **fields) -> MemoryNode:
    return MemoryNode(i, 1, parent, path, depth, kind, fields.pop("content", f"text of passage {i}"),
                      f"summary {i}", "test", first if kind == LEAF else None, None, first, last, merge,
                      0.5 if merge else None, page_start=first + 1, page_end=last + 1, **fields)


#            9 Paper (depth 0)
#     8 Method (1)          3 leaf (1)
#   7 Training (2)
#  1 leaf  2 leaf (3)
NODES = [node(9, None, "9/", 0, SUMMARY, 0, 2, 3, title="A Paper"),
         node(8, 9, "9/8/", 1, SUMMARY, 0, 1, 2,
              title="2 Method and a very long heading that will not fit in a box, not even on three lines"),
         node(7, 8, "9/8/7/", 2, SUMMARY, 0, 1, 1, title="2 Method › 2.1 Training"),
         node(1, 7, "9/8/7/1/", 3, LEAF, 0, 0, content="We train   the network for forty epochs with Adam."),
         node(2, 7, "9/8/7/2/", 3, LEAF, 1, 1, chunk_kind="caption", content="Figure 2: Loss."),
         node(3, 9, "9/3/", 1, LEAF, 2, 2)]


def shown(data) -> dict:
    return {n["id"]: n for n in data["nodes"]}


def test_nodes_say_what_they_are_and_levels_below_two_start_folded():
    data = vis_data(NODES)
    nodes = shown(data)
    assert nodes[9]["label"] == "A Paper"
    assert nodes[8]["label"] == "2 Method and a very long heading that will not fit in a…"
    assert nodes[7]["label"] == "2.1 Training"        # the last heading: its parent is drawn beside it
    assert nodes[1]["label"] == "p. 1 · We train the network for forty epochs with Adam."   # page and first words
    assert nodes[7]["text"] == "2 Method › 2.1 Training"   # the outline says the whole path
    assert [nodes[i]["kind"] for i in (9, 1, 2)] == ["summary", "leaf", "caption"]
    assert nodes[7]["pages"] == "pp. 1-2" and nodes[7]["leaves"] == 2 and nodes[3]["pages"] == "p. 3"
    assert {i for i, n in nodes.items() if n["open"]} == {9, 8}                    # 7 is folded: its leaves hidden
    assert "2 Method › 2.1 Training" in nodes[7]["tip"] and "summary 7" in nodes[7]["tip"]   # the tooltip
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


def test_vis_network_is_bundled_locally():
    assert vis_network_js().startswith("/**") and "Network" in vis_network_js()


@pytest.mark.parametrize("upto", [0, 1, 2, 3])
def test_an_overlay_survives_every_step_of_the_merge_replay(upto):
    """A query's common ancestor (the root, merge 3) and a hit that is a summary node (7, merge 1)
    do not exist before their merge: the drawing leaves the ancestor out and lights the hit's parts."""
    overlay = overlay_for(NODES, hit_ids=[7, 3], lca_ids=[9], agent_ids=[8, 1])
    data = vis_data(NODES, upto_merge=upto, overlay=overlay, selected=9)
    nodes = shown(data)
    hits = {i for i, n in nodes.items() if n["color"] == KINDS["hit"][0]}
    assert hits == ({3, 1, 2} if upto == 0 else {3, 7})          # before merge 1, 7 is its passages 1 and 2
    assert (9 in nodes) == (upto >= 3) and all(n["lit"] == (n["id"] in hits | {9, 8, 1}) for n in nodes.values())
    assert {(e["from"], e["to"]) for e in data["edges"]} <= {(9, 8), (8, 7), (7, 1), (7, 2), (9, 3)}
    assert all(e["from"] in nodes and e["to"] in nodes for e in data["edges"])


def test_the_overlay_caption_says_what_the_common_ancestor_means():
    overlay = overlay_for(NODES, hit_ids=[1, 3], lca_ids=[9])
    assert "the whole of “A Paper”" in describe_overlay(NODES, overlay) and "spread over" in describe_overlay(NODES, overlay)
    inside = describe_overlay(NODES, overlay_for(NODES, hit_ids=[1, 2], lca_ids=[7]))
    assert "common ancestor (gold): “2 Method › 2.1 Training”, pp. 1-2" in inside and "spread" not in inside
    early = describe_overlay(NODES, overlay_for(NODES, hit_ids=[7, 3], lca_ids=[9]), upto_merge=0)
    assert "1 of them made by later merges" in early and "only made at merge 3" in early


def test_a_merge_step_is_told_in_words():
    made = describe_merge(MergeStep(1, 0, 1, 1, 0.61, 7), 3, NODES)
    assert made == ("Merge 1 of 3 joined 1 passage on p. 1 and the next 1 passage on p. 2 (similarity 0.61) "
                    "and made “2 Method › 2.1 Training”.")
    folded = describe_merge(MergeStep(2, 0, 2, 2, 0.4, None), 3, NODES)
    assert "2 passages on pp. 1-2 and the next 1 passage on p. 3" in folded and "inside “A Paper”" in folded
