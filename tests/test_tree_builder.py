"""The heap-based merge planner against a direct transcription of the seed's rescanning loop."""
import numpy as np
import pytest

from forest.tree_builder import SEPARATOR, average_linkage, layout, plan_merges


def seed_reference(vectors, sizes, threshold, max_chars):
    """Seed 000 §4.2: rescan all adjacent root pairs, merge the best, repeat (O(n^2))."""
    roots = [(np.asarray(v, dtype=np.float64), 1, s, i) for i, (v, s) in enumerate(zip(vectors, sizes))]
    next_index = len(sizes)
    merges = []
    while len(roots) > 1:
        best, best_sim = None, -np.inf
        for k in range(len(roots) - 1):
            (va, na, sa, _), (vb, nb, sb, _) = roots[k], roots[k + 1]
            sim = average_linkage(va, na, vb, nb)
            if sim > threshold and sa + sb <= max_chars and sim > best_sim:
                best, best_sim = k, sim
        if best is None:
            break
        (va, na, sa, ia), (vb, nb, sb, ib) = roots[best], roots[best + 1]
        merges.append((ia, ib, next_index, best_sim))
        roots[best : best + 2] = [(va + vb, na + nb, sa + len(SEPARATOR) + sb, next_index)]
        next_index += 1
    return merges


def random_document(rng, n, dim=16, drift=0.35):
    """Unit vectors drifting along the document, like topics in a paper."""
    vectors, current = [], rng.normal(size=dim)
    for _ in range(n):
        current = current + drift * rng.normal(size=dim)
        vectors.append(current / np.linalg.norm(current))
    return np.array(vectors), list(rng.integers(50, 400, size=n))


@pytest.mark.parametrize("seed", range(12))
def test_heap_planner_makes_the_same_merges_as_the_seed_loop(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    vectors, sizes = random_document(rng, n)
    threshold = float(rng.choice([-1.0, 0.0, 0.3, 0.6]))
    max_chars = int(rng.choice([10**9, 1500, 600]))
    planned = [(m.left, m.right, m.parent, m.similarity) for m in plan_merges(vectors, sizes, threshold, max_chars)]
    expected = seed_reference(vectors, sizes, threshold, max_chars)
    assert [p[:3] for p in planned] == [e[:3] for e in expected]
    assert np.allclose([p[3] for p in planned], [e[3] for e in expected])


def test_merge_conditions_hold_and_threshold_can_leave_several_roots():
    rng = np.random.default_rng(7)
    # Two unrelated halves: merging inside each half, never across at a high threshold.
    a, b = rng.normal(size=32), rng.normal(size=32)
    vectors = np.array([(a if i < 10 else b) + 0.1 * rng.normal(size=32) for i in range(20)])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    sizes = [100] * 20
    merges = plan_merges(vectors, sizes, threshold=0.5, max_chars=10**9)
    shape = layout(20, merges)
    assert len(shape.roots) == 2
    assert all(m.similarity > 0.5 for m in merges)
    assert [(shape.first_leaf[r], shape.last_leaf[r]) for r in shape.roots] == [(0, 9), (10, 19)]


def test_size_limit_is_respected():
    rng = np.random.default_rng(3)
    vectors, _ = random_document(rng, 40)
    sizes = [100] * 40
    merges = plan_merges(vectors, sizes, threshold=-1.0, max_chars=450)
    sizes_of = list(sizes)
    for m in merges:
        assert sizes_of[m.left] + sizes_of[m.right] <= 450
        sizes_of.append(sizes_of[m.left] + len(SEPARATOR) + sizes_of[m.right])


def test_layout_invariants_and_contiguous_leaves():
    rng = np.random.default_rng(11)
    vectors, sizes = random_document(rng, 200)
    merges = plan_merges(vectors, sizes, threshold=-1.0, max_chars=10**9)
    assert len(merges) == 199  # everything merges into one tree
    shape = layout(200, merges)
    assert len(shape.roots) == 1
    for node in range(len(shape.parent)):
        if shape.parent[node] is not None:
            assert shape.depth[node] == shape.depth[shape.parent[node]] + 1
        kids = shape.children[node]
        if kids:
            left, right = kids
            assert shape.last_leaf[left] + 1 == shape.first_leaf[right]  # adjacent, in order
            assert (shape.first_leaf[node], shape.last_leaf[node]) == (shape.first_leaf[left], shape.last_leaf[right])


def test_average_linkage_keeps_trees_shallow_on_a_drifting_document():
    """Centroid similarity would grow one big subtree into a chain (depth ~ n)."""
    rng = np.random.default_rng(5)
    vectors, sizes = random_document(rng, 256, dim=64)
    shape = layout(256, plan_merges(vectors, sizes, threshold=-1.0, max_chars=10**9))
    assert max(shape.depth) < 40


def test_empty_and_single_inputs():
    assert plan_merges(np.zeros((0, 4)), [], 0.0, 100) == []
    assert plan_merges(np.ones((1, 4)), [10], 0.0, 100) == []
    with pytest.raises(ValueError):
        plan_merges(np.ones((2, 4)), [10], 0.0, 100)
