"""The read path of personal memory: what is known about a user that bears on a text, found at
once (process_memory's sync path, the memory tool's search). Hybrid: dense, BM25, the user's
knowledge graph and the time the text names, each standardised and added."""
from __future__ import annotations

from typing import Any

import numpy as np

from forest.config import Settings
from forest.models.embedders import Embedder
from forest.personal.graph import (
    NAMED,
    Triple,
    bearing_on,
    entities_in,
    entity_key,
    related,
    relation_relevance,
    relations_for,
)
from forest.personal.memory_store import PersonalMemoryRecord, PersonalStore
from forest.personal.timeframe import periods_in, within
from forest.storage.graphs.base import GraphStore


class PersonalRecall:
    def __init__(self, store: PersonalStore, embedder: Embedder, settings: Settings) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings

    def passage_vector(self, text: str) -> np.ndarray:
        """The one vector of an input: the passage the memory will be stored as, which also finds
        its context; a query embedding would be a second. What was said before it is not embedded
        (it would triple the cost of a write): BM25 reads it (storage.fulltext.fts5.CONTEXT_WEIGHT)."""
        return self.embedder.embed_passages([text])[0]

    def context(self, user_id: str, text: str,
                vector: np.ndarray) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
        """process_memory's context: the memories like the text and the relations around what it names."""
        _, relations = self.graph(user_id, text)
        return self.vector_chunks(user_id, text, vector), [t.to_dict() for t in relations]

    def graph(self, user_id: str, text: str) -> tuple[list[str], list[Triple]]:
        """The known entities the text names (the user for I, me, my) and the relations around them
        that bear on it (see relations_for); from the graph mirror when it answers for the user."""
        mirror = self.store.mirror
        walked = mirror.read(user_id, lambda graph: self._walk(graph, user_id, text)) if mirror else None
        return walked or relations_for(self.triples(user_id), text, user_id, self.settings.graph_max_depth,
                                       self.settings.graph_max_relations)

    def _walk(self, graph: GraphStore, user_id: str, text: str) -> tuple[list[str], list[Triple]]:
        """relations_for's answer, the walk run by the graph store: Cypher finds the edges within
        graph_max_depth hops of the entities named, and the same ranking keeps those that bear on
        the text (the edges are those the whole graph's walk would reach, in stored order)."""
        depth = self.settings.graph_max_depth
        start = entities_in(text, graph.entity_names(user_id), user_id)
        near = [Triple(e.source, e.relationship, e.target)
                for e in graph.within(user_id, [entity_key(name) for name in start], depth)]
        return start, bearing_on(text, user_id, start, related(near, start, depth, len(near)),
                                 self.settings.graph_max_relations)

    def vector_chunks(self, user_id: str, text: str, vector: np.ndarray) -> list[dict[str, Any]]:
        return [{"memory": record.memory, "score": round(score, 4), "id": record.id}
                for record, score in self.search(user_id, text, self.settings.vector_top_k, vector=vector)]

    def search(self, user_id: str, query: str, top_k: int, scope: dict[str, str | None] | None = None,
               metadata: dict[str, Any] | None = None,
               vector: np.ndarray | None = None) -> list[tuple[PersonalMemoryRecord, float]]:
        """Hybrid retrieval; the score returned is the memory's calibrated similarity to the query
        (`vector`: the query's, when already embedded)."""
        ids, combined, similarity = self._scores(user_id, query, scope, metadata, vector)
        best = [ids[i] for i in np.argsort(-combined, kind="stable")[:top_k]]
        records = self.store.memories_by_id(user_id, best)
        return [(records[i], similarity[i]) for i in best if i in records]

    def _scores(self, user_id: str, query: str, scope: dict[str, str | None] | None = None,
                metadata: dict[str, Any] | None = None,
                vector: np.ndarray | None = None) -> tuple[list[int], np.ndarray, dict[int, float]]:
        """Every live memory's combined score, from four routes:
        - dense: exact cosine over the user's memories (a user holds thousands, not millions);
        - lexical: BM25 (FTS5) with our tokenizer, every query term a quoted phrase;
        - graph: memories stating facts about the entities the query names or their neighbours in
          the user's graph, in proportion to how many;
        - time: when the query names a period (a year, a month, a date), the memories said in it.
        Dense and BM25 scores live on different scales, so each is standardised over the user's
        memories (z-score) and added, and so are the graph route's fact counts; a time match adds
        one standard deviation (a period is coarse: it holds whole sessions). On LoCoMo's dev
        conversations the z-score sum beat reciprocal rank fusion (bench/eval_locomo.py)."""
        ids, matrix = self.store.vectors(user_id, self.embedder.name, scope, metadata)
        if not ids:
            return [], np.zeros(0), {}
        cosine = matrix @ (self.embedder.embed_query(query) if vector is None else vector)
        similarity = dict(zip(ids, map(float, np.asarray(self.embedder.calibrate(cosine), dtype=float))))
        lexical = dict(self.store.lexical(user_id, query, len(ids), scope, metadata))
        combined = _standardised(cosine) + _standardised(np.array([lexical.get(i, 0.0) for i in ids]))
        facts = self._graph_memories(user_id, query)
        if facts:  # specific evidence, standardised like the other routes: a rare match weighs much
            combined += _standardised(np.array([float(facts.get(i, 0)) for i in ids]))
        periods = periods_in(query)
        if periods:
            said = self.store.times(user_id)
            combined += np.array([1.0 if within(said.get(i), periods) else 0.0 for i in ids])
        return ids, combined, similarity

    def _graph_memories(self, user_id: str, query: str) -> dict[int, int]:
        """Memory id -> facts it states about the entities one hop away from those the query names,
        along a relation the query names ("Tom's wife" follows Tom -is married to-> Anna and finds
        what is said about Anna). The first hop's own memories name the entity, so words and
        vectors find them; the graph adds the second hop, which shares no word with the question."""
        triples = self.triples(user_id)
        start = {entity_key(e) for e in entities_in(query, {t.source for t in triples} | {t.target for t in triples},
                                                    user_id)}
        if not start:
            return {}
        relevance = relation_relevance(query)
        reached: set[str] = set()
        for t in triples:
            ends = (entity_key(t.source), entity_key(t.target))
            # the relation named: a where/who alone would reach every place or person
            if (ends[0] in start) != (ends[1] in start) and relevance(t.relationship) == NAMED:
                reached.add(ends[1] if ends[0] in start else ends[0])
        return self.store.fact_memories(user_id, sorted(reached))

    def triples(self, user_id: str) -> list[Triple]:
        return [Triple(*t) for t in self.store.triples(user_id)]


def _standardised(values: np.ndarray) -> np.ndarray:
    """(x - mean) / standard deviation; all zeros when the values do not vary."""
    spread = float(values.std())
    return (values - values.mean()) / spread if spread > 0 else np.zeros_like(values, dtype=float)
