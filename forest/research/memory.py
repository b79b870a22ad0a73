"""ResearchMemory: the DeepScholar spec's layered memory (working, episodic, semantic) behind one object.

- Semantic directives: the core file (CORE.md beside the data directory; the default directives
  until one is written), injected first into every prompt,
  and the model_id's semantic knowledge (topic -> conclusion, every earlier version kept).
- Working workspace, per session: current focus, known constraints, key findings.
- Episodic events: questions, exploration steps, answers, findings, messages, reconciliations,
  timestamped in SQLite with their vectors, recalled by similarity x retention.

A session's turn flows one way: preamble (directives, knowledge, briefing) -> the agent loop ->
record_turn (events, conflict check and reconciliation, messages, compaction when due).
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from forest.limits import (MAX_CONCLUSION_CHARS, MAX_CORE_CHARS, MAX_MESSAGE_CHARS, MAX_NOTE_CHARS,
                           MAX_NOTE_SOURCE_CHARS, MAX_TOP_K_MEMORIES, MAX_TOPIC_CHARS)
from forest.config import Settings
from forest.storage.sql.database import Connection, Database
from forest.models.embedders import Embedder
from forest.errors import InvalidInput, NotFound, ServiceUnavailable
from forest.models.llm import StructuredLLM
from forest.redaction import redact
from forest.research.briefing import Briefing, build_briefing
from forest.research.compaction import CompactionReport, Flusher, over_threshold, split_old_and_recent
from forest.research.claims import Conflict, Statement, detect_conflicts
from forest.research.episodic import EventVectors, RecalledEvent, rank_events
from forest.research.memory_store import (
    WORKSPACE_KINDS,
    KnowledgeVersion,
    Message,
    NewEvent,
    ResearchStore,
    WorkspaceItem,
)
from forest.research.reconcile import Reconciliation, Reconciler
from forest.records import Archive, MemoryNode
from forest.storage.archives import ForestStore
from forest.text import estimate_tokens, tokenize, truncate
from forest.validation import check_model_id, check_query, check_session_id, check_text, check_top_k, parse_time_range
from forest.storage.vectors.base import VectorStore

if TYPE_CHECKING:
    from forest.recall.agent import AgentState

# The directives in force until a core file is written (packaged with forest: see pyproject.toml).
DEFAULT_DIRECTIVES = Path(__file__).with_name("default_directives.md")
KNOWLEDGE_IN_PREAMBLE = 12     # newest topics shown in every prompt; the rest are a tool call away
MAX_RECONCILED_PER_TURN = 3    # each may be a Claude call
FINDINGS_SOURCE = "your finding"   # one source for all findings: checked against passages, not each other

log = logging.getLogger("forest.research")


@dataclass
class _Note:
    kind: str
    text: str
    source: str
    event: NewEvent


class _CompactedMeanwhile(Exception):
    """Rolls back a compaction whose messages another writer compacted first."""


@dataclass
class ResearchTurn:
    """What one question in a session produced besides the answer."""
    session_id: str
    briefing: Briefing
    conflicts: list[Reconciliation] = field(default_factory=list)
    compaction: CompactionReport | None = None
    event_ids: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "briefing": self.briefing.text,
                "conflicts": [c.to_dict() for c in self.conflicts],
                "compaction": self.compaction.to_dict() if self.compaction else None,
                "event_ids": self.event_ids}


class ResearchMemory:
    def __init__(self, db: Database, forest_store: ForestStore, embedder: Embedder, vectors: VectorStore,
                 settings: Settings, llm: StructuredLLM | None = None, clock: Callable[[], float] = time.time) -> None:
        self.store = ResearchStore(db, settings.episodic_stability_days, embedder.name)
        self.event_vectors = EventVectors(self.store)
        self.forest_store = forest_store
        self.db = db
        self.embedder = embedder
        self.vectors = vectors
        self.settings = settings
        self.clock = clock
        self.reconciler = Reconciler(llm)
        self.flusher = Flusher(llm)

    # --- semantic directives and knowledge --------------------------------------------------
    @property
    def core_path(self) -> Path:
        return self.settings.core_path

    def directives(self) -> str:
        """The directives in force: the core file's text, or the default directives while no core
        file has been written (a new data directory has none)."""
        try:
            return self.core_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return DEFAULT_DIRECTIVES.read_text(encoding="utf-8")

    @property
    def directives_saved(self) -> bool:
        """Whether the core file exists (else the default directives are in force)."""
        return self.core_path.is_file()

    def save_directives(self, text: str) -> None:
        if not isinstance(text, str) or len(text) > MAX_CORE_CHARS:
            raise InvalidInput(f"the directives must be text of at most {MAX_CORE_CHARS:,} characters")
        self.core_path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.core_path.with_suffix(".tmp")
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(self.core_path)  # atomic: a reader sees the old file or the new one

    def update_knowledge(self, model_id: str, topic: str, conclusion: str, session_id: str = "default") -> dict[str, Any]:
        """update_semantic_knowledge: the topic's conclusion in force becomes `conclusion`; earlier
        versions stay as history. Also an episodic event, so it can be recalled by time."""
        model_id, session_id = check_model_id(model_id), check_session_id(session_id)
        topic = kept(check_text(topic, "topic", MAX_TOPIC_CHARS))
        conclusion = kept(check_text(conclusion, "conclusion", MAX_CONCLUSION_CHARS))
        key = topic_key(topic)
        if not key:
            raise InvalidInput(f"the topic {topic!r} has no words")
        event = self._event("knowledge", f"{topic}: {conclusion}", {"topic": topic})
        now = self.clock()
        with self.db.transaction(lock=_writes_of(model_id)) as conn:
            version = self.store.add_knowledge(conn, model_id, topic, key, conclusion, now)
            self.store.add_events(conn, model_id, session_id, [event], now)
        history = self.store.knowledge(model_id, key, with_history=True)
        return {"topic": topic, "conclusion": conclusion, "version": version,
                "history": [v.to_dict() for v in history[1:]]}

    def knowledge(self, model_id: str, topic: str | None = None, with_history: bool = False) -> list[KnowledgeVersion]:
        model_id = check_model_id(model_id)
        key = None if topic is None else topic_key(check_text(topic, "topic", MAX_TOPIC_CHARS))
        found = self.store.knowledge(model_id, key, with_history=with_history)
        if topic is not None and not found:
            raise NotFound(f"no semantic knowledge on {topic!r} for this model_id")
        return found

    # --- workspace ----------------------------------------------------------------------------
    def add_note(self, model_id: str, session_id: str, kind: str, text: str, source: str = "") -> WorkspaceItem:
        """Add to the workspace: kind 'focus' (replaces the current focus), 'constraint' or 'finding'.
        Every note is also an episodic event, so it can still be found once folded away."""
        model_id, session_id = check_model_id(model_id), check_session_id(session_id)
        note = self._note(kind, text, source)
        with self.db.transaction(lock=_writes_of(model_id)) as conn:
            item = self._write_note(conn, model_id, session_id, note, self.clock())
        return item

    def _note(self, kind: str, text: str, source: str) -> _Note:
        """A workspace note checked and embedded, ready to be written in a short transaction."""
        if kind not in WORKSPACE_KINDS:
            raise InvalidInput(f"a workspace note is one of {', '.join(WORKSPACE_KINDS)}, got {kind!r}")
        text = kept(check_text(text, kind, MAX_NOTE_CHARS))
        source = truncate(source or "", MAX_NOTE_SOURCE_CHARS)
        return _Note(kind, text, source, self._event(kind, text + (f" ({source})" if source else ""),
                                                     {"source": source}))

    def _write_note(self, conn: Connection, model_id: str, session_id: str, note: _Note,
                    now: float) -> WorkspaceItem:
        if note.kind == "focus":
            self.store.remove_workspace_items(conn, model_id, session_id, now, kind="focus")
        item_id = self.store.add_workspace_item(conn, model_id, session_id, note.kind, note.text, note.source, now)
        event = note.event
        self.store.add_events(conn, model_id, session_id,
                              [NewEvent(event.kind, event.content, event.embedding, {**event.data, "item_id": item_id})],
                              now)
        return WorkspaceItem(item_id, note.kind, note.text, note.source, now)

    def remove_note(self, model_id: str, session_id: str, item_id: int) -> None:
        model_id, session_id = check_model_id(model_id), check_session_id(session_id)
        with self.db.transaction(lock=_writes_of(model_id)) as conn:
            removed = self.store.remove_workspace_items(conn, model_id, session_id, self.clock(), item_id=item_id)
        if not removed:
            raise NotFound(f"workspace note {item_id} not found in session {session_id!r}")

    def workspace(self, model_id: str, session_id: str) -> list[WorkspaceItem]:
        return self.store.workspace(check_model_id(model_id), check_session_id(session_id))

    def questions(self, model_id: str, session_id: str) -> list[dict[str, Any]]:
        """The session's asked questions, oldest first: each with its answer, who answered and the
        passages it cited ({node_id, citation}), as record_turn kept them."""
        events = self.store.recent_events(check_model_id(model_id), check_session_id(session_id), 100_000)
        return [{**e.data, "answer": e.content.partition("\n→ ")[2]} for e in reversed(events) if e.kind == "ask"]

    def sessions(self, model_id: str) -> list[str]:
        return self.store.sessions(check_model_id(model_id))

    def briefing(self, model_id: str, session_id: str) -> Briefing:
        return build_briefing(self.workspace(model_id, session_id), self.settings.briefing_max_lines)

    def preamble(self, model_id: str, session_id: str) -> str:
        """What goes first in every prompt of the session: directives, knowledge, briefing."""
        parts = []
        directives = self.directives().strip()
        if directives:
            parts.append(f"[Semantic Directives]\n{directives}")
        known = self.knowledge(model_id)
        if known:
            newest = sorted(known, key=lambda k: -k.created_at)[:KNOWLEDGE_IN_PREAMBLE]
            lines = [f"- {truncate(k.topic + ': ' + k.conclusion, 300)}" for k in newest]
            if len(known) > len(newest):
                lines.append(f"- ({len(known) - len(newest)} more topics: search_episodic_memory finds them)")
            parts.append("[Semantic Knowledge]\n" + "\n".join(lines))
        parts.append(self.briefing(model_id, session_id).text)
        return "\n\n".join(parts)

    # --- episodic memory ----------------------------------------------------------------------
    def record(self, model_id: str, session_id: str, kind: str, content: str,
               data: dict[str, Any] | None = None) -> int:
        """One episodic event (e.g. an observation from outside the agent loop)."""
        model_id, session_id = check_model_id(model_id), check_session_id(session_id)
        kind = check_text(kind, "event kind", 40)
        event = self._event(kind, kept(check_text(content, "event", MAX_MESSAGE_CHARS)), data or {})
        with self.db.transaction(lock=_writes_of(model_id)) as conn:
            return self.store.add_events(conn, model_id, session_id, [event], self.clock())[0]

    def search_episodic(self, model_id: str, query: str, time_range: str | None = None, top_k: int = 5,
                        session_id: str | None = None, kinds: tuple[str, ...] = ()) -> list[RecalledEvent]:
        """search_episodic_memory: events in the time range ranked by similarity x retention; the
        ones returned count as recalled (their stability grows), and are returned as they are after
        this recall. Retention and score are the ranking's, from before it."""
        model_id, query, top_k = check_model_id(model_id), check_query(query), check_top_k(top_k, MAX_TOP_K_MEMORIES)
        now = self.clock()
        since, until = parse_time_range(time_range, now)
        clocks = self.store.event_clocks(model_id, since=since, until=until, kinds=kinds,
                                         session_id=None if session_id is None else check_session_id(session_id))
        ranked = rank_events(clocks, self.event_vectors.get(model_id), self.embedder.embed_query(query),
                             self.embedder.calibrate, now, top_k)
        ids = [event_id for event_id, _, _ in ranked]
        self.store.mark_recalled(model_id, ids, now, self.settings.episodic_recall_growth)
        events = self.store.events_by_id(model_id, ids)   # read after: this recall counted, its S grown
        return [RecalledEvent(events[i], similarity, kept, similarity * kept) for i, similarity, kept in ranked]

    def reembed(self, model_id: str) -> int:
        """Re-embed the model_id's episodic events made by another (or an unknown) embedder with the
        configured one, in one transaction; returns how many."""
        rows = self.store.events_to_reembed(model_id)
        if rows:
            vectors = self.embedder.embed_passages([content for _, content in rows])
            with self.db.transaction(lock=_writes_of(model_id)) as conn:
                self.store.set_event_vectors(conn, [i for i, _ in rows], vectors)
        self.event_vectors.forget(model_id)
        return len(rows)

    def timeline(self, model_id: str, session_id: str, limit: int = 50) -> list[dict[str, Any]]:
        """The session's latest events, newest first (without recalling them)."""
        events = self.store.recent_events(check_model_id(model_id), check_session_id(session_id), limit)
        return [e.to_dict() for e in events]

    # --- messages and compaction --------------------------------------------------------------
    def add_message(self, model_id: str, session_id: str, role: str, content: str) -> CompactionReport | None:
        """Append to the session's conversation (and episodic memory); compacts when due."""
        model_id, session_id = check_model_id(model_id), check_session_id(session_id)
        if role not in ("user", "assistant"):
            raise InvalidInput(f"a message role is 'user' or 'assistant', got {role!r}")
        content = kept(check_text(content, "message", MAX_MESSAGE_CHARS))
        event = self._event(f"message:{role}", content, {})
        now = self.clock()
        with self.db.transaction(lock=_writes_of(model_id)) as conn:
            event_id = self.store.add_events(conn, model_id, session_id, [event], now)[0]
            self.store.add_message(conn, model_id, session_id, role, content, estimate_tokens(content), event_id, now)
        return self.compact_if_due(model_id, session_id)

    def messages(self, model_id: str, session_id: str, include_compacted: bool = False) -> list[Message]:
        return self.store.messages(check_model_id(model_id), check_session_id(session_id),
                                   include_compacted=include_compacted)

    def compact_if_due(self, model_id: str, session_id: str) -> CompactionReport | None:
        """Called after a write has committed: a model server that does not answer leaves the
        compaction to the next call (a failed call would tell the caller to send again what is kept)."""
        live = self.store.messages(model_id, session_id)
        if not over_threshold(live, self.settings.session_token_limit, self.settings.compaction_ratio):
            return None
        try:
            return self.compact(model_id, session_id)
        except ServiceUnavailable as exc:
            log.warning("compaction of session %s put off until the next message: %s", session_id, exc)
            return None

    def compact(self, model_id: str, session_id: str) -> CompactionReport:
        """Pre-compaction flush (findings to the workspace), then the old messages are replaced by
        one summary message. The originals stay in episodic memory."""
        model_id, session_id = check_model_id(model_id), check_session_id(session_id)
        live = self.store.messages(model_id, session_id)
        limit = self.settings.session_token_limit
        old, kept = split_old_and_recent(live, limit)
        before = sum(m.tokens for m in live)
        if not old:
            return CompactionReport([], [m.id for m in kept], before, before, limit, made_by="nothing to compact")
        existing = [i.text for i in self.store.workspace(model_id, session_id) if i.kind == "finding"]
        flush = self.flusher.flush(old, existing, self.preamble(model_id, session_id))
        notes = [self._note("finding", text, source or "compaction") for text, source in flush.findings]
        summary_event = self._event("compaction", flush.summary,
                                    {"made_by": flush.made_by, "message_ids": [m.id for m in old]})
        now = self.clock()
        # The flushed findings, the summary and the compacted mark commit together (a crash leaves
        # all or none), and only over messages still live: a compaction that another process
        # finished meanwhile is not done twice.
        try:
            with self.db.transaction(lock=_writes_of(model_id)) as conn:
                if self.store.mark_compacted(conn, model_id, [m.id for m in old], now) < len(old):
                    raise _CompactedMeanwhile
                added = [self._write_note(conn, model_id, session_id, note, now) for note in notes]
                event_id = self.store.add_events(conn, model_id, session_id, [summary_event], now)[0]
                # The summary stands where the old messages were: before the kept ones.
                at = min(m.created_at for m in old)
                self.store.add_message(conn, model_id, session_id, "summary", flush.summary,
                                       estimate_tokens(flush.summary), event_id, at)
        except _CompactedMeanwhile:
            now_live = self.store.messages(model_id, session_id)
            tokens = sum(m.tokens for m in now_live)
            return CompactionReport([], [m.id for m in now_live], tokens, tokens, limit,
                                    made_by="nothing to compact: another writer compacted these messages meanwhile")
        after = sum(m.tokens for m in self.store.messages(model_id, session_id))
        return CompactionReport([m.id for m in old], [m.id for m in kept], before, after, limit,
                                [i.to_dict() for i in added], flush.summary, flush.made_by)

    # --- conflicts ----------------------------------------------------------------------------
    def passages(self, model_id: str, node_ids: list[int], *, strict: bool = True) -> list[Statement]:
        """Nodes of the model_id as statements to compare (with their stored vectors), in the order
        asked; an id that is not the model_id's is NotFound (strict) or skipped."""
        model_id = check_model_id(model_id)
        nodes = self.forest_store.nodes(model_id, node_ids)
        missing = [i for i in node_ids if i not in nodes]
        if missing and strict:
            raise NotFound(f"node {missing[0]} not found for this model_id")
        node_ids = [i for i in node_ids if i in nodes]
        stored = self.vectors.get_vectors(model_id, list(nodes))
        archives = {a.id: a for a in self.forest_store.archives(model_id)}
        return [Statement(f"node:{i}", nodes[i].content, _document(archives.get(nodes[i].archive_id), nodes[i]),
                          nodes[i].citation, _vector(stored.get(i))) for i in dict.fromkeys(node_ids)]

    def conflicts(self, model_id: str, session_id: str | None, node_ids: list[int]) -> list[Conflict]:
        """Likely conflicts among the given passages (from different documents) and between them
        and the session's findings."""
        statements = self.passages(model_id, node_ids, strict=False)  # a node deleted meanwhile is skipped
        if session_id is not None:
            findings = [i for i in self.workspace(model_id, session_id) if i.kind == "finding"]
            vectors = self._finding_vectors(model_id, session_id, findings)
            statements += [Statement(f"finding:{i.id}", i.text, FINDINGS_SOURCE, i.source, _vector(vectors.get(i.id)))
                           for i in findings]
        return detect_conflicts(statements, calibrate=self.embedder.calibrate)

    def reconcile_nodes(self, model_id: str, node_a: int, node_b: int, session_id: str | None = None) -> Reconciliation:
        """Reconcile two passages given by node id (the reconcile_passages tool)."""
        if node_a == node_b:
            raise InvalidInput("pick two different passages to reconcile")
        session_id = None if session_id is None else check_session_id(session_id)
        a, b = self.passages(model_id, [node_a, node_b])
        return self.reconcile_pair(a, b, model_id, session_id)

    def reconcile_pair(self, a: Statement, b: Statement, model_id: str,
                       session_id: str | None = None) -> Reconciliation:
        """Reconcile two passages (statements of `passages`) picked by hand: what the rules detect
        between them goes with them to the reviewer."""
        if a.key == b.key:
            raise InvalidInput("pick two different passages to reconcile")
        found = detect_conflicts([a, b], calibrate=self.embedder.calibrate)
        detected = found[0].detail if found else "no conflict detected by the rules; compared on request"
        return self.reconcile(a, b, detected, model_id, session_id)

    def reconcile(self, a: Statement, b: Statement, detected: str = "", model_id: str | None = None,
                  session_id: str | None = None) -> Reconciliation:
        preamble = self.preamble(model_id, session_id) if model_id and session_id else self.directives()
        return self.reconciler.reconcile(a, b, detected, preamble)

    # --- a turn of the agent loop -------------------------------------------------------------
    def record_turn(self, state: AgentState, session_id: str) -> ResearchTurn:
        """After the loop answered: the question and its answer become one episodic event (the
        nodes explored on the way in its data, not an event each) and two messages; conflicting
        evidence is reconciled; the session is compacted when due."""
        model_id, session_id = check_model_id(state.model_id), check_session_id(session_id)
        if not state.done:
            raise InvalidInput("the question has no answer yet: finish the loop before recording it")
        leaves = [c.node.id for c in state.context if c.node.is_leaf]
        reconciled = [self.reconcile(c.a, c.b, c.detail, model_id, session_id)
                      for c in self.conflicts(model_id, session_id, leaves)[:MAX_RECONCILED_PER_TURN]]
        # The question is remembered with its secrets redacted, as personal memory is (the loop
        # itself ran on the question as asked).
        question = kept(state.question)
        answer = state.answer or ""
        if reconciled:
            answer += "\n\n" + "\n".join(r.note() for r in reconciled)
        explored = [{"node_id": step.decision.node_id, "why": step.decision.reasoning,
                     "kept_children": [c["node_id"] for c in step.children if c.get("kept")],
                     "decided_by": step.decision.source}
                    for step in state.steps if step.decision.action == "EXPLORE"]
        texts = [("ask", f"{question}\n→ {answer}",
                  {"model_id": model_id, "question": question, "answered_by": state.answered_by,
                   "explored": explored,
                   "cited": [{"node_id": c.node.id, "citation": c.node.citation} for c in state.cited]})]
        texts += [("reconciliation", r.note(), r.to_dict()) for r in reconciled]
        vectors = self.embedder.embed_passages([t[1] for t in texts])
        events = [NewEvent(kind, content, vector, data) for (kind, content, data), vector in zip(texts, vectors)]
        now = self.clock()
        with self.db.transaction(lock=_writes_of(model_id)) as conn:
            ids = self.store.add_events(conn, model_id, session_id, events, now)
            for role, content in (("user", question), ("assistant", answer)):
                self.store.add_message(conn, model_id, session_id, role, content, estimate_tokens(content), ids[0], now)
        briefing = self.briefing(model_id, session_id)
        return ResearchTurn(session_id, briefing, reconciled, self.compact_if_due(model_id, session_id), ids)

    # --- helpers ------------------------------------------------------------------------------
    def _event(self, kind: str, content: str, data: dict[str, Any]) -> NewEvent:
        return NewEvent(kind, content, self.embedder.embed_passages([content])[0], data)

    def _finding_vectors(self, model_id: str, session_id: str, findings: list[WorkspaceItem]) -> dict[int, Any]:
        """The vectors stored with the findings' events (no embedding at conflict-check time)."""
        wanted = {i.id for i in findings}
        events = [e for e in self.store.events(model_id, session_id=session_id, kinds=("finding",))
                  if e.data.get("item_id") in wanted]
        ids, matrix = self.event_vectors.get(model_id)
        return {e.data["item_id"]: matrix[np.searchsorted(ids, e.id)] for e in events}


def topic_key(topic: str) -> str:
    """Topics compare by their words: case, spacing and punctuation do not make a new topic."""
    return " ".join(tokenize(topic))


def _document(archive: Archive | None, node: MemoryNode) -> str:
    """What a passage's source is called in verdicts: its paper's title (or file name); passages of
    one document are never compared with each other."""
    return archive.document_title(node.first_leaf) if archive else f"archive {node.archive_id}"


def _vector(vector: Any) -> tuple[float, ...] | None:
    return None if vector is None else tuple(float(x) for x in vector)


def kept(text: str) -> str:
    """What research memory keeps of a text: its secrets redacted, as personal memory keeps them."""
    return redact(text).text


def _writes_of(model_id: str) -> str:
    """The lock a model_id's research writes take on a database that does not serialise writers
    (versions of a topic, compaction over live messages, one focus a session)."""
    return f"research:{model_id}"
