"""What a write keeps and what it replaces: the privacy decision (private information is kept,
general knowledge is left to the main model; no secret is kept in an id, metadata is redacted)
and contradictions (a new memory about the same subject supersedes the old one, or retires the
facts of it it contradicts).

A write is planned outside any transaction (classification, embedding, fact extraction: the slow
part, with Claude a request each) and applied in a short one."""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from forest.config import Settings
from forest.models.embedders import Embedder
from forest.personal.graph import Triple, TripleExtractor, entity_key
from forest.personal.memory_store import PersonalMemoryRecord, PersonalStore, QueuedInput
from forest.errors import InvalidInput
from forest.personal.privacy import PRIVATE, PrivacyClassifier
from forest.personal.redact import redact, redact_metadata, secret_format
from forest.validation import check_metadata, check_optional_scope_id, check_scope_id, check_text

MAX_MEMORY_CHARS = 4000
# A memory is read in its conversation: the input said just before it (same user and scope, at
# most this long before; a common session timeout) is indexed with it for BM25.
CONVERSATION_GAP_SECONDS = 30 * 60
# Two memories are about the same subject when their calibrated similarity reaches this.
SAME_SUBJECT = 0.6
SAME_NEGATED = SAME_SUBJECT + 0.15   # the same statement, one side negated
# Relations a subject has one value of at a time: a new value supersedes the old memory.
SINGLE_VALUED = frozenset(["lives in", "works at", "works for", "is married to", "born in", "is from", "住在",
                           "工作于", "结婚", "来自", "出生于"])
_NEGATION = re.compile(r"\b(?:not|no longer|don't|doesn't|didn't|never|stopped|quit)\b|不再|不|没有|没|别", re.I)


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


