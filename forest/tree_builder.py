"""Plans the merges of seed 000 §4.2 build_memory_tree, without touching any store.

Roots sit in document order. Repeatedly the most similar ADJACENT pair of roots is merged under a
new parent while similarity > threshold and len(content_a) + len(content_b) <= max_chars.

The seed rescans every adjacent pair after each merge (O(n^2) similarity computations with
database round trips). Here candidate pairs live in a heap with lazy invalidation: a pair only
changes when one of its two roots is merged, so each merge pushes at most two new pairs and the
whole build costs O(n log n). Ties go to the leftmost pair, as in the seed's scan.

Similarity between two roots is average linkage: the mean cosine between the leaves under one
and the leaves under the other, computed in O(dim) from the sums of their unit leaf vectors
(S_a . S_b / (n_a * n_b)). Centroid cosine would not do: averaging cancels noise, so a big
subtree looks ever more similar to its neighbours and swallows them one by one into a chain.
Planning needs no model call; a parent's stored vector is the embedding of its summary,
computed afterwards in one batch.
"""
from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from forest.paths import positions_from_parents

SEPARATOR = "\n---\n"


@dataclass(frozen=True)
class Merge:
    left: int        # item index of the left child
    right: int       # item index of the right child
    parent: int      # item index of the new parent: len(items) + merge number
    similarity: float


def average_linkage(sum_a: np.ndarray, count_a: int, sum_b: np.ndarray, count_b: int) -> float:
    """Mean cosine over all leaf pairs across the two subtrees (leaf vectors are unit length)."""
    return float(sum_a @ sum_b) / (count_a * count_b)


def plan_merges(vectors: np.ndarray, sizes: Sequence[int], threshold: float, max_chars: int,
                calibrate: Callable[[float], float] = float,
                counts: Sequence[int] | None = None) -> list[Merge]:
    """`vectors[i]` (sum of the unit leaf vectors under root i), `counts[i]` (its number of
    leaves, default 1) and `sizes[i]` (content length) describe root i, roots in document order."""
    n = len(sizes)
    if len(vectors) != n:
        raise ValueError("one vector per root is required")
    sums = [np.asarray(v, dtype=np.float64) for v in vectors]
    size = list(sizes)
    count = list(counts) if counts is not None else [1] * n
    start = list(range(n))                      # tie-break: leftmost pair first
    left_of = list(range(-1, n - 1))
    right_of = list(range(1, n + 1))
    if n:
        right_of[-1] = -1
    alive = [True] * n
    heap: list[tuple[float, int, int, int]] = []

    def push(a: int, b: int) -> None:
        if size[a] + size[b] > max_chars:
            return  # sizes only grow, so this pair can never become mergeable
        similarity = calibrate(average_linkage(sums[a], count[a], sums[b], count[b]))
        if similarity > threshold:
            heapq.heappush(heap, (-similarity, start[a], a, b))

    for i in range(n - 1):
        push(i, i + 1)

    merges: list[Merge] = []
    while heap:
        negative_similarity, _, a, b = heapq.heappop(heap)
        if not (alive[a] and alive[b]):
            continue  # stale: one side was merged since this pair was pushed
        parent = len(sums)
        sums.append(sums[a] + sums[b])
        size.append(size[a] + len(SEPARATOR) + size[b])
        count.append(count[a] + count[b])
        start.append(start[a])
        alive[a] = alive[b] = False
        alive.append(True)
        left_of.append(left_of[a])
        right_of.append(right_of[b])
        if left_of[a] != -1:
            right_of[left_of[a]] = parent
        if right_of[b] != -1:
            left_of[right_of[b]] = parent
        merges.append(Merge(a, b, parent, -negative_similarity))
        if left_of[parent] != -1:
            push(left_of[parent], parent)
        if right_of[parent] != -1:
            push(parent, right_of[parent])
    return merges


@dataclass
class Layout:
    """Parent, children, depth and leaf range of every item once the merges are applied."""

    parent: list[int | None]
    children: list[list[int]]
    depth: list[int]
    roots: list[int]          # in document order
    first_leaf: list[int]
    last_leaf: list[int]


def layout(n_items: int, merges: Sequence[Merge], leaf_ranges: Sequence[tuple[int, int]] | None = None) -> Layout:
    total = n_items + len(merges)
    parent: list[int | None] = [None] * total
    children: list[list[int]] = [[] for _ in range(total)]
    ranges = list(leaf_ranges) if leaf_ranges is not None else [(i, i) for i in range(n_items)]
    first = [r[0] for r in ranges] + [0] * len(merges)
    last = [r[1] for r in ranges] + [0] * len(merges)
    for m in merges:
        parent[m.left] = parent[m.right] = m.parent
        children[m.parent] = [m.left, m.right]
        first[m.parent], last[m.parent] = first[m.left], last[m.right]
    roots = sorted((i for i in range(total) if parent[i] is None), key=lambda i: first[i])
    return Layout(parent, children, positions_from_parents(parent)[1], roots, first, last)
