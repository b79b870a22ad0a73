"""Recall over a model_id's forest, as the spec's retrieve_from_memory and drill-down ask: global
vector search, hits collapsed to their lowest common ancestor per tree, one-level drill-down with a
reranker, and a budgeted context."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from typing import TypeVar

import numpy as np

from forest.models.embedders import Embedder
from forest.storage.fulltext.fts5 import query_phrases
from forest.storage.paths import common_ancestor_path, path_ids
from forest.records import ContextResult, MemoryNode, Representative, ScoredNode
from forest.references import is_reference_node
from forest.models.rerankers import Candidate, Reranker
from forest.storage.archives import ForestStore
from forest.text import content_terms, estimate_tokens, term_coverage
from forest.storage.vectors.base import VectorStore

HINT_LCA = ("Lowest common ancestor of {n} related hits ({ids}); likely a high-level summary. "
            "Explore it to reach the passages.")
HINT_LEAF = "A single, highly relevant leaf chunk (original text)."
HINT_SUMMARY = "A single relevant summary node; explore it for the details underneath."
# The budgeted context searches this many times top_k hits: they only choose trees and subtrees.
CONTEXT_BREADTH = 3
MAX_POOL = 200  # leaves ranked per tree
RRF_K = 60      # the usual constant of reciprocal rank fusion (Cormack et al., 2009)
# Extra vector hits fetched while some archive of the model_id is still being built, so hits
# from invisible archives do not crowd out visible ones.
UNFINISHED_MARGIN = 3


T = TypeVar("T")


class Retriever:
    def __init__(self, store: ForestStore, vectors: VectorStore, embedder: Embedder, reranker: Reranker,
                 vector_weight: float = 0.7, fusion: str = "weighted") -> None:
        self.store = store
        self.vector_weight = vector_weight
        self.fusion = fusion
        self.vectors = vectors
        self.embedder = embedder
        self.reranker = reranker

    def search(self, model_id: str, query: str, top_k: int, mode: str = "vector",
               archive_ids: Collection[int] | None = None) -> list[ScoredNode]:
        """Raw hits within the model_id (within `archive_ids` if given), best first, scores 0-1.

        vector: calibrated cosine. bm25: FTS5 BM25 divided by the best hit's. hybrid: both lists
        (each 2 x top_k deep) fused, by weight (hybrid_vector_weight on vector, the rest on BM25,
        a node missing from one list scoring 0 there) or by reciprocal rank fusion.
        """
        if mode == "vector":
            return self._vector_hits(model_id, query, top_k, archive_ids)
        if mode == "bm25":
            return self._text_hits(model_id, query, top_k, archive_ids)
        if mode != "hybrid":
            raise ValueError(f"unknown search mode {mode!r}")
        depth = top_k * 2
        vector = self._vector_hits(model_id, query, depth, archive_ids)
        text = self._text_hits(model_id, query, depth, archive_ids)
        nodes = {h.node.id: h.node for h in vector + text}
        ids = list(nodes)
        by_vector = {h.node.id: h.relevance_score for h in vector}
        by_text = {h.node.id: h.relevance_score for h in text}
        if self.fusion == "rrf":
            fused = reciprocal_rank_fusion([[by_vector.get(i, -1.0) for i in ids], [by_text.get(i, -1.0) for i in ids]])
        else:
            w = self.vector_weight
            fused = [w * by_vector.get(i, 0.0) + (1 - w) * by_text.get(i, 0.0) for i in ids]
        ranked = sorted(zip(ids, fused), key=lambda pair: (-pair[1], pair[0]))[:top_k]
        return [ScoredNode(nodes[i], round(score, 6)) for i, score in ranked]

    def _vector_hits(self, model_id: str, query: str, top_k: int,
                     archive_ids: Collection[int] | None = None) -> list[ScoredNode]:
        query_vector = self.embedder.embed_query(query)
        if archive_ids is None:
            fetch = top_k * UNFINISHED_MARGIN if self.store.has_unfinished(model_id) else top_k
            hits = self.vectors.query(model_id, query_vector, fetch)
        else:
            hits = self._exact_hits(model_id, query_vector, top_k, archive_ids)
        nodes = self.store.nodes(model_id, (node_id for node_id, _ in hits))
        found = [ScoredNode(nodes[i], round(float(self.embedder.calibrate(cos)), 6))
                 for i, cos in hits if i in nodes]
        return found[:top_k]

    def _exact_hits(self, model_id: str, query_vector: np.ndarray, top_k: int,
                    archive_ids: Collection[int]) -> list[tuple[int, float]]:
        """(node id, cosine) of the archives' nodes nearest the query, by exact cosine over their
        stored vectors: the index has no archive filter (one collection per model_id, unfiltered,
        is what keeps the model_id's search fast), and a few papers' vectors are read at once."""
        ids = [node_id for archive_id in sorted(set(archive_ids))
               for node_id in self.store.archive_node_ids(archive_id)]
        return nearest(self.vectors.get_vectors(model_id, ids), query_vector, top_k)

    def _text_hits(self, model_id: str, query: str, top_k: int,
                   archive_ids: Collection[int] | None = None) -> list[ScoredNode]:
        phrases = query_phrases(query)
        if not phrases:
            return []
        hits = self.store.text_search(model_id, phrases, top_k, archive_ids)
        best = max((score for _, score in hits), default=0.0)
        return [ScoredNode(node, round(score / best, 6) if best > 0 else 0.0) for node, score in hits]

    def retrieve(self, model_id: str, query: str, top_k: int, mode: str = "vector",
                 archive_ids: Collection[int] | None = None) -> list[Representative]:
        return self._collapse(model_id, self.search(model_id, query, top_k, mode, archive_ids))

    def retrieve_each(self, model_id: str, queries: Sequence[str], top_k: int,
                      archive_ids: Collection[int]) -> list[dict[int, list[Representative]]]:
        """For each query, {archive id: its representatives} as retrieve(model_id, query, top_k,
        "vector", [archive id]) gives them, archive by archive, from one read of the archives'
        vectors and one embedding per query: what asking every paper every question costs once."""
        node_ids = {archive_id: self.store.archive_node_ids(archive_id) for archive_id in sorted(set(archive_ids))}
        stored = self.vectors.get_vectors(model_id, [i for ids in node_ids.values() for i in ids])
        own = {archive_id: {i: stored[i] for i in ids if i in stored} for archive_id, ids in node_ids.items()}
        answers = []
        for query in queries:
            query_vector = self.embedder.embed_query(query)
            nearby = {archive_id: nearest(vectors, query_vector, top_k) for archive_id, vectors in own.items()}
            nodes = self.store.nodes(model_id, (i for hits in nearby.values() for i, _ in hits))
            answers.append({archive_id: self._collapse(model_id, [
                ScoredNode(nodes[i], round(float(self.embedder.calibrate(cos)), 6)) for i, cos in hits if i in nodes])
                for archive_id, hits in nearby.items()})
        return answers

    def _collapse(self, model_id: str, hits: list[ScoredNode]) -> list[Representative]:
        """One representative per tree touched: its single hit, or the LCA of its hits."""
        groups: dict[tuple[int, int], list[ScoredNode]] = defaultdict(list)
        for hit in hits:
            # One group per tree: an archive whose merging stopped early has several roots.
            groups[(hit.node.archive_id, path_ids(hit.node.path)[0])].append(hit)
        representatives = []
        for (archive_id, _), members in groups.items():
            best = max(m.relevance_score for m in members)
            ids = [m.node.id for m in members]
            if len(members) == 1:
                node = members[0].node
                representatives.append(Representative(node, "hit", best, ids,
                                                      HINT_LEAF if node.is_leaf else HINT_SUMMARY, members))
                continue
            lca = self._lowest_common_ancestor(model_id, archive_id, [m.node for m in members])
            hint = HINT_LCA.format(n=len(ids), ids=", ".join(map(str, ids)))
            representatives.append(Representative(lca, "lca", best, ids, hint, members))
        representatives.sort(key=lambda r: -r.score)
        return representatives

    def _lowest_common_ancestor(self, model_id: str, archive_id: int, nodes: list[MemoryNode]) -> MemoryNode:
        path = common_ancestor_path([n.path for n in nodes])
        lca = self.store.node_by_path(model_id, archive_id, path) if path else None
        if lca is None:  # inconsistent paths (see `forest doctor`): fall back to the shallowest hit
            return min(nodes, key=lambda n: (n.depth, n.id))
        return lca

    def drill_down(self, model_id: str, node_id: int, query: str, threshold: float) -> list[ScoredNode]:
        """Direct children of `node_id` reranked against `query`, those scoring >= threshold.

        A leaf has no children: it returns itself with score 1.0, as the spec's drill-down asks.
        """
        node = self.store.node(model_id, node_id)
        children = self.store.children(model_id, node_id)
        if not children:
            return [ScoredNode(node, 1.0)]
        scored = self.rerank(model_id, query, children)
        return [s for s in scored if s.relevance_score >= threshold]

    def rerank(self, model_id: str, query: str, nodes: list[MemoryNode]) -> list[ScoredNode]:
        """The nodes scored against the query by the reranker (their stored vectors), best first."""
        stored = self.vectors.get_vectors(model_id, [n.id for n in nodes])
        candidates = [Candidate(n.id, n.summary if n.is_leaf else f"{n.title or ''}\n{n.summary}".strip(), n.content,
                                stored.get(n.id)) for n in nodes]
        scores = self.reranker.score(query, candidates)
        ranked = [ScoredNode(n, s) for n, s in zip(nodes, scores)]
        ranked.sort(key=lambda s: (-s.relevance_score, s.node.first_leaf or 0))
        return ranked

    def context(self, model_id: str, question: str, budget_tokens: int, top_k: int,
                mode: str = "vector", archive_ids: Collection[int] | None = None) -> ContextResult:
        """The leaves to put in a prompt, best first, within `budget_tokens` (from `archive_ids`
        only, if given).

        1. Search wide: CONTEXT_BREADTH x top_k hits over every node of the forest.
        2. Collapse each tree's hits to their lowest common ancestor (as retrieve does) and drill
           to all the leaves under it in one pass (at most MAX_POOL per tree, around the hits).
        3. Order the pool in two levels. Trees compete by their leaves' own match: the order of
           all leaves by cosine and by the share of the question's words they hold, rank-fused,
           fixes which tree fills each place (a paper's own terms, "SearchQA", "BLEU", pick the
           paper). Inside a tree, places go to its leaves by their own cosine.
        4. Take leaves in that order while they fit in the budget.
        Reference-list passages (forest.references) are left out.

        Chosen on QASPER (bench/eval_qasper.py; figures in docs/benchmarks.md): across papers
        coverage picks the paper more often; inside a paper it lowers recall, and so did a section
        prior (the cosine of the parent's centroid), which failed on held-out papers.
        """
        result = ContextResult(question, budget_tokens, 0)
        hits = self.search(model_id, question, top_k * CONTEXT_BREADTH, mode, archive_ids)
        pool: dict[int, MemoryNode] = {}
        for representative in self._collapse(model_id, hits):
            result.explored.append(representative.node.id)
            for window in _windows(representative, hits, MAX_POOL):
                pool.update((n.id, n) for n in self.store.leaves_between(
                    model_id, representative.node.archive_id, *window))
        stored = self.vectors.get_vectors(model_id, list(pool))
        # a reference list holds every name a question uses, and answers none of them
        leaves = [n for n in pool.values() if n.id in stored and not is_reference_node(n)]
        if not leaves:
            return result
        matrix = np.stack([stored[n.id] for n in leaves]).astype(np.float32)
        query = self.embedder.embed_query(question)
        own = matrix @ query
        terms = set(content_terms(question))
        across = reciprocal_rank_fusion([list(own), [term_coverage(terms, n.content) for n in leaves]])
        scores = self.embedder.calibrate(own)
        ranked = [ScoredNode(leaves[i], round(float(scores[i]), 6)) for i in tree_ordered(leaves, across, own)]
        result.leaves, result.used_tokens = fill_budget(ranked, lambda s: estimate_tokens(s.node.content),
                                                        budget_tokens)
        return result


def nearest(stored: dict[int, np.ndarray], query_vector: np.ndarray, top_k: int) -> list[tuple[int, float]]:
    """(node id, cosine) of the `top_k` stored vectors nearest the query, best first, ties by node id."""
    if not stored or top_k <= 0:
        return []
    found = sorted(stored)
    matrix = np.stack([stored[i] for i in found]).astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(query_vector)), 1e-12)
    cosines = matrix @ np.asarray(query_vector, dtype=np.float32) / np.where(norms == 0, 1.0, norms)
    best = np.argsort(-cosines, kind="stable")[:top_k]
    return [(found[i], float(cosines[i])) for i in best]


def tree_ordered(leaves: list[MemoryNode], across: Sequence[float], within: Sequence[float]) -> list[int]:
    """Indexes of `leaves` in context order: the place of each leaf in the order by `across`
    goes to the best leaf of the same archive by `within` not placed yet (ties by node id)."""
    by_archive: dict[int, list[int]] = defaultdict(list)
    for i in sorted(range(len(leaves)), key=lambda i: (-within[i], leaves[i].id)):
        by_archive[leaves[i].archive_id].append(i)
    taken: dict[int, int] = defaultdict(int)
    order = []
    for i in sorted(range(len(leaves)), key=lambda i: (-across[i], leaves[i].id)):
        archive = leaves[i].archive_id
        order.append(by_archive[archive][taken[archive]])
        taken[archive] += 1
    return order


def fill_budget(ranked: Sequence[T], cost: Callable[[T], int], budget: int) -> tuple[list[T], int]:
    """Items in rank order, each taken if it fits in what is left (a big one is skipped, not a stop)."""
    taken, used = [], 0
    for item in ranked:
        if used >= budget:
            break
        price = cost(item)
        if used + price <= budget:
            taken.append(item)
            used += price
    return taken, used


def reciprocal_rank_fusion(scores: list[list[float]], k: int = RRF_K) -> list[float]:
    """Fused 0-1 score per item: sum over rankings of 1/(k + rank), ties sharing their best rank,
    divided by the score of an item ranked first everywhere."""
    fused = [0.0] * len(scores[0])
    for ranking in scores:
        order = sorted(range(len(ranking)), key=lambda i: -ranking[i])
        rank = 0
        for position, i in enumerate(order):
            if position == 0 or ranking[i] != ranking[order[position - 1]]:
                rank = position + 1
            fused[i] += 1 / (k + rank)
    top = len(scores) / (k + 1)
    return [value / top for value in fused]


def _windows(representative: Representative, hits: list[ScoredNode], size: int) -> list[tuple[int, int]]:
    """Leaf ranges under the representative: all of it if it has at most `size` leaves, else a
    window around each of its hits (sharing `size` leaves between them), so no hit is left out."""
    first, last = representative.node.first_leaf, representative.node.last_leaf
    if last - first + 1 <= size:
        return [(first, last)]
    spans = sorted((h.node.first_leaf, h.node.last_leaf) for h in hits if h.node.id in representative.hit_ids)
    spans = spans or [(first, first)]
    margin = max(1, size // (2 * len(spans)))
    wanted = []
    for start, stop in spans:
        if stop - start > 2 * margin:  # a summary hit with many leaves: the middle of its range
            start = stop = (start + stop) // 2
        wanted.append((max(first, start - margin), min(last, stop + margin)))
    ranges: list[tuple[int, int]] = []
    for start, stop in sorted(wanted):
        if ranges and start <= ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], max(ranges[-1][1], stop))
        else:
            ranges.append((start, stop))
    return ranges
