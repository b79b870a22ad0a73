"""Recall over a model_id's forest (seed 000 §4.3): global vector search, hits collapsed to their
lowest common ancestor per tree, one-level drill-down with a reranker, and a budgeted context."""
from __future__ import annotations

import heapq
from collections import defaultdict

from forest.embedders import Embedder
from forest.paths import common_ancestor_path, path_ids
from forest.records import ContextResult, MemoryNode, Representative, ScoredNode
from forest.rerankers import Candidate, Reranker
from forest.store import ForestStore
from forest.text import estimate_tokens
from forest.vectors import VectorStore

HINT_LCA = ("Lowest common ancestor of {n} related hits ({ids}); likely a high-level summary. "
            "Explore it to reach the passages.")
HINT_LEAF = "A single, highly relevant leaf chunk (original text)."
HINT_SUMMARY = "A single relevant summary node; explore it for the details underneath."
# Extra vector hits fetched while some archive of the model_id is still being built, so hits
# from invisible archives do not crowd out visible ones.
UNFINISHED_MARGIN = 3


class Retriever:
    def __init__(self, store: ForestStore, vectors: VectorStore, embedder: Embedder, reranker: Reranker) -> None:
        self.store = store
        self.vectors = vectors
        self.embedder = embedder
        self.reranker = reranker

    def search(self, model_id: str, query: str, top_k: int) -> list[ScoredNode]:
        """Raw global vector hits within the model_id, best first (scores on the 0-1 scale)."""
        query_vector = self.embedder.embed_query(query)
        fetch = top_k * UNFINISHED_MARGIN if self.store.has_unfinished(model_id) else top_k
        hits = self.vectors.query(model_id, query_vector, fetch)
        nodes = self.store.nodes(model_id, (node_id for node_id, _ in hits))
        found = [ScoredNode(nodes[i], round(float(self.embedder.calibrate(cos)), 6))
                 for i, cos in hits if i in nodes]
        return found[:top_k]

    def retrieve(self, model_id: str, query: str, top_k: int) -> list[Representative]:
        hits = self.search(model_id, query, top_k)
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
                                                      HINT_LEAF if node.is_leaf else HINT_SUMMARY))
                continue
            lca = self._lowest_common_ancestor(model_id, archive_id, [m.node for m in members])
            hint = HINT_LCA.format(n=len(ids), ids=", ".join(map(str, ids)))
            representatives.append(Representative(lca, "lca", best, ids, hint))
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

        A leaf has no children: it returns itself with score 1.0 (seed 000 §4.3).
        """
        node = self.store.node(model_id, node_id)
        children = self.store.children(model_id, node_id)
        if not children:
            return [ScoredNode(node, 1.0)]
        scored = self._rerank(model_id, query, children)
        return [s for s in scored if s.relevance_score >= threshold]

    def _rerank(self, model_id: str, query: str, nodes: list[MemoryNode]) -> list[ScoredNode]:
        stored = self.vectors.get_vectors(model_id, [n.id for n in nodes])
        candidates = [Candidate(n.id, n.summary, n.content, stored.get(n.id)) for n in nodes]
        scores = self.reranker.score(query, candidates)
        ranked = [ScoredNode(n, s) for n, s in zip(nodes, scores)]
        ranked.sort(key=lambda s: (-s.relevance_score, s.node.first_leaf or 0))
        return ranked

    def context(self, model_id: str, question: str, budget_tokens: int, top_k: int,
                threshold: float) -> ContextResult:
        """Best-first search from the representatives down to leaves, filling the token budget.

        Every frontier node carries its reranker score against the question. The best node is
        taken: a leaf goes into the context if it fits; a summary node is replaced by its children
        that clear the threshold (or at least its best child, so a drill always reaches text).
        """
        result = ContextResult(question, budget_tokens, 0)
        representatives = self.retrieve(model_id, question, top_k)
        if not representatives:
            return result
        frontier: list[tuple[float, int, MemoryNode]] = []
        seen: set[int] = set()

        def push(scored: list[ScoredNode]) -> None:
            for s in scored:
                if s.node.id not in seen:
                    seen.add(s.node.id)
                    heapq.heappush(frontier, (-s.relevance_score, s.node.id, s.node))

        push(self._rerank(model_id, question, [r.node for r in representatives]))
        while frontier and result.used_tokens < budget_tokens:
            negative_score, _, node = heapq.heappop(frontier)
            if node.is_leaf:
                cost = estimate_tokens(node.content)
                if result.used_tokens + cost <= budget_tokens:
                    result.leaves.append(ScoredNode(node, -negative_score))
                    result.used_tokens += cost
                continue
            result.explored.append(node.id)
            children = self._rerank(model_id, question, self.store.children(model_id, node.id))
            push([c for c in children if c.relevance_score >= threshold] or children[:1])
        return result

