"""The read path of personal memory: what is known about a user that bears on a text, found at
once (process_memory's sync path, the memory tool's search). Hybrid: dense, BM25, the user's
knowledge graph and the time the text names, each standardised and added."""
from __future__ import annotations

import re
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
from forest.personal.memory_store import PersonalStore
from forest.personal.records import MemoryHit, PersonalMemoryRecord
from forest.personal.timeframe import asks_when, periods_in, says_when, within
from forest.personal.turns import CONVERSATION_GAP_SECONDS, first_person, speaker_of
from forest.storage.graphs.base import GraphStore

# The top k is chosen among this many of the best combined scores, each in turn the best
# after its redundancy with those already chosen is taken off (maximal marginal relevance).
DIVERSITY_POOL = 30
# Half a standard deviation: the person a question names is a hint, not proof (a question may
# name the other speaker: "What did Caroline tell Melanie?").
SAID_BY_THE_ONE_ASKED_ABOUT = 0.5
# An answer is worth less than the question it follows matched: it is found through it.
ANSWER_BELOW_QUESTION = 1.0
# One standard deviation for a memory whose words say when, if the question asks when.
SAYS_WHEN = 1.0
# The most the signals read from a memory's words add to its score (who said it, and when).
MOST_THE_WORDS_ADD = SAID_BY_THE_ONE_ASKED_ABOUT + SAYS_WHEN


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
                vector: np.ndarray) -> tuple[list[MemoryHit], list[Triple]]:
        """process_memory's context: the memories like the text and the relations around what it names."""
        _, relations = self.graph(user_id, text)
        return self.vector_chunks(user_id, text, vector), relations

    def graph(self, user_id: str, text: str) -> tuple[list[str], list[Triple]]:
        """The known entities the text names (the user for I, me, my) and the relations around them
        that bear on it (see relations_for); from the graph mirror when it answers for the user."""
        speaker = first_person(text, user_id)   # "I" in a transcript's turn is its speaker, as on writes
        mirror = self.store.mirror
        walked = mirror.read(user_id, lambda graph: self._walk(graph, user_id, speaker, text)) if mirror else None
        return walked or relations_for(self.triples(user_id), text, speaker, self.settings.graph_max_depth,
                                       self.settings.graph_max_relations)

    def _walk(self, graph: GraphStore, user_id: str, speaker: str, text: str) -> tuple[list[str], list[Triple]]:
        """relations_for's answer, the walk run by the graph store: Cypher finds the edges within
        graph_max_depth hops of the entities named, and the same ranking keeps those that bear on
        the text (the edges are those the whole graph's walk would reach, in stored order)."""
        depth = self.settings.graph_max_depth
        start = entities_in(text, graph.entity_names(user_id), speaker)
        near = [Triple(e.source, e.relationship, e.target)
                for e in graph.within(user_id, [entity_key(name) for name in start], depth)]
        return start, bearing_on(text, speaker, start, related(near, start, depth, len(near)),
                                 self.settings.graph_max_relations)

    def vector_chunks(self, user_id: str, text: str, vector: np.ndarray) -> list[MemoryHit]:
        return [MemoryHit(record, score)
                for record, score in self.search(user_id, text, self.settings.vector_top_k, vector=vector)]

    def search(self, user_id: str, query: str, top_k: int, scope: dict[str, str | None] | None = None,
               metadata: dict[str, Any] | None = None,
               vector: np.ndarray | None = None) -> list[tuple[PersonalMemoryRecord, float]]:
        """Hybrid retrieval; the score returned is the memory's calibrated similarity to the query
        (`vector`: the query's, when already embedded)."""
        pool_size = max(top_k, DIVERSITY_POOL)
        ids, combined, similarity, matrix = self._scores(user_id, query, scope, metadata, vector, pool_size)
        pool = np.argsort(-combined, kind="stable")[:pool_size]
        redundancy = self.embedder.calibrate(matrix[pool] @ matrix[pool].T)
        best = [ids[i] for i in diverse(pool, combined, redundancy, top_k)]
        records = self.store.memories_by_id(user_id, best)
        return [(records[i], similarity[i]) for i in best if i in records]

    def _scores(self, user_id: str, query: str, scope: dict[str, str | None] | None = None,
                metadata: dict[str, Any] | None = None, vector: np.ndarray | None = None,
                pool_size: int = DIVERSITY_POOL) -> tuple[list[int], np.ndarray, dict[int, float], np.ndarray]:
        """Every live memory's combined score (and the memories' vectors), from these routes:
        - dense: exact cosine over the user's memories (a user holds thousands, not millions);
        - lexical: BM25 (FTS5) with our tokenizer, every query term a quoted phrase;
        - graph: memories stating facts about the entities the query names or their neighbours in
          the user's graph, in proportion to how many;
        - time: when the query names a period (a year, a month, a date), the memories said in it;
          when it asks when something happened, the memories that say when (a date, "last week").
        Dense and BM25 scores live on different scales, so each is standardised over the user's
        memories (z-score) and added, and so are the graph route's fact counts; a time match adds
        one standard deviation (a period is coarse: it holds whole sessions), and so does a time
        said in a memory when the query asks when. On LoCoMo's dev
        conversations the z-score sum beat reciprocal rank fusion (bench/eval_locomo.py).
        The signals read from a memory's words (who said it, whether it says when, whether it
        answers a question) are worked out only for the memories they could lift into the best
        `pool_size`; the others keep the score they have, which ranks them the same."""
        ids, matrix = self.store.vectors(user_id, self.embedder.name, scope, metadata)
        if not ids:
            return [], np.zeros(0), {}, matrix
        cosine = matrix @ (self.embedder.embed_query(query) if vector is None else vector)
        similarity = dict(zip(ids, map(float, np.asarray(self.embedder.calibrate(cosine), dtype=float))))
        lexical = dict(self.store.lexical(user_id, query, len(ids), scope, metadata))
        combined = _standardised(cosine) + _standardised(np.array([lexical.get(i, 0.0) for i in ids]))
        facts = self._graph_memories(user_id, query)
        if facts:  # specific evidence, standardised like the other routes: a rare match weighs much
            combined += _standardised(np.array([float(facts.get(i, 0)) for i in ids]))
        times = self.store.said_at(user_id)   # one deleted since the vectors were read: no time, no words
        said_at = [times.get(i) for i in ids]
        periods = periods_in(query)
        if periods:
            combined += np.array([1.0 if within(at, periods) else 0.0 for at in said_at])
        return ids, _words_read(query, combined, said_at, self._words(user_id, ids, combined, said_at, pool_size)), \
            similarity, matrix

    def _words(self, user_id: str, ids: list[int], combined: np.ndarray, said_at: list[float | None],
               pool_size: int) -> dict[int, str]:
        """Index -> words of the memories the word signals could lift into the best `pool_size`:
        those within the most they add of the pool's last score, and the memory said right after
        each (an answer follows its question)."""
        cutoff = np.sort(combined)[-min(pool_size, len(combined))] - MOST_THE_WORDS_ADD
        reach = {int(n) for n in np.flatnonzero(combined >= cutoff)}
        order = sorted((at, n) for n, at in enumerate(said_at) if at is not None)
        reach |= {m for (_, n), (_, m) in zip(order, order[1:]) if n in reach}
        said = self.store.said(user_id, [ids[n] for n in sorted(reach)])
        return {n: said[ids[n]] for n in reach if ids[n] in said}

    def _graph_memories(self, user_id: str, query: str) -> dict[int, int]:
        """Memory id -> facts it states about the entities one hop away from those the query names,
        along a relation the query names ("Tom's wife" follows Tom -is married to-> Anna and finds
        what is said about Anna). The first hop's own memories name the entity, so words and
        vectors find them; the graph adds the second hop, which shares no word with the question."""
        triples = self.triples(user_id)
        start = {entity_key(e) for e in entities_in(query, {t.source for t in triples} | {t.target for t in triples},
                                                    first_person(query, user_id))}
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


