"""Every limit a caller can meet, on every face, in one place, each with its reason. A limit a
deployer may want to move is a setting instead (forest.config: max_file_mb, max_document_chars,
rate_limit, context_budget_tokens ...); these hold whatever the deployment.
"""
from __future__ import annotations

# --- names and ids ------------------------------------------------------------------------------
MAX_MODEL_ID = 200        # a tenant's name, shown in every page and log line
MAX_SESSION_ID = 100      # a research session's name, part of an exported note's file name
MAX_SCOPE_ID = 200        # user_id, agent_id, run_id
MAX_ID = 2**63 - 1        # SQLite's INTEGER range: no stored row has an id outside 1..MAX_ID
MAX_PATH_CHARS = 4096     # PATH_MAX on Linux: no file has a longer path

# --- what a call carries ------------------------------------------------------------------------
MAX_QUERY_CHARS = 4000    # a question or search; longer is a document, not a query
MAX_MEMORY_CHARS = 4000   # one personal memory's input, memory or query: a turn of conversation
MAX_METADATA_KEYS = 20    # metadata filters are matched key by key in SQL
# Nesting of any JSON a face receives (tool arguments, chats, vector calls, exports, model replies):
# far beyond what any needs (an export is 4 deep), far below the interpreter's recursion limit.
MAX_JSON_DEPTH = 64
# Digits of an integer in any JSON: more than any id, count or number a caller has, and far below
# the interpreter's own limit (4,300), whose ValueError would otherwise be a 500.
MAX_INT_DIGITS = 100
MAX_BODY_BYTES = 8_000_000  # an HTTP request body, declared or chunked
# A document sent as text over MCP or REST: every character may take 4 bytes in the body.
MAX_DOCUMENT_CHARS_OVER_HTTP = MAX_BODY_BYTES // 4

# --- research memory (what an agent writes and reads back in every briefing) --------------------
MAX_NOTE_CHARS = 2000          # a finding, constraint or focus: a sentence or two, shown in every briefing
MAX_NOTE_SOURCE_CHARS = 300    # where a note comes from ("node 42, p. 7"); longer is cut
MAX_TOPIC_CHARS = 200          # a knowledge topic, the key a conclusion is kept under
MAX_CONCLUSION_CHARS = 4000    # a conclusion kept about a topic
MAX_MESSAGE_CHARS = 100_000    # a conversation message or an episodic event (an answer with its quotes)
MAX_CORE_CHARS = 20_000        # the directives file, read into every prompt
MAX_TIME_RANGE_CHARS = 100     # an episodic search's time range ("2026-11-01..2026-11-28", "last week")

# --- how much one call may ask for ------------------------------------------------------------
MAX_TOP_K_PASSAGES = 200  # hits of a search, retrieve or context over a forest's passages
MAX_TOP_K_MEMORIES = 100  # a user's memories returned by one search
MAX_MEMORY_BATCH = 100    # memories added in one call of the memory tool
MAX_PAGE_SIZE = 200       # a page of mem0's memory listing
MAX_FILTER_DEPTH = 8      # mem0 filters' AND/OR/NOT nesting
MAX_QUESTIONS = 10        # columns of one comparison of papers
MAX_CELLS = 300           # papers x questions: each cell walks its paper's tree (docs/compare.md)
MAX_ARCHIVES_PER_CALL = 200  # archives a search or comparison is confined to, named one by one
MAX_TREE_DEPTH_SHOWN = 64    # levels of one archive's tree sent at once (a built tree is ~10 deep)

# A file read for a document when no setting is given (the max_file_mb setting's default).
DEFAULT_MAX_FILE_BYTES = 100_000_000

# --- imports of archives and libraries ---------------------------------------------------------
# A file is parsed whole in memory and every node written in one transaction, so an unbounded export
# could exhaust memory or hold the write lock for minutes. A 1,000-page book is about 10,000 nodes
# and 30 MB with vectors.
MAX_IMPORT_BYTES = 256 * 1024 * 1024  # an archive export file, checked before it is read
MAX_IMPORT_NODES = 100_000            # nodes of one imported archive
# Every node stores its path from the root: the ids of all paths together are bounded (a built tree
# is ~10 deep; a 3,000-deep chain fits).
MAX_IMPORT_PATH_IDS = 5_000_000
MAX_NAME_CHARS = 1_000                # archive, document and source names, titles, headings
MAX_SUMMARY_CHARS = 20_000            # a summary (a build writes a few hundred characters)
MAX_LIBRARY_CHARS = 200_000           # a paper's library metadata (an abstract, its creators and tags)
# A .bib field: longer is cut, with a note, before LaTeX is decoded (an abstract runs to a few
# thousand characters, the author list of a large collaboration to some hundreds of names).
MAX_BIBTEX_FIELD_CHARS = 10_000

# --- what a model may send or be sent ---------------------------------------------------------
# Wider than any embedding model (the widest common ones have 4,096 dimensions): a server sending
# more is broken or hostile, and each such vector would cost the store megabytes.
MAX_EMBEDDING_DIM = 16_384
# Tokens of one text that are embedded (docs/security.md): E5 reads 512 tokens at a time, so a
# text's cost grew with its length. Past the budget a text is kept whole (stored, found by its
# words) and its vector is of its first EMBED_TOKEN_BUDGET tokens: two E5 windows.
EMBED_TOKEN_BUDGET = 1024
