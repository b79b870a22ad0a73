"""The heap-based merge planner against a direct transcription of the seed's rescanning loop, and
the tree plan over it: outline barriers and condensation."""
import math

import numpy as np
import pytest

from forest.tree.planner import (SEPARATOR, Segment, average_linkage, outline_segment, placed_headings, plan_merges,
                                 plan_tree)


def seed_reference(vectors, sizes, threshold, max_chars):
    """The forest spec's build_memory_tree: rescan adjacent root pairs, merge the best, repeat (O(n^2))."""
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
    assert all(m.similarity > 0.5 for m in merges)
    plan = plan_tree(vectors, sizes, [1] * 20, Segment(None, list(range(20))), 0.5, 10**9)
    assert [(plan.first_unit[r], plan.last_unit[r]) for r in plan.roots] == [(0, 9), (10, 19)]


def test_size_limit_is_respected():
    rng = np.random.default_rng(3)
    vectors, _ = random_document(rng, 40)
    sizes = [100] * 40
    merges = plan_merges(vectors, sizes, threshold=-1.0, max_chars=450)
    sizes_of = list(sizes)
    for m in merges:
        assert sizes_of[m.left] + sizes_of[m.right] <= 450
        sizes_of.append(sizes_of[m.left] + len(SEPARATOR) + sizes_of[m.right])


def depth_of(plan, item):
    deepest, stack = 0, [(item, 0)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in plan.children.get(node, []))
    return deepest


def leaves_under(plan, item):
    return list(range(plan.first_unit[item], plan.last_unit[item] + 1))


def check_contiguous(plan, n):
    """Every kept node's children tile its leaf range in document order; the roots tile 0..n-1."""
    for parent, children in plan.children.items():
        assert plan.first_unit[children[0]] == plan.first_unit[parent]
        assert plan.last_unit[children[-1]] == plan.last_unit[parent]
        for left, right in zip(children, children[1:]):
            assert plan.last_unit[left] + 1 == plan.first_unit[right]
    assert plan.first_unit[plan.roots[0]] == 0 and plan.last_unit[plan.roots[-1]] == n - 1
    for m in plan.merges:  # the binary history: adjacent runs, left before right
        assert plan.last_unit[m.left] + 1 == plan.first_unit[m.right]


@pytest.mark.parametrize("n", [7, 40, 200, 1000])
def test_condensed_tree_is_shallow_contiguous_and_keeps_every_merge(n):
    rng = np.random.default_rng(n)
    vectors, sizes = random_document(rng, n)
    plan = plan_tree(vectors, sizes, [1] * n, Segment(None, list(range(n))), -1.0, 10**9, max_children=10)
    assert len(plan.merges) == n - 1 and len(plan.roots) == 1   # the full binary history stays
    check_contiguous(plan, n)
    assert all(2 <= len(children) <= 10 for children in plan.children.values())
    # log10(n) levels when the cuts are balanced; unbalanced cuts cost at most two more
    assert depth_of(plan, plan.roots[0]) <= math.ceil(math.log(n) / math.log(10)) + 2
    binary_depth = max(len(path) for path in _binary_paths(plan))
    assert depth_of(plan, plan.roots[0]) < binary_depth


def _binary_paths(plan):
    below = {m.parent: (m.left, m.right) for m in plan.merges}
    paths, stack = [], [(plan.roots[0], [])]
    while stack:
        item, path = stack.pop()
        if item in below:
            stack.extend((child, path + [item]) for child in below[item])
        else:
            paths.append(path)
    return paths


def test_no_level_peels_single_leaves_off_a_chain():
    """A chain (each leaf merged onto the growing block) must not become a chain of nodes."""
    n = 60
    rng = np.random.default_rng(2)
    vectors, sizes = random_document(rng, n, drift=0.05)
    plan = plan_tree(vectors, sizes, [1] * n, Segment(None, list(range(n))), -1.0, 10**9)
    for children in plan.children.values():
        kept = [c for c in children if c in plan.children]
        assert not (len(children) == 2 and len(kept) == 1), "a node that only peels one leaf off"
    assert depth_of(plan, plan.roots[0]) <= 3


