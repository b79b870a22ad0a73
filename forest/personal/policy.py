"""What a write keeps and what it replaces: the privacy decision (private information is kept,
general knowledge is left to the main model), updates (a new value of a one-value fact, or an
ending said outright, ends the earlier fact: forest.personal.updates) and contradictions (a
memory that denies an earlier one about the same subject supersedes it).

A write is planned outside any transaction (classification, embedding, fact extraction: the slow
part, with Claude a request each) and applied in a short one."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from forest.config import Settings
from forest.models.embedders import Embedder
from forest.personal.graph import Triple, TripleExtractor, clause_statements, entity_key
from forest.personal.memory_store import PersonalStore, QueuedInput
from forest.personal.records import PersonalMemoryRecord
from forest.personal.privacy import PRIVATE, PrivacyClassifier
from forest.personal.turns import CONVERSATION_GAP_SECONDS, first_person, words_of
from forest.personal.updates import NEGATION, UpdateJudge, new_value_in_same_frame, says_a_change, without_change_words
from forest.text import matching_terms

# The same statement, one side negated or with a new value, when their calibrated similarity
# reaches this and, for a negation, this share of the content words of each is in the other (chat
# turns on one subject are all alike to an embedder: "Keep it up!" does not take back "Keep going
# for your dreams and don't quit!").
SAME_STATEMENT = 0.75
# A new value in the same frame, said as a change: among the FRAME_READ closest memories, from this
# similarity (half-way from unrelated to the same): "My favourite food is pizza these days" is no
# closer than that to "… is sushi", and a chat says "now" often (reading every memory that alike
# would cost each such turn hundreds of reads).
SAME_FRAME = 0.5
FRAME_READ = 8
SAME_WORDS = 0.6
CLOSE_READ_AT_ONCE = 8
# With an LLM configured, it is also asked about the person's closest memories: this many (less
# those the rules propose), from those at least this alike (calibrated: half-way from unrelated to
# the same).
LLM_ASKED_ABOUT = 3
ALIKE_ENOUGH_TO_ASK = SAME_FRAME
_CJK_END = re.compile(r"[\u4e00-\u9fff]$")


@dataclass
class WritePlan:
    """A write worked out outside the transaction; WritePolicy.apply commits it in a short one."""
    user_id: str
    text: str
    scope: dict[str, str | None]
    metadata: dict[str, Any]
    at: float
    actor: str
    privacy: dict[str, str]
    vector: np.ndarray | None = None
    triples: list[Triple] | None = None
    queue_item: int | None = None   # process_memory input: its queue id (what was said before it is its context)
    # What the statement updates, worked out before the transaction (forest.personal.updates): the
    # facts it says ended, what a configured LLM decided, and the vectors of the clauses that
    # earlier memories keep.
    ending: list[tuple[str, str, str]] = field(default_factory=list)
    judged: set[int] = field(default_factory=set)       # the memories an LLM answered for
    named: dict[int, str] = field(default_factory=dict)  # ... and said are replaced: id -> the text it saw
    kept_vectors: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def rejected(self) -> set[int]:
        """The memories an LLM was shown and did not name: no rule may replace them."""
        return self.judged - self.named.keys()

    @property
    def speaker(self) -> str:
        """Who "I" is: each speaker in a transcript updates only their own facts."""
        return first_person(self.text, self.user_id)


class WritePolicy:
    def __init__(self, store: PersonalStore, embedder: Embedder, settings: Settings, privacy: PrivacyClassifier,
                 extractor: TripleExtractor) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.privacy = privacy
        self.extractor = extractor
        self.updates = UpdateJudge(extractor.extract, extractor.llm if settings.memory_llm_updates else None)

    def prepare(self, batch: list[QueuedInput]) -> list[WritePlan]:
        """Everything slow, outside any transaction: privacy classification, embedding (one call
        for the batch), triple extraction and the contradiction check."""
        if self.settings.memory_privacy_filter:
            privacy = [d.to_dict() for d in self.privacy.classify_many([item.input for item in batch])]
        else:
            privacy = [{"label": PRIVATE, "reason": "privacy filter off", "decided_by": "setting"}] * len(batch)
        kept = [i for i, p in enumerate(privacy) if p["label"] == PRIVATE]
        # process_memory's vector when it made one with this embedder; the rest (queued by an
        # older version, or by a process whose embedding failed) in one call
        vectors = [batch[i].vector if batch[i].embedder == self.embedder.name else None for i in kept]
        missing = [n for n, v in enumerate(vectors) if v is None]
        if missing:
            texts = [batch[kept[n]].input for n in missing]
            for n, v in zip(missing, self.embedder.embed_passages(texts)):
                vectors[n] = v
        plans = [WritePlan(item.user_id, item.input, {"agent_id": item.agent_id, "run_id": item.run_id},
                           item.metadata, item.observed_at, "process_memory", privacy[n], queue_item=item.id)
                 for n, item in enumerate(batch)]
        for i, vector in zip(kept, vectors):
            self.plan_write(plans[i], vector)
        return plans

    def plan_write(self, plan: WritePlan, vector: np.ndarray) -> None:
        """The slow part of a write (with Claude, requests): its facts, what it updates as far as
        the store shows now (an LLM's decisions, the vectors of the clauses earlier memories keep);
        apply reads the store again inside the transaction and uses these."""
        plan.vector = vector
        plan.triples = self.extractor.extract(plan.text, speaker=plan.speaker)
        plan.ending = self.updates.ending_facts(plan.text, plan.triples, plan.speaker)
        with self.store.db.snapshot() as conn:
            ended = self._ended(conn, plan)
        alike = [] if self.updates.llm is None else self._alike(plan, vector)
        records = self.store.memories_by_id(plan.user_id, list(ended))
        records.update({r.id: r for r in alike})
        ended = {m: facts for m, facts in ended.items() if m in records}   # none deleted since: apply reads again
        plan.judged, named = self.updates.decide(ended, [r.id for r in alike], plan.text, lambda m: records[m].memory)
        plan.named = {m: records[m].memory for m in named}
        kept = {kept_part(records[m].memory, facts, plan.speaker) for m, facts in ended.items()
                if m not in plan.rejected} - {None, ""}
        if kept:
            plan.kept_vectors = dict(zip(kept, self.embedder.embed_passages(sorted(kept))))

    def _alike(self, plan: WritePlan, vector: np.ndarray) -> list[PersonalMemoryRecord]:
        """What an LLM is shown beside the rules' proposals: the memory the same statement said
        otherwise would replace (the offline rule), and the person's LLM_ASKED_ABOUT closest, in
        the write's scope (as mem0 compares an add with the memories of its own scope)."""
        said_otherwise = self._said_otherwise(plan.user_id, plan.text, vector, plan.scope)
        closest = self._closest(plan.user_id, vector, plan.speaker, plan.scope,
                                lambda _, similarity: similarity >= ALIKE_ENOUGH_TO_ASK, LLM_ASKED_ABOUT)
        return [said_otherwise, *(r for r in closest if r.id != said_otherwise.id)] if said_otherwise else closest

    def _ended(self, conn, plan: WritePlan) -> dict[int, list[tuple[str, str, str]]]:
        """Memory id -> its facts the plan's statement ends, read through `conn`, less those an LLM
        said the statement does not update."""
        ended = self.updates.ended(plan.text, plan.triples, plan.speaker, plan.ending,
                                   lambda pairs: self.store.facts_with(conn, plan.user_id, pairs))
        return {m: facts for m, facts in ended.items() if m not in plan.rejected}

    def apply(self, conn, plan: WritePlan) -> dict[str, Any]:
        """The short write: add the memory (or supersede), inside `conn`'s transaction."""
        if plan.privacy["label"] != PRIVATE:
            return {"privacy": plan.privacy, "action": "discarded", "why": "public knowledge is left to the main model"}
        memory_id, action, why = self.add_or_supersede(conn, plan)
        return {"privacy": plan.privacy, "action": action, "why": why, "memory_id": memory_id}

    def add_or_supersede(self, conn, plan: WritePlan) -> tuple[int, str, str]:
        """A live memory that says the same (same words, scope and metadata) is kept as it is. A
        later statement about the same attribute of the same person (forest.personal.updates)
        ends the earlier facts: a memory all of whose facts end is replaced by the new one (an
        UPDATE in its history); a compound memory keeps the clauses that still hold ("I live in
        Berlin and I work at the MPI" keeps "I work at the MPI."), and the new memory is added
        beside it. The same statement negated or with a new value in the same frame replaces the
        memory too, and so does what a configured LLM names (decided in plan_write). All is looked
        for inside the write's transaction, so a memory written just before is seen. Reasons name
        memories by id, never by their text: a deleted memory's words stay in no other record."""
        user_id, at = plan.user_id, plan.at
        # Said before word for word (the same input sent again after its reply was lost, or
        # repeated): the memory is there already, and a second copy would crowd every search.
        if (same := self.store.same_memory(conn, user_id, plan.text, plan.scope, plan.metadata)) is not None:
            return same, "repeated", f"memory {same} says the same"
        ended = self._ended(conn, plan)
        records = self.store.memories_by_id(user_id, list(ended.keys() | plan.named.keys()))
        # what an LLM named beyond the rules is replaced wholly, every fact it states ending, and
        # only as the LLM saw it (not as another write of the batch left it)
        replaced = [m for m, seen in plan.named.items()
                    if m not in ended and m in records and records[m].memory == seen]
        stated = self.store.facts_of(user_id, list(records))
        ended.update({m: stated.get(m, []) for m in replaced})
        kept = {m: "" if m in replaced else kept_part(records[m].memory, facts, plan.speaker)
                for m, facts in ended.items() if m in records}
        whole = [m for m in kept if kept[m] == "" or (kept[m] is None and set(ended[m]) >= set(stated.get(m, [])))]
        # the same statement said otherwise, when no LLM decided (it was shown that memory if so)
        if not ended and not plan.judged and \
                (changed := self._said_otherwise(user_id, plan.text, plan.vector, plan.scope)) is not None:
            whole = [changed.id]
        context = self.store.said_before(conn, user_id, plan.scope, at, CONVERSATION_GAP_SECONDS, plan.queue_item) \
            if plan.actor == "process_memory" else None
        if whole:
            judged = f", judged by {self.updates.llm.label}" if whole[0] in plan.judged else ""
            why = f"supersedes memory {whole[0]}: a later statement about the same attribute{judged}"
            if self.store.update(conn, user_id, whole[0], plan.text, plan.vector, self.embedder.name, at, plan.actor,
                                 why, plan.metadata, context):
                new_facts = keyed(plan.triples)
                self.store.add_triples(conn, user_id, whole[0], new_facts, at)
                # what it said before and no longer says is closed at this statement, not erased
                self.store.end_facts(conn, user_id, whole[0], at, ended.get(whole[0], []), rewritten=True,
                                     still_stated=[(t[3], t[1], t[4]) for t in new_facts])
                self._end_others(conn, plan, whole[0], ended, kept, whole[1:])
                return whole[0], "superseded", why
        memory_id = self.store.add(conn, user_id, plan.text, plan.vector, self.embedder.name, plan.scope,
                                   plan.metadata, at, plan.actor, context=context)
        self.store.add_triples(conn, user_id, memory_id, keyed(plan.triples), at)
        if ended:
            self._end_others(conn, plan, memory_id, ended, kept, whole)
            return memory_id, "stored", f"ends {sum(map(len, ended.values()))} fact(s) of memory " \
                                        f"{', '.join(map(str, sorted(ended)))}, which keeps the rest"
        return memory_id, "stored", "private information about the user"

    def _end_others(self, conn, plan: WritePlan, by: int, ended: dict[int, list[tuple[str, str, str]]],
                    kept: dict[int, str | None], gone: list[int]) -> None:
        """The other memories the statement ends: wholly (deleted, the history says by which) or in
        part (their clauses that still hold, or, where no clause could be told apart, their text;
        the ended facts closed at the statement's time)."""
        for memory_id, facts in ended.items():
            if memory_id == by:
                continue
            why = f"memory {by} supersedes {len(facts)} fact(s) of it"
            if memory_id in gone:
                self.store.delete(conn, plan.user_id, memory_id, plan.at, plan.actor, why)
                continue
            if text := kept.get(memory_id):   # its vector made before the transaction, unless new since
                vector = plan.kept_vectors[text] if text in plan.kept_vectors else self.embedder.embed_passages([text])[0]
                self.store.update(conn, plan.user_id, memory_id, text, vector, self.embedder.name, plan.at, plan.actor,
                                  why)
            self.store.end_facts(conn, plan.user_id, memory_id, plan.at, facts)

    def _said_otherwise(self, user_id: str, text: str, vector: np.ndarray,
                        scope: dict[str, str | None]) -> PersonalMemoryRecord | None:
        """The live memory that says the same statement as `text` one side negated (similarity
        SAME_STATEMENT or more), or the same frame with the value `text` says it changed (one of the
        FRAME_READ closest, similarity SAME_FRAME or more: the frame itself is the evidence;
        updates.new_value_in_same_frame)."""
        negated, framed = bool(NEGATION.search(text)), says_a_change(text)

        def said_otherwise(record: PersonalMemoryRecord, similarity: float) -> bool:
            return (similarity >= SAME_STATEMENT and negated != bool(NEGATION.search(record.memory))
                    and _same_words(text, record.memory)) or (framed and new_value_in_same_frame(record.memory, text))

        close = self._closest(user_id, vector, first_person(text, user_id), scope, keep=said_otherwise,
                              within=lambda rank, similarity: similarity >= SAME_STATEMENT or
                              (framed and rank < FRAME_READ and similarity >= SAME_FRAME))
        return close[0] if close else None

    def _closest(self, user_id: str, vector: np.ndarray, speaker: str, scope: dict[str, str | None],
                 within: Callable[[int, float], bool], limit: int = 1,
                 keep: Callable[[PersonalMemoryRecord, float], bool] = lambda *_: True) -> list[PersonalMemoryRecord]:
        """Up to `limit` live memories of the `scope` said by `speaker` and kept by `keep` (given
        each with its calibrated similarity), the closest first, from those `within` reach (given
        each memory's rank by similarity and the similarity)."""
        ids, matrix = self.store.vectors(user_id, self.embedder.name, scope)
        if not ids:
            return []
        # Only close memories are read, the closest first, a few at a time (a chat holds hundreds
        # on the same subject, and reading them all cost a write more than its SQL).
        similarity = np.asarray(self.embedder.calibrate(matrix @ vector), dtype=float)
        close = [(ids[i], float(similarity[i])) for rank, i in enumerate(np.argsort(-similarity, kind="stable"))
                 if within(rank, float(similarity[i]))]
        found: list[PersonalMemoryRecord] = []
        for start in range(0, len(close), CLOSE_READ_AT_ONCE):
            batch = close[start:start + CLOSE_READ_AT_ONCE]
            records = self.store.memories_by_id(user_id, [memory_id for memory_id, _ in batch])
            for memory_id, alikeness in batch:
                record = records.get(memory_id)
                if record is not None and first_person(record.memory, user_id) == speaker and keep(record, alikeness):
                    found.append(record)
                    if len(found) == limit:
                        return found
        return found


def _same_words(a: str, b: str) -> bool:
    """Whether two statements say the same words but for their negations, the words that say a
    change ("anymore", "现在") and a turn's "[when said] speaker:": SAME_WORDS of the content
    words of each are in the other."""
    words = [matching_terms(NEGATION.sub(" ", without_change_words(words_of(text)))) for text in (a, b)]
    return min(map(len, words)) > 0 and len(words[0] & words[1]) >= SAME_WORDS * max(map(len, words))


def kept_part(memory: str, ended: list[tuple[str, str, str]], speaker: str) -> str | None:
    """The clauses of a memory that state none of the ended facts, spelled out ("" when none is
    left); None when no clause could be told to state them (the patterns did not read the fact)."""
    ended_keys = set(ended)
    clauses = clause_statements(memory, speaker)
    states = [{(entity_key(t.source), t.relationship, entity_key(t.target)) for t in triples} & ended_keys
              for _, triples in clauses]
    if not any(states):
        return None
    left = [text.strip() for (text, _), hit in zip(clauses, states) if not hit and text.strip()]
    return " ".join(t if t[-1] in ".!?。！？" else t + ("。" if _CJK_END.search(t) else ".") for t in left)


def keyed(triples: Iterable[Triple]) -> list[tuple[str, str, str, str, str]]:
    """Triples as stored: with the keys their entities are matched by."""
    return [(t.source, t.relationship, t.target, entity_key(t.source), entity_key(t.target)) for t in triples]
