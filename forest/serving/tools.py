"""The tools agents call (MCP, REST, the OpenAI endpoint): thin, JSON-shaped adapters over one
MemoryForest. Parameter types and descriptions here become the MCP input schemas and the REST
OpenAPI schema, so each tool is defined once.

Errors: bad input and unknown ids raise ToolError subclasses with a message meant for the model
(and mapped to HTTP 400/404 by REST); anything else is a crash the SDK hides behind a generic
message while the server logs the traceback. The schema enforces types only (and the few bounds
no other face has); lengths and ranges it shows are checked by the engine (forest.validation), so
one fault gets one message on every face.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import anyio
from anyio import from_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from forest.errors import AlreadyInLibrary, ConfigError, ForestError, InvalidInput, NotFound, ServiceUnavailable
from forest.records import Progress
from forest.recall.compare import FOUND_THRESHOLD
from forest.service import MemoryForest
from forest.limits import (MAX_ARCHIVES_PER_CALL, MAX_CONCLUSION_CHARS, MAX_DOCUMENT_CHARS_OVER_HTTP, MAX_MEMORY_CHARS,
                           MAX_MODEL_ID, MAX_NAME_CHARS, MAX_NOTE_CHARS, MAX_NOTE_SOURCE_CHARS, MAX_QUERY_CHARS,
                           MAX_QUESTIONS, MAX_SCOPE_ID, MAX_SESSION_ID, MAX_TIME_RANGE_CHARS, MAX_TOP_K_MEMORIES,
                           MAX_TOP_K_PASSAGES, MAX_TOPIC_CHARS, MAX_TREE_DEPTH_SHOWN)
from forest.validation import TIME_RANGE_HELP



def _shown(**bounds: Any) -> dict[str, Any]:
    """Bounds shown in the input schema (the caller's model reads them) but checked by the engine:
    a value outside them gets forest.validation's message, the same on every face."""
    return {"json_schema_extra": bounds}


ModelId = Annotated[str, Field(description="The memory owner (tenant). Every id below belongs to one model_id; "
                                           "another model_id's ids are 'not found'.",
                               **_shown(minLength=1, maxLength=MAX_MODEL_ID))]
Query = Annotated[str, Field(description="What you are looking for, in natural language.",
                             **_shown(minLength=1, maxLength=MAX_QUERY_CHARS))]
NodeId = Annotated[int, Field(description="A node id from an earlier retrieve_memory, search_memory, "
                                          "explore_memory_node or get_archive_tree result.", **_shown(minimum=1))]
TopK = Annotated[int, Field(description=f"How many raw vector hits to consider (1-{MAX_TOP_K_PASSAGES}).",
                            **_shown(minimum=1, maximum=MAX_TOP_K_PASSAGES))]
UserId = Annotated[str, Field(description="The person the memories are about. Every memory, graph and history "
                                          "belongs to one user_id; other users' memories are never visible.",
                              **_shown(minLength=1, maxLength=MAX_SCOPE_ID))]
AgentScope = Annotated[str | None, Field(description="Optional agent (or stage) that writes or reads, for scoping.",
                                         **_shown(maxLength=MAX_SCOPE_ID))]
RunScope = Annotated[str | None, Field(description="Optional run (conversation, trip...) id, for scoping.",
                                       **_shown(maxLength=MAX_SCOPE_ID))]
Metadata = Annotated[dict[str, str | int | float | bool] | None, Field(
    description="Optional free keys stored with a memory (e.g. {\"scene\": \"travel\"}); search filters match them.")]
SessionId = Annotated[str, Field(description="A research session of the model_id (any name you choose, e.g. "
                                             "'default' or a project name); its notes and history are kept "
                                             "across calls.", **_shown(minLength=1, maxLength=MAX_SESSION_ID))]


class BadArguments(ToolError):
    """The caller's input is wrong (HTTP 400)."""


class UnknownId(ToolError):
    """An archive or node that does not exist for this model_id (HTTP 404)."""


class Unavailable(ToolError):
    """The database or a model server could not be reached, or the connection was lost mid-call;
    nothing of the call was kept, and the same call may be sent again (HTTP 503)."""


def translated(error: ForestError) -> ToolError:
    """The ToolError a face reports for an engine error (its class says the HTTP status)."""
    if isinstance(error, NotFound):
        return UnknownId(str(error))
    if isinstance(error, ServiceUnavailable):
        return Unavailable(str(error))
    if isinstance(error, (InvalidInput, ConfigError)):
        return BadArguments(str(error))
    return ToolError(str(error))


class ForestTools:
    """Each public method is one tool; its docstring is the description an LLM reads."""

    NAMES = ("retrieve_memory", "explore_memory_node", "search_memory", "get_memory_node", "list_archives",
             "get_archive_tree", "add_document", "ask_memory", "compare_papers", "search_episodic_memory",
             "update_semantic_knowledge", "get_research_briefing", "add_research_note", "reconcile_passages",
             "process_memory", "debug_process_memory", "get_user_graph", "memory", "clear_user_memory")

    # Tools that neither write nor spend model calls: the only ones REST serves on GET. Every other tool
    # (ask_memory writes session events and calls Claude; search_episodic_memory counts recalls) is POST only.
    READ_ONLY = frozenset({"retrieve_memory", "explore_memory_node", "search_memory", "get_memory_node",
                           "list_archives", "get_archive_tree", "get_research_briefing", "get_user_graph"})

    def __init__(self, forest: MemoryForest) -> None:
        self.forest = forest
        self._building: anyio.Semaphore | None = None  # one build at a time: the engine serializes them

    def retrieve_memory(self, model_id: ModelId, query: Query, top_k: TopK = 8) -> dict[str, Any]:
        """Start here. Searches all of the model_id's memory trees and returns representative nodes:
        one per tree touched. kind 'hit' is a single matching node; kind 'lca' is the lowest common
        ancestor standing for several hits in one tree (their ids are in hit_ids). A SUMMARY_NODE
        holds a summary only: call explore_memory_node on its id to go one level down towards the
        original passages (LEAF_CHUNK, whose content is the source text with page and section in
        'citation'). Scores are 0-1."""
        with _tool_errors():
            reps = self.forest.retrieve(model_id, query, top_k)
            return {"representative_nodes": [r.to_dict() for r in reps]}

    def explore_memory_node(self, model_id: ModelId, node_id: NodeId, query: Query,
                            threshold: Annotated[float | None, Field(
                                description="Minimum relevance (0-1) of the children returned; default "
                                            "the server's drill threshold.",
                                **_shown(minimum=0, maximum=1))] = None) -> dict[str, Any]:
        """Drill down one level: the direct children of node_id reranked against the query, those
        with relevance_score >= threshold, best first. A SUMMARY_NODE child comes as its title
        (the section it covers, e.g. "3 Method › 3.2 Training"), summary, pages and leaf_count:
        explore it to go down. A LEAF_CHUNK child is an original passage (content, citation).
        Exploring a leaf returns the leaf itself with score 1.0. An empty list means no child is
        relevant enough: lower the threshold or explore another node."""
        with _tool_errors():
            children = self.forest.explore(model_id, node_id, query, threshold)
            return {"node_id": node_id, "children": [_child(c) for c in children]}

    def search_memory(self, model_id: ModelId, query: Query, top_k: TopK = 8,
                      mode: Annotated[str, Field(description="'vector' (meaning), 'bm25' (exact words: names, "
                                                             "model names like GPT-4, numbers) or 'hybrid' (both, "
                                                             "fused).")] = "vector") -> dict[str, Any]:
        """Raw search hits over every node (summaries and passages) of the model_id, best first,
        without grouping by tree. Prefer retrieve_memory to start exploring; use this to see
        every individual match, or mode 'bm25'/'hybrid' to find exact terms."""
        with _tool_errors():
            hits = self.forest.search(model_id, query, top_k, mode)
            return {"mode": mode, "hits": [h.to_dict() for h in hits]}

    def get_memory_node(self, model_id: ModelId, node_id: NodeId,
                        full_text: Annotated[bool, Field(
                            description="For a SUMMARY_NODE, also return every passage below it joined "
                                        "(can be long: a whole section or paper).")] = False) -> dict[str, Any]:
        """One node: title (summary nodes), summary, citation, page range, leaf_count, parent_id,
        path (root first), depth; content for a leaf (the source text), and for a summary node
        only with full_text."""
        with _tool_errors():
            return {"node": self.forest.node(model_id, node_id, full_text).to_dict()}

    def list_archives(self, model_id: ModelId) -> dict[str, Any]:
        """The model_id's archives (one per ingested document or group of documents): id, name,
        number of leaves and nodes, roots, depth. Use an archive id with get_archive_tree."""
        with _tool_errors():
            return {"archives": [a.to_dict() for a in self.forest.archives(model_id)]}

    def get_archive_tree(self, model_id: ModelId,
                         archive_id: Annotated[int, Field(description="An id from list_archives.",
                                                          **_shown(minimum=1))],
                         max_depth: Annotated[int, Field(description="Deepest level to include (0 = roots "
                                                                     "only).", ge=0, le=MAX_TREE_DEPTH_SHOWN)] = 3) -> dict[str, Any]:
        """The archive's tree from its roots down to max_depth: id, parent_id, depth, node_type,
        title (summary nodes: the heading path they cover), summary, citation, page range,
        leaf_count (no content; get_memory_node has it). A table of contents of the document."""
        with _tool_errors():
            nodes = [n for n in self.forest.tree(model_id, archive_id) if n.depth <= max_depth]
            return {"archive_id": archive_id, "max_depth": max_depth,
                    "nodes": [n.to_dict(with_content=False) for n in nodes]}

    async def add_document(self, model_id: ModelId,
                           name: Annotated[str, Field(description="Archive name, e.g. the document title.",
                                                      min_length=1, max_length=MAX_NAME_CHARS)],
                           text: Annotated[str, Field(description="The document as plain text or Markdown "
                                                                  "(# headings become sections).",
                                                      max_length=MAX_DOCUMENT_CHARS_OVER_HTTP, **_shown(minLength=1))],
                           ctx: Context) -> dict[str, Any]:
        """Remember a document: it becomes a new archive (a memory tree) of the model_id. Long
        documents take a while; progress is reported stage by stage (chunk, summarize, embed,
        merge, store). Returns the archive (id, leaves, nodes, depth). A document is remembered once:
        the same text sent again (after a lost reply, or under another name) returns the archive
        that holds it, with "already_in_library" saying so."""
        def report(event: Progress) -> None:
            message = f"{event.stage}: {event.detail}".strip(": ")
            try:
                from_thread.run(ctx.report_progress, event.done, event.total or None, message)
            except ValueError:  # no MCP request to report to (a REST call): nothing to tell
                pass

        def build() -> dict[str, Any]:
            with _tool_errors():
                try:
                    return {"archive": self.forest.ingest_text(model_id, name, text, progress=report).to_dict()}
                except AlreadyInLibrary as held:   # sent again after a lost reply, or the same text anew
                    return {"archive": self.forest.archive(model_id, held.archive_id).to_dict(),
                            "already_in_library": str(held)}

        # Waiting builds wait here, not in worker threads, so they cannot starve the read tools.
        self._building = self._building or anyio.Semaphore(1)
        async with self._building:
            return await anyio.to_thread.run_sync(build)

    def ask_memory(self, model_id: ModelId,
                   question: Annotated[str, Field(description="The question to answer from memory.",
                                                  **_shown(minLength=1, maxLength=MAX_QUERY_CHARS))],
                   session_id: Annotated[str | None, Field(
                       description="Optional research session: its directives and briefing guide the answer, "
                                   "and the question, steps and answer are remembered in it.",
                       **_shown(minLength=1, maxLength=MAX_SESSION_ID))] = None,
                   archive_ids: Annotated[list[int] | None, Field(
                       description="Optional: ask over these archives only (ids from list_archives); "
                                   "default every archive of the model_id.",
                       max_length=MAX_ARCHIVES_PER_CALL, **_shown(minItems=1))] = None,
                   ) -> dict[str, Any]:
        """Answer a question from the model_id's memory with the ANSWER/EXPLORE loop: retrieve,
        then explore summary nodes until passages are relevant enough, then answer. Returns the
        answer, who answered (Claude, or the offline extractive policy), the cited nodes with
        their pages, and the trace of every decision. With a session_id, also 'research': the
        session's briefing, conflicts found between papers with their reconciliation, and a
        compaction report when the session's conversation was compacted."""
        with _tool_errors():
            if session_id is None:
                return self.forest.ask(model_id, question, archive_ids=archive_ids).to_dict()
            state, turn = self.forest.ask_in_session(model_id, session_id, question, archive_ids=archive_ids)
            return {**state.to_dict(), "research": turn.to_dict()}

    def compare_papers(self, model_id: ModelId,
                       questions: Annotated[list[str], Field(
                           description="The questions, one column each, e.g. [\"Which datasets do they use?\", "
                                       "\"How large is the model?\"].",
                           **_shown(minItems=1, maxItems=MAX_QUESTIONS))],
                       archive_ids: Annotated[list[int] | None, Field(
                           description="Optional: the papers to compare (ids from list_archives); default every "
                                       "archive of the model_id.", max_length=MAX_ARCHIVES_PER_CALL,
                                       **_shown(minItems=1))] = None,
                       threshold: Annotated[float | None, Field(
                           description="Minimum relevance (0-1) of a cell's passage, else the cell is not found "
                                       f"(default {FOUND_THRESHOLD}); lower it to fill more cells with weaker matches.",
                           **_shown(minimum=0, maximum=1))] = None,
                       ) -> dict[str, Any]:
        """Compare papers as a table: every question asked of every paper, each paper answering from
        its own tree. Each cell holds the paper's sentences that best answer the question, quoted,
        with the passage's node_id and citation (page, section), and found; a cell whose best passage
        is not relevant enough says found false ("not found") instead. Extractive: no LLM is called.
        A table over the limit of cells (papers × questions) is refused with the limit named."""
        with _tool_errors():
            return self.forest.compare(model_id, questions, archive_ids, threshold=threshold).to_dict()

    def search_episodic_memory(self, model_id: ModelId, query: Query,
                               time_range: Annotated[str | None, Field(description=(
                                   "Only events in this span: " + TIME_RANGE_HELP + ". Default: all time."),
                                   max_length=MAX_TIME_RANGE_CHARS)] = None,
                               session_id: Annotated[str | None, Field(
                                   description="Only this research session's events; default every session.",
                                   **_shown(minLength=1, maxLength=MAX_SESSION_ID))] = None,
                               top_k: Annotated[int, Field(description="How many events (1-100).",
                                                           **_shown(minimum=1, maximum=MAX_TOP_K_MEMORIES))] = 5,
                               ) -> dict[str, Any]:
        """Search the research history: earlier questions with their answers (the nodes explored
        on the way in their data), findings (including notes folded out of the briefing), knowledge
        updates and compaction summaries, with their timestamps. Ranked by similarity x retention,
        where retention exp(-days/S) lowers old, never-recalled events; each event returned counts
        as recalled and is remembered longer (S grows)."""
        with _tool_errors():
            found = self.forest.research.search_episodic(model_id, query, time_range, top_k, session_id)
            return {"query": query, "time_range": time_range, "events": [f.to_dict() for f in found]}

    def update_semantic_knowledge(self, model_id: ModelId,
                                  topic: Annotated[str, Field(description="What the conclusion is about, e.g. "
                                                                          "'feature fusion in few-shot settings'.",
                                                              **_shown(minLength=1, maxLength=MAX_TOPIC_CHARS))],
                                  conclusion: Annotated[str, Field(description="The conclusion to keep, with its "
                                                                               "conditions and sources.",
                                                                   **_shown(minLength=1,
                                                                            maxLength=MAX_CONCLUSION_CHARS))]
                                  ) -> dict[str, Any]:
        """Record a lasting research conclusion on a topic in the model_id's semantic knowledge,
        which is shown in every later prompt of every session. A topic already known gets a new
        version; earlier versions are kept and returned as history."""
        with _tool_errors():
            return self.forest.research.update_knowledge(model_id, topic, conclusion)

    def get_research_briefing(self, model_id: ModelId, session_id: SessionId) -> dict[str, Any]:
        """The session's prompt preamble: the core directives, the semantic knowledge and the
        briefing ([Current Focus], [Known Constraints], [Key Findings], older notes folded away
        under a line budget), plus the workspace notes with their ids."""
        with _tool_errors():
            research = self.forest.research
            briefing = research.briefing(model_id, session_id)
            return {"preamble": research.preamble(model_id, session_id), "briefing": briefing.to_dict(),
                    "workspace": [i.to_dict() for i in research.workspace(model_id, session_id)]}

    def add_research_note(self, model_id: ModelId, session_id: SessionId,
                          kind: Annotated[str, Field(description="'focus' (replaces the current focus), "
                                                                 "'constraint' or 'finding'.")],
                          text: Annotated[str, Field(description="The note.", **_shown(minLength=1, maxLength=MAX_NOTE_CHARS))],
                          source: Annotated[str, Field(description="Where it comes from, e.g. 'node 42, p. 7'.",
                                                       max_length=MAX_NOTE_SOURCE_CHARS)] = "") -> dict[str, Any]:
        """Add a note to the session's workspace (it shows in the briefing, and stays findable with
        search_episodic_memory once older notes fold away)."""
        with _tool_errors():
            return {"note": self.forest.research.add_note(model_id, session_id, kind, text, source).to_dict()}


    def reconcile_passages(self, model_id: ModelId, node_id_a: NodeId, node_id_b: NodeId,
                           session_id: Annotated[str | None, Field(
                               description="Optional research session whose directives guide the review.",
                               **_shown(minLength=1, maxLength=MAX_SESSION_ID))] = None) -> dict[str, Any]:
        """Two passages (LEAF_CHUNK ids, usually from different papers) that seem to disagree:
        a third-party review of each side's experimental conditions, and a merged conclusion with
        the boundary conditions under which each claim holds. reviewed_by says whether Claude
        reviewed it or offline rules built a side-by-side (claims, numbers, conditions)."""
        with _tool_errors():
            return self.forest.research.reconcile_nodes(model_id, node_id_a, node_id_b, session_id).to_dict()


    def process_memory(self, user_id: UserId,
                       input: Annotated[str, Field(description="The user's message (the stimulus).",
                                                   **_shown(minLength=1, maxLength=MAX_MEMORY_CHARS))],
                       agent_id: AgentScope = None, run_id: RunScope = None,
                       metadata: Metadata = None) -> dict[str, Any]:
        """Call with every user message. Returns at once what is known about the user that relates
        to it: vector_chunks (memories with scores) and graph_relations (source, relationship,
        target from the user's knowledge graph, up to 2 hops from the people and things the
        message names), and metadata.has_memory. In the background the message is classified:
        private information (preferences, experiences, relations, plans) is remembered, general
        knowledge is not. The reply never waits for that write."""
        with _tool_errors():
            return self.forest.personal.process_memory(user_id, input, agent_id=agent_id, run_id=run_id,
                                                       metadata=metadata).to_dict()

    def debug_process_memory(self, user_id: UserId,
                             input: Annotated[str, Field(description="The user's message.",
                                                         **_shown(minLength=1, maxLength=MAX_MEMORY_CHARS))]) -> dict[str, Any]:
        """For developers: process_memory run synchronously, explained in words: the vector matches
        with scores, the graph paths, the storage decision and its reason, the time of each stage
        and the raw data. It does store the message when it is private."""
        with _tool_errors():
            return {"trace": self.forest.personal.debug_process_memory(user_id, input)}

    def get_user_graph(self, user_id: UserId, include_ended: Annotated[bool, Field(
            description="also the relations a later statement superseded, with valid_from/valid_to")] = False,
    ) -> dict[str, Any]:
        """The user's knowledge graph as it holds now: entities and (source, relationship, target)
        relations; include_ended adds what was true before, with its validity dates."""
        with _tool_errors():
            return self.forest.personal.user_graph(user_id, include_ended=include_ended).to_dict()

    def memory(self, user_id: UserId,
               action: Annotated[str, Field(description="add | search | update | delete | history")],
               text: Annotated[str | list[str] | None, Field(
                   description="add: one memory or a list (batch); update: the new text.")] = None,
               query: Annotated[str | None, Field(description="search: what to look for.",
                                                  **_shown(maxLength=MAX_MEMORY_CHARS))] = None,
               memory_id: Annotated[int | None, Field(description="update, delete, history: the memory's id "
                                                                  "(history without it: every change).",
                                                      **_shown(minimum=1))] = None,
               agent_id: AgentScope = None, run_id: RunScope = None, metadata: Metadata = None,
               filters: Annotated[dict[str, str | int | float | bool] | None, Field(
                   description="search: agent_id, run_id and metadata keys the memories must match.")] = None,
               top_k: Annotated[int, Field(description="search: how many (1-100).",
                                           **_shown(minimum=1, maximum=MAX_TOP_K_MEMORIES))] = 5,
               ) -> dict[str, Any]:
        """Read and write the user's memories directly. Returns {operation, status, payload};
        status is success, fallback (the reason is in payload.error) or disabled (memory is
        switched off); an unreachable database is an error (HTTP 503), the call not done. Every
        change is kept in the history (old value, new value, event ADD, UPDATE or DELETE, who,
        when); delete erases the memory's words from the store, its history keeping only that it
        was added, changed and deleted. A new value of a one-value fact ("I live in Munich now" after
        "I live in Berlin") or an ending said outright ("I quit") replaces the earlier memory (an
        UPDATE in the history), keeping what a compound memory says that still holds; "I also ..."
        replaces nothing. Secrets in the text and metadata are
        stored as their type ("[PIN]")."""
        with _tool_errors():   # an outage (ServiceUnavailable) is a 503, as on every tool
            return self.forest.personal.memory_tool(action, user_id, text=text, query=query, memory_id=memory_id,
                                                    agent_id=agent_id, run_id=run_id, metadata=metadata,
                                                    filters=filters, top_k=top_k).to_dict()

    def clear_user_memory(self, user_id: UserId) -> dict[str, Any]:
        """Delete everything remembered about the user: memories, history, graph, tags and queued
        input. Cannot be undone."""
        with _tool_errors():
            return self.forest.personal.clear_user_memory(user_id).to_dict()


def _child(scored) -> dict[str, Any]:
    return {**scored.node.outline_entry(), "relevance_score": scored.relevance_score}


@contextmanager
def _tool_errors() -> Iterator[None]:
    """The engine's errors become ToolErrors with the same message (no traceback reaches a client)."""
    try:
        yield
    except ForestError as error:
        raise translated(error) from None