def test_outline_sections_are_merge_barriers_and_nodes():
    paths = ([()] + [("Abstract",)] * 2 + [("1 Intro",)] * 5 + [("2 Method",)] * 2 + [("2 Method", "2.1 Data")] * 14
             + [("2 Method", "2.2 Model")] * 6 + [("3 Results",)] * 12 + [("4 Conclusion",)])
    n = len(paths)
    rng = np.random.default_rng(0)
    vectors, sizes = random_document(rng, n, drift=1.0)   # similarity alone would ignore the sections
    top = outline_segment(paths, range(n), "Paper", single_root=True)
    plan = plan_tree(vectors, sizes, [1] * n, top, 0.9, 10**9, max_children=5)
    check_contiguous(plan, n)
    assert len(plan.roots) == 1 and plan.titles[plan.roots[0]] == "Paper"
    sections = {title: item for item, title in plan.titles.items() if isinstance(title, tuple)}
    # every section of more than one leaf is one node holding exactly its leaves
    for title in {p for p in paths if p}:
        held = [i for i, p in enumerate(paths) if p[: len(title)] == title]
        if len(held) > 1:
            assert leaves_under(plan, sections[title]) == held
    # no node mixes two sections below the section level: a group is inside one section, or
    # holds every leaf of each section it touches
    for item in plan.children:
        group = set(leaves_under(plan, item))
        for title in {p for p in paths if p}:
            section = {i for i, p in enumerate(paths) if p[: len(title)] == title}
            assert not group & section or section <= group or group <= section
    # the author's sections stay a table of contents: 2 Method holds its own leaves and both subsections
    method = plan.children[sections[("2 Method",)]]
    assert sections[("2 Method", "2.1 Data")] in method and sections[("2 Method", "2.2 Model")] in method
    # a big section gets one level of groups under its node, no more
    assert depth_of(plan, sections[("2 Method", "2.1 Data")]) == 2


def test_a_footnote_filed_under_an_ended_section_does_not_cut_the_next_one_in_two():
    """A page's footnote belongs to "1 Intro" but the layout puts it among "2 Related Work"'s
    passages: it stays there, inside that section, which remains one node."""
    paths = ([("1 Intro",)] * 3 + [("2 Related Work",)] * 3 + [("1 Intro",)] + [("2 Related Work",)] * 3
             + [("3 Method", "3.1 Data")] * 2 + [("3 Method", "3.2 Model")] + [("3 Method", "3.1 Data")]
             + [("3 Method", "3.2 Model")] * 2)
    n = len(paths)
    top = outline_segment(paths, range(n), "Paper", single_root=True)
    assert [c.title for c in top.children] == [("1 Intro",), ("2 Related Work",), ("3 Method",)]
    assert top.children[1].children == list(range(3, 10))                    # the footnote (6) in place
    method = top.children[2]
    assert [c.title for c in method.children] == [("3 Method", "3.1 Data"), ("3 Method", "3.2 Model")]
    placed = placed_headings(top)
    assert placed[6] == ("2 Related Work",) and placed[13] == ("3 Method", "3.2 Model") and placed[0] == ("1 Intro",)
    vectors, sizes = random_document(np.random.default_rng(1), n, drift=1.0)
    plan = plan_tree(vectors, sizes, [1] * n, top, 0.9, 10**9, max_children=5)
    check_contiguous(plan, n)
    titles = [t for t in plan.titles.values() if isinstance(t, tuple)]
    assert sorted(titles) == sorted(set(titles)) and ("2 Related Work",) in titles


def test_empty_and_single_inputs():
    assert plan_merges(np.zeros((0, 4)), [], 0.0, 100) == []
    assert plan_merges(np.ones((1, 4)), [10], 0.0, 100) == []
    with pytest.raises(ValueError):
        plan_merges(np.ones((2, 4)), [10], 0.0, 100)
