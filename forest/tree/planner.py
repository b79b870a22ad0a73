"""Plans the merges of the spec's build_memory_tree, without touching any store.

Roots sit in document order. Repeatedly the most similar ADJACENT pair of roots is merged under a
new parent while similarity > threshold and len(content_a) + len(content_b) <= max_chars.

The spec rescans every adjacent pair after each merge (O(n^2) similarity computations with
database round trips). Here candidate pairs live in a heap with lazy invalidation: a pair only
changes when one of its two roots is merged, so each merge pushes at most two new pairs and the
whole build costs O(n log n). Ties go to the leftmost pair, as in the spec's scan.

Similarity between two roots is average linkage: the mean cosine between the leaves under one
and the leaves under the other, computed in O(dim) from the sums of their unit leaf vectors
(S_a . S_b / (n_a * n_b)). Centroid cosine would not do: averaging cancels noise, so a big
subtree looks ever more similar to its neighbours and swallows them one by one into a chain.
Planning needs no model call; a parent's stored vector is the embedding of its summary,
computed afterwards in one batch.

`plan_tree` runs that rule inside the document's outline and then condenses the binary result:

- Outline: headings are merge barriers. Merging runs inside each lowest-level section first; the
  section's subtree then takes part, as one unit, in its parent section's merging, up to the
  document. A section's remaining roots are merged below the threshold too (most similar adjacent
  pair first), so every section with more than one unit has one node: the table of contents.
- Condensation: a binary merge tree over n units is log2(n) levels deep at best and a chain at
  worst. Each kept node instead takes its children by cutting its own dendrogram: the loosest
  merges (lowest similarity) are undone first, those of groups too big for the levels left before
  the others, until it has k children, k = ceil(n ** (1/levels)) with levels = ceil(log(n) /
  log(max_children)), so a node over n units is about `levels` deep and no level peels single
  units off one at a time. Up to max_children units hang directly.
  Every kept node is still a node of the binary tree (a contiguous run of leaves merged by the
  seed's rule); the merges condensed away stay in the merge history.
"""
from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from forest.records import SEPARATOR




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
class Segment:
    """A stretch of the row of units that merges on its own before taking part in its parent's
    merging: a section (title = its heading path), a document, or the whole row."""

    title: tuple[str, ...] | str | None
    children: list[int | Segment] = field(default_factory=list)   # unit indices and sub-segments
    single_root: bool = False     # merge below the threshold until one root is left


@dataclass
class TreePlan:
    """Binary merges (items: units 0..n-1, then parents n, n+1, ... in merge order), the merges
    kept as nodes with their children in document order, and the section or document each
    section node stands for."""

    merges: list[Merge]
    children: dict[int, list[int]]          # kept parent item -> child items
    segments: dict[int, Segment]            # kept item -> the segment it is the one root of
    roots: list[int]                         # top items in document order
    first_unit: list[int]                    # per item: first and last unit it covers
    last_unit: list[int]

    def kept(self) -> list[int]:
        """Kept parent items, children before parents."""
        return sorted(self.children)

    @property
    def titles(self) -> dict[int, tuple[str, ...] | str]:
        return {item: segment.title for item, segment in self.segments.items()}


def outline_segment(paths: Sequence[Sequence[str]], units: Sequence[int], title, single_root: bool,
                    level: int = 0) -> Segment:
    """Nest `units` (in document order) by their heading paths: a run of units under the same
    heading at `level` becomes a sub-segment; units with no heading at this level stay units.

    A unit filed under a section that has already ended (a footnote or a float that the page
    layout put after the next heading) stays where it is, inside the section it interrupts:
    otherwise it would cut that section in two, and "2 Related Work" would be two nodes."""
    segment = Segment(title, [], single_root)
    run: list[int] = []
    ended: set[str] = set()
    strays: set[int] = set()

    def close_run() -> None:
        heading = tuple(paths[run[0]][: level + 1])
        inner = paths
        if strays.intersection(run):   # inside the section a stray is one of its own passages
            inner = list(paths)
            for unit in strays.intersection(run):
                inner[unit] = heading
        segment.children.append(outline_segment(inner, run, heading, True, level + 1))
        ended.add(heading[-1])

    for unit in units:
        key = paths[unit][level] if len(paths[unit]) > level else None
        if run and key != paths[run[0]][level]:
            if key in ended:        # filed under a section already closed: a stray
                strays.add(unit)
                run.append(unit)
                continue
            close_run()
            run = []
        if key is None:
            segment.children.append(unit)
        else:
            run.append(unit)
    if run:
        close_run()
    return segment


