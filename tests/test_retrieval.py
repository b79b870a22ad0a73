"""retrieve (LCA), drill-down and context on hand-built trees, against embedded Chroma and a
real `chroma run` server."""
import uuid

import numpy as np
import pytest

from forest import InvalidInput, MemoryForest, NotFound, load_settings
from forest.records import LEAF, SUMMARY
from forest.records import SEPARATOR
from keyword_embedder import KeywordEmbedder

VOCAB = ["alpha", "beta", "gamma", "delta", "omega", "overview", "zeta"]


@pytest.fixture(params=["embedded", "server"])
def hand_forest(request, tmp_path):
    overrides = {"data_dir": tmp_path / "store"}
    if request.param == "server":
        host, port = request.getfixturevalue("chroma_server")
        overrides.update(chroma_host=host, chroma_port=port)
    forest = MemoryForest(load_settings(overrides, environ={}), embedder=KeywordEmbedder(VOCAB))
    yield forest
    forest.close()


def build_by_hand(forest, model_id, name, spec):
    """spec: list of (text_or_summary, children offsets) in offset order; leaves have no children."""
    archive_id = forest.store.create_archive(model_id, name, None, {})
    parent = {c: i for i, (_, kids) in enumerate(spec) for c in kids}

    def path(i):
        return (path(parent[i]) if i in parent else []) + [i]

    contents = {}
    for i, (text, kids) in enumerate(spec):
        contents[i] = text if not kids else SEPARATOR.join(contents[k] for k in kids)

    def leaf_range(i):
        kids = spec[i][1]
        return (leaf_order[i], leaf_order[i]) if not kids else (leaf_range(kids[0])[0], leaf_range(kids[-1])[1])

    leaf_order = {i: n for n, i in enumerate(i for i, (_, kids) in enumerate(spec) if not kids)}
    rows = [{"offset": i, "parent_offset": parent.get(i), "path_offsets": path(i), "depth": len(path(i)) - 1,
             "node_type": SUMMARY if kids else LEAF, "content": contents[i], "summary": text,
             "summary_source": "hand", "leaf_index": None if kids else leaf_order[i], "char_start": None,
             "first_leaf": leaf_range(i)[0], "last_leaf": leaf_range(i)[1],
             "merge_order": i if kids else None, "merge_similarity": 0.5 if kids else None}
            for i, (text, kids) in enumerate(spec)]
    base = forest.store.allocate_and_insert(archive_id, rows)
    texts = [r["content"] if r["node_type"] == LEAF else r["summary"] for r in rows]
    forest.vectors.upsert(model_id, [base + r["offset"] for r in rows], forest.embedder.embed_passages(texts),
                          [{"model_id": model_id, "archive_id": archive_id, "node_type": r["node_type"],
                            "depth": r["depth"]} for r in rows])
    forest.store.set_status(archive_id, "ready")
    return archive_id, {r["summary"]: base + r["offset"] for r in rows}


TREE = [("alpha", []), ("beta", []), ("gamma", []), ("delta", []),
        ("alpha beta", [0, 1]), ("gamma delta", [2, 3]), ("overview", [4, 5]), ("omega", [])]


@pytest.fixture
def model(hand_forest):
    model_id = f"m-{uuid.uuid4().hex[:8]}"
    archive_id, ids = build_by_hand(hand_forest, model_id, "hand", TREE)
    return hand_forest, model_id, archive_id, ids


def test_single_hit_is_returned_as_itself(model):
    forest, m, _, ids = model
    [rep] = forest.retrieve(m, "alpha", top_k=1)
    assert (rep.node.id, rep.kind, rep.hit_ids) == (ids["alpha"], "hit", [ids["alpha"]])
    assert rep.score == pytest.approx(1.0)


def test_hit_and_its_ancestor_collapse_to_the_ancestor(model):
    forest, m, _, ids = model
    [rep] = forest.retrieve(m, "alpha", top_k=2)  # alpha (1.0) and "alpha beta" (0.71)
    assert rep.node.id == ids["alpha beta"] and rep.kind == "lca"
    assert sorted(rep.hit_ids) == sorted([ids["alpha"], ids["alpha beta"]])