def _words_read(query: str, combined: np.ndarray, said_at: list[float | None], words: dict[int, str]) -> np.ndarray:
    """The combined scores with what the memories' `words` (index -> text, those read) add: who
    said them, whether they say when, and the answer after a question that matched."""
    out = combined.copy()
    for n, bonus in _said_by_the_one_asked_about(query, words).items():
        out[n] += bonus
    if asks_when(query):
        for n, text in words.items():
            out[n] += SAYS_WHEN if says_when(text) else 0.0
    return _answers_follow(out, said_at, words)


def _said_by_the_one_asked_about(query: str, words: dict[int, str]) -> dict[int, float]:
    """SAID_BY_THE_ONE_ASKED_ABOUT (in standard deviations) for each turn said by the person the
    question names, when the memories read are turns of several people ("What do Melanie's kids
    like?" is answered by what Melanie said, not by Caroline's "How did your kids like it?")."""
    speakers = {n: speaker_of(text) for n, text in words.items()}
    everyone = set(speakers.values()) - {None}
    named = {s for s in everyone if re.search(rf"(?<!\w){re.escape(s)}(?!\w)", query, re.I)}
    if not named or named == everyone:
        return {}
    return {n: SAID_BY_THE_ONE_ASKED_ABOUT for n, speaker in speakers.items() if speaker in named}


def _answers_follow(combined: np.ndarray, said_at: list[float | None], words: dict[int, str]) -> np.ndarray:
    """A question that matches well is answered by what is said next: the memory said right after
    a memory that asks (in the same conversation) scores at least the question's score less
    ANSWER_BELOW_QUESTION standard deviations."""
    order = sorted((at, n) for n, at in enumerate(said_at) if at is not None)
    out = combined.copy()
    for (at, n), (next_at, m) in zip(order, order[1:]):
        if next_at - at <= CONVERSATION_GAP_SECONDS and words.get(n, "").rstrip().endswith(("?", "？")):
            out[m] = max(out[m], combined[n] - ANSWER_BELOW_QUESTION)
    return out


def diverse(pool: np.ndarray, relevance: np.ndarray, redundancy: np.ndarray, k: int) -> list[int]:
    """Maximal marginal relevance: of the `pool` (indexes into `relevance`, best first), k chosen
    one at a time, each the most relevant once its greatest redundancy (calibrated similarity, 0-1,
    `redundancy[a, b]` between pool members a and b) with those chosen is taken off: a near
    repeat of a chosen memory loses one standard deviation, so five memories saying the same do
    not fill the list while other evidence of the question waits below."""
    chosen: list[int] = []
    penalty = np.zeros(len(pool))
    left = np.ones(len(pool), dtype=bool)
    for _ in range(min(k, len(pool))):
        pick = int(np.argmax(np.where(left, relevance[pool] - penalty, -np.inf)))
        chosen.append(int(pool[pick]))
        left[pick] = False
        penalty = np.maximum(penalty, redundancy[pick])
    return chosen


def _standardised(values: np.ndarray) -> np.ndarray:
    """(x - mean) / standard deviation; all zeros when the values do not vary."""
    spread = float(values.std())
    return (values - values.mean()) / spread if spread > 0 else np.zeros_like(values, dtype=float)