def placed_headings(segment: Segment) -> dict[int, tuple[str, ...]]:
    """The heading path of the section the outline placed each unit in (a stray takes the path of
    the section it interrupts); units outside every section are left out."""
    placed: dict[int, tuple[str, ...]] = {}
    pending = [segment]
    while pending:
        current = pending.pop()
        for child in current.children:
            if isinstance(child, Segment):
                pending.append(child)
            elif isinstance(current.title, tuple):
                placed[child] = current.title
    return placed


def plan_tree(vectors: np.ndarray, sizes: Sequence[int], counts: Sequence[int], top: Segment, threshold: float,
              max_chars: int, calibrate: Callable[[float], float] = float, max_children: int = 10) -> TreePlan:
    """Merge by the seed's rule inside each segment (see the module docstring), then condense."""
    n = len(sizes)
    sums = [np.asarray(v, dtype=np.float64) for v in vectors]
    size, count = list(sizes), list(counts)
    first, last = list(range(n)), list(range(n))
    merges: list[Merge] = []
    plan = TreePlan(merges, {}, {}, [], first, last)
    below: dict[int, tuple[int, int]] = {}

    def merge_row(row: list[int], floor: float) -> list[int]:
        local = plan_merges(np.array([sums[i] for i in row]), [size[i] for i in row], floor, max_chars,
                            calibrate, [count[i] for i in row])
        items = list(row)
        for m in local:
            a, b, parent = items[m.left], items[m.right], len(sums)
            items.append(parent)
            sums.append(sums[a] + sums[b])
            size.append(size[a] + len(SEPARATOR) + size[b])
            count.append(count[a] + count[b])
            first.append(first[a])
            last.append(last[b])
            below[parent] = (a, b)
            merges.append(Merge(a, b, parent, m.similarity))
        merged = {i for pair in (below[p] for p in items[len(row):]) for i in pair}
        return sorted((i for i in items if i not in merged), key=lambda i: first[i])

    def build(segment: Segment) -> list[int]:
        units: list[int] = []
        sections: set[int] = set()   # units that are whole sections (a one-leaf section too)
        for child in segment.children:
            if isinstance(child, Segment):
                roots = build(child)
                units.extend(roots)
                if child.title is not None and len(roots) == 1:
                    sections.add(roots[0])
            else:
                units.append(child)
        roots = merge_row(units, threshold)
        if segment.single_root and len(roots) > 1:
            roots = merge_row(roots, -math.inf)
        atomic = set(units)
        for root in roots:
            if root not in atomic:
                _condense(root, atomic, sections, below, merges, first, plan.children, max_children)
        if len(roots) == 1 and roots[0] in plan.children and segment.title is not None:
            plan.segments[roots[0]] = segment
        return roots

    plan.roots = build(top)
    return plan


def _condense(root: int, atomic: set[int], sections: set[int], below: dict[int, tuple[int, int]],
              merges: list[Merge], first: list[int], children: dict[int, list[int]], max_children: int) -> None:
    """Choose the children of `root` and of every group under it down to the `atomic` units.

    The author's sections are a table of contents, not regrouped: a node keeps all its units as
    children while at most max_children of them are plain leaves (and max_children ** 2 in all)."""
    units: dict[int, int] = {}
    leaves: dict[int, int] = {}
    stack = [root]
    while stack:  # post-order without recursion: a chain can be thousands of merges deep
        item = stack[-1]
        if item in atomic:
            stack.pop()
            units[item], leaves[item] = 1, int(item not in sections)
        elif all(part in units for part in below[item]):
            stack.pop()
            left, right = below[item]
            units[item], leaves[item] = units[left] + units[right], leaves[left] + leaves[right]
        else:
            stack.extend(part for part in below[item] if part not in units)
    similarity = {m.parent: m.similarity for m in merges}
    pending = [root]
    while pending:
        item = pending.pop()
        total = units[item]
        if total <= max_children or (leaves[item] <= max_children and total <= max_children ** 2):
            wanted, capacity = total, 1
        else:
            levels = math.ceil(math.log(total) / math.log(max_children) - 1e-9)
            wanted = math.ceil(total ** (1 / levels) - 1e-9)
            capacity = max_children ** (levels - 1)
        frontier: list[int] = []
        # groups too big for the levels left are split first, then the loosest merges
        loosest = [(units[item] <= capacity, similarity[item], item)]
        while loosest and len(frontier) + len(loosest) < wanted:
            split = heapq.heappop(loosest)[2]
            for part in below[split]:
                if part in atomic:
                    frontier.append(part)
                else:
                    heapq.heappush(loosest, (units[part] <= capacity, similarity[part], part))
        groups = [entry[2] for entry in loosest]
        children[item] = sorted(frontier + groups, key=lambda i: first[i])
        pending.extend(groups)