def test_hits_in_two_subtrees_collapse_to_their_lowest_common_ancestor(model):
    forest, m, _, ids = model
    [rep] = forest.retrieve(m, "alpha gamma", top_k=2)
    assert rep.node.id == ids["overview"] and rep.kind == "lca"
    assert "lowest common ancestor" in rep.hint.lower()


def test_hits_under_different_roots_of_one_archive_stay_apart(model):
    forest, m, _, ids = model
    reps = forest.retrieve(m, "alpha omega", top_k=2)
    assert sorted(r.node.id for r in reps) == sorted([ids["alpha"], ids["omega"]])


def test_hits_in_different_archives_stay_apart(model):
    forest, m, _, ids = model
    _, other = build_by_hand(forest, m, "second", [("zeta alpha", [])])
    reps = forest.retrieve(m, "alpha", top_k=3)
    assert {r.node.archive_id for r in reps} == {forest.node(m, ids["alpha"]).archive_id,
                                                 forest.node(m, other["zeta alpha"]).archive_id}


def test_drill_down_reranks_children_and_applies_the_threshold(model):
    forest, m, _, ids = model
    both = forest.explore(m, ids["overview"], "alpha", threshold=0.0)
    assert [s.node.id for s in both] == [ids["alpha beta"], ids["gamma delta"]]
    assert both[0].relevance_score > 0.7 and both[1].relevance_score < 0.1
    assert all(0.0 <= s.relevance_score <= 1.0 for s in both)
    [only] = forest.explore(m, ids["overview"], "alpha", threshold=0.5)
    assert only.node.id == ids["alpha beta"]
    assert forest.explore(m, ids["overview"], "omega", threshold=0.5) == []


def test_drill_down_on_a_leaf_returns_the_leaf_with_score_one(model):
    forest, m, _, ids = model
    [leaf] = forest.explore(m, ids["gamma"], "anything at all", threshold=0.9)
    assert leaf.node.id == ids["gamma"] and leaf.relevance_score == 1.0 and leaf.node.content == "gamma"


def test_context_fills_the_budget_with_the_best_leaves_first(model):
    forest, m, _, ids = model
    result = forest.context(m, "alpha gamma", budget_tokens=100)
    assert result.leaves[0].node.id in (ids["alpha"], ids["gamma"])
    assert {l.node.id for l in result.leaves[:2]} == {ids["alpha"], ids["gamma"]}
    assert all(l.node.node_type == LEAF for l in result.leaves)
    assert result.used_tokens <= 100
    scores = [l.relevance_score for l in result.leaves]
    assert scores == sorted(scores, reverse=True)
    small = forest.context(m, "alpha gamma", budget_tokens=2)
    assert len(small.leaves) == 1 and small.used_tokens <= 2


def test_context_lets_trees_compete_by_their_passages_own_similarity(hand_forest):
    # Each place goes to the tree of the passage that matches best there, and inside a tree to
    # its best passage not placed yet.
    _, a = build_by_hand(hand_forest, "trees", "A", [("alpha alpha beta", []), ("omega", []), ("zeta", [0, 1])])
    _, b = build_by_hand(hand_forest, "trees", "B", [("alpha beta", []), ("alpha", []), ("gamma", [0, 1])])
    order = [s.node.id for s in hand_forest.context("trees", "alpha", budget_tokens=1000).leaves]
    assert order[:3] == [b["alpha"], a["alpha alpha beta"], b["alpha beta"]]