class WritePolicy:
    def __init__(self, store: PersonalStore, embedder: Embedder, settings: Settings, privacy: PrivacyClassifier,
                 extractor: TripleExtractor) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.privacy = privacy
        self.extractor = extractor

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
        """The slow part of a write (with Claude, a request): its facts."""
        plan.vector = vector
        plan.triples = self.extractor.extract(plan.text, speaker=plan.user_id)

    def apply(self, conn, plan: WritePlan) -> dict[str, Any]:
        """The short write: add the memory (or supersede), inside `conn`'s transaction."""
        if plan.privacy["label"] != PRIVATE:
            return {"privacy": plan.privacy, "action": "discarded", "why": "public knowledge is left to the main model"}
        memory_id, action, why = self.add_or_supersede(conn, plan)
        return {"privacy": plan.privacy, "action": action, "why": why, "memory_id": memory_id}

    def add_or_supersede(self, conn, plan: WritePlan) -> tuple[int, str, str]:
        """A live memory that says the same (same words, scope and metadata) is kept as it is. A
        contradiction replaces the old memory only when every fact of it is contradicted (or
        it is the same statement negated); otherwise only its contradicted facts are retired and
        the new memory is added beside it, so "I live in Paris" keeps "my sister Mia is a doctor".
        The contradiction is looked for inside the write's transaction, so a memory written just
        before (in the same worker batch, or by another process) is seen. Reasons name memories
        by id, never by their text: a deleted memory's words stay in no other record."""
        user_id, at = plan.user_id, plan.at
        # Said before word for word (the same input sent again after its reply was lost, or
        # repeated): the memory is there already, and a second copy would crowd every search.
        if (same := self.store.same_memory(conn, user_id, plan.text, plan.scope, plan.metadata)) is not None:
            return same, "repeated", f"memory {same} says the same"
        old, conflicts = self._contradicted(user_id, plan.text, plan.vector, plan.triples)
        context = self.store.said_before(conn, user_id, plan.scope, at, CONVERSATION_GAP_SECONDS, plan.queue_item) \
            if plan.actor == "process_memory" else None
        if old is not None and conflicts is None:
            why = f"contradicts memory {old.id} about the same subject"
            if self.store.update(conn, user_id, old.id, plan.text, plan.vector, self.embedder.name, at, plan.actor,
                                 why, plan.metadata, context):
                self.store.drop_facts(conn, user_id, old.id)
                self.store.add_triples(conn, user_id, old.id, keyed(plan.triples), at)
                return old.id, "superseded", why
        memory_id = self.store.add(conn, user_id, plan.text, plan.vector, self.embedder.name, plan.scope,
                                   plan.metadata, at, plan.actor, context=context)
        self.store.add_triples(conn, user_id, memory_id, keyed(plan.triples), at)
        if old is not None and conflicts:
            self.store.drop_facts(conn, user_id, old.id, conflicts)
            return memory_id, "stored", f"replaces {len(conflicts)} fact(s) of memory {old.id}, which keeps its others"
        return memory_id, "stored", "private information about the user"

    def _contradicted(self, user_id: str, text: str, vector: np.ndarray,
                      triples) -> tuple[PersonalMemoryRecord | None, list[tuple[str, str, str]] | None]:
        """The live memory the new one contradicts, and which of its facts (None: all of it).
        A contradiction is the same single-valued relation of the same subject with another value
        (the facts that differ; None when those are all the memory states), or the same statement
        negated (high similarity, one side negated: the whole memory)."""
        ids, matrix = self.store.vectors(user_id, self.embedder.name)
        if not ids:
            return None, None
        new_facts = {(entity_key(t.source), t.relationship): entity_key(t.target) for t in triples
                     if t.relationship in SINGLE_VALUED}
        # Without a single-valued fact only a negation can contradict, and only a close one: the
        # memories below that are not read (a chat holds hundreds on the same subject). The old
        # memories' facts are the stored ones (never extracted again: with Claude, a request each).
        floor = SAME_SUBJECT if new_facts else SAME_NEGATED
        similarity = np.asarray(self.embedder.calibrate(matrix @ vector), dtype=float)
        records = self.store.memories_by_id(user_id, [ids[i] for i in np.flatnonzero(similarity >= floor)])
        stated = self.store.facts_of(user_id, list(records)) if new_facts else {}
        negated = bool(_NEGATION.search(text))
        for i in np.argsort(-similarity, kind="stable"):
            record = records.get(ids[i])
            if record is None:
                break
            facts = stated.get(record.id, [])
            conflicts = [f for f in facts if new_facts.get(f[:2], f[2]) != f[2]]
            if conflicts:
                return record, None if len(conflicts) == len(set(facts)) else conflicts
            if negated != bool(_NEGATION.search(record.memory)) and similarity[i] >= SAME_NEGATED:
                return record, None
        return None, None


def keyed(triples: Iterable[Triple]) -> list[tuple[str, str, str, str, str]]:
    """Triples as stored: with the keys their entities are matched by."""
    return [(t.source, t.relationship, t.target, entity_key(t.source), entity_key(t.target)) for t in triples]


def checked_text(text: str, what: str) -> str:
    """A text personal memory takes (input, memory, query): checked, then its secrets redacted."""
    return redact(check_text(text, what, MAX_MEMORY_CHARS)).text


def checked_user_id(user_id: str) -> str:
    return _no_secret("user_id", check_scope_id(user_id, "user_id"))


def checked_scope(agent_id: str | None, run_id: str | None) -> dict[str, str | None]:
    scope = {"agent_id": check_optional_scope_id(agent_id, "agent_id"),
             "run_id": check_optional_scope_id(run_id, "run_id")}
    for name, value in scope.items():
        if value is not None:
            _no_secret(name, value)
    return scope


def checked_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """Checked metadata, its text values redacted (a key is an identifier, a value free text)."""
    metadata = check_metadata(metadata)
    for key in metadata:
        _no_secret(f"metadata key {key!r}", key)
    return redact_metadata(metadata)


def _no_secret(name: str, value: str) -> str:
    """Ids are stored, shown and compared in clear, so one that holds a secret (by its format: a
    key, a token, a card number) is refused rather than stored or redacted into another id."""
    if kind := secret_format(value):
        raise InvalidInput(f"{name} looks like a secret ({kind}): ids are stored in clear, never put a secret in one")
    return value