def test_unknown_ids_and_bad_arguments_are_clear_errors(model):
    forest, m, archive_id, _ = model
    with pytest.raises(NotFound, match="node 999999 not found"):
        forest.explore(m, 999999, "alpha")
    with pytest.raises(NotFound):
        forest.tree(m, archive_id + 1000)
    with pytest.raises(InvalidInput, match="query is empty"):
        forest.retrieve(m, "   ")
    with pytest.raises(InvalidInput, match="top_k"):
        forest.retrieve(m, "alpha", top_k=0)
    with pytest.raises(InvalidInput, match="threshold"):
        forest.explore(m, 1, "alpha", threshold=1.5)
    with pytest.raises(InvalidInput, match="budget"):
        forest.context(m, "alpha", budget_tokens=0)
    assert forest.retrieve("nobody", "alpha") == []


def test_a_building_archive_is_invisible_to_every_read(model):
    forest, m, _, _ = model
    archive_id = forest.store.create_archive(m, "in progress", None, {})
    rows = [{"offset": 0, "parent_offset": None, "path_offsets": [0], "depth": 0, "node_type": LEAF,
             "content": "alpha alpha", "summary": "alpha alpha", "summary_source": "hand", "leaf_index": 0,
             "char_start": 0, "first_leaf": 0, "last_leaf": 0}]
    base = forest.store.allocate_and_insert(archive_id, rows)
    forest.vectors.upsert(m, [base], np.array([forest.embedder.embed_passages(["alpha"])[0]]),
                          [{"model_id": m, "archive_id": archive_id, "node_type": LEAF, "depth": 0}])
    assert archive_id not in [a.id for a in forest.archives(m)]
    assert base not in [h.node.id for h in forest.search(m, "alpha", top_k=5)]
    assert len(forest.search(m, "alpha", top_k=2)) == 2  # hidden hits do not eat into top_k
    with pytest.raises(NotFound):
        forest.node(m, base)


def test_a_question_asked_over_chosen_archives_reads_only_them(model):
    forest, m, archive_id, ids = model
    second, other = build_by_hand(forest, m, "second", [("alpha zeta", []), ("alpha", []), ("zeta", [0, 1])])
    everywhere = {h.node.archive_id for h in forest.search(m, "alpha", top_k=10)}
    assert everywhere == {archive_id, second}
    for mode in ("vector", "bm25", "hybrid"):
        hits = forest.search(m, "alpha", top_k=10, mode=mode, archive_ids=[second])
        assert hits and {h.node.archive_id for h in hits} == {second}, mode
    # the same best hit and score as an unfiltered search finds within that archive
    [best] = forest.search(m, "alpha", top_k=1, archive_ids=[archive_id])
    assert best.node.id == ids["alpha"] and best.relevance_score == pytest.approx(1.0)
    assert {r.node.archive_id for r in forest.retrieve(m, "alpha", archive_ids=[second])} == {second}
    leaves = forest.context(m, "alpha", budget_tokens=1000, archive_ids=[archive_id]).leaves
    assert leaves and {s.node.archive_id for s in leaves} == {archive_id}
    state = forest.ask(m, "alpha", archive_ids=[second])
    # what it read is that archive's (the one-word passages are no sentence an answer would quote)
    assert state.archive_ids == (second,) and {c.node.archive_id for c in state.context} == {second}
    assert {c.node.archive_id for c in state.cited} <= {second}
    # every paper chosen is still a choice: each is answered (the search runs on the whole index)
    assert forest.ask(m, "alpha", archive_ids=[second, archive_id]).archive_ids == tuple(sorted((archive_id, second)))


def test_archive_choices_are_checked_and_never_reach_another_model_id(model):
    forest, m, archive_id, _ = model
    theirs, _ = build_by_hand(forest, "someone-else", "theirs", [("alpha", [])])
    with pytest.raises(NotFound, match=f"archive {theirs} not found for model_id"):
        forest.search(m, "alpha", archive_ids=[theirs])
    with pytest.raises(NotFound):
        forest.ask(m, "alpha", archive_ids=[archive_id, theirs])
    with pytest.raises(InvalidInput, match="at least one archive"):
        forest.context(m, "alpha", archive_ids=[])
    with pytest.raises(InvalidInput, match="list of archive ids"):
        forest.retrieve(m, "alpha", archive_ids="1")
