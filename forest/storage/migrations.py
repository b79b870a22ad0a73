"""Numbered schema migrations, applied in order at open; PRAGMA user_version records the last.

Never edit a released migration: add the next number, so stores made by older versions upgrade.
"""
from __future__ import annotations

MIGRATIONS: list[tuple[int, str]] = [
    (1, """
    CREATE TABLE archives (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        model_id     TEXT NOT NULL,
        name         TEXT NOT NULL,
        source       TEXT,
        status       TEXT NOT NULL DEFAULT 'building' CHECK (status IN ('building', 'ready', 'failed')),
        builder_pid  INTEGER,
        builder_host TEXT,
        error        TEXT,
        settings     TEXT NOT NULL DEFAULT '{}',
        created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
        updated_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
    );
    CREATE INDEX idx_archives_model ON archives (model_id, status);

    CREATE TABLE memory_nodes (
        id               INTEGER PRIMARY KEY AUTOINCREMENT,  -- ids are never reused: agents hold them
        archive_id       INTEGER NOT NULL REFERENCES archives (id) ON DELETE CASCADE,
        parent_id        INTEGER REFERENCES memory_nodes (id) ON DELETE SET NULL,
        path             TEXT NOT NULL,
        depth            INTEGER NOT NULL,
        node_type        TEXT NOT NULL CHECK (node_type IN ('LEAF_CHUNK', 'SUMMARY_NODE')),
        content          TEXT NOT NULL,
        summary          TEXT NOT NULL,
        leaf_index       INTEGER,          -- leaves: position in the document, 0-based
        char_start       INTEGER,          -- leaves: offset of the chunk in the source text
        merge_order      INTEGER,          -- summary nodes: 1 for the archive's first merge, ...
        merge_similarity REAL,             -- summary nodes: similarity of the merged pair
        created_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
    );
    CREATE INDEX idx_nodes_archive_parent ON memory_nodes (archive_id, parent_id);
    CREATE INDEX idx_nodes_archive_path ON memory_nodes (archive_id, path);
    CREATE INDEX idx_nodes_parent ON memory_nodes (parent_id);
    """),
    (2, """
    -- Provenance of each summary, so offline (extractive) summaries are labelled as such.
    ALTER TABLE memory_nodes ADD COLUMN summary_source TEXT NOT NULL DEFAULT 'unknown';
    -- Leaves under a node form a contiguous range; stored so subtrees can be shown in order.
    ALTER TABLE memory_nodes ADD COLUMN first_leaf INTEGER;
    ALTER TABLE memory_nodes ADD COLUMN last_leaf INTEGER;
    UPDATE memory_nodes SET first_leaf = leaf_index, last_leaf = leaf_index WHERE node_type = 'LEAF_CHUNK';
    """),
    (3, """
    -- Where a node's text sits in its source, so answers cite "p. 7, §3.2". Summary nodes carry
    -- the page range of their leaves, and the section when all their leaves share one.
    ALTER TABLE memory_nodes ADD COLUMN section TEXT;
    ALTER TABLE memory_nodes ADD COLUMN page_start INTEGER;
    ALTER TABLE memory_nodes ADD COLUMN page_end INTEGER;
    ALTER TABLE memory_nodes ADD COLUMN chunk_kind TEXT;   -- leaves: 'text' or 'caption'
    UPDATE memory_nodes SET chunk_kind = 'text' WHERE node_type = 'LEAF_CHUNK';
    -- The budgeted context reads the leaves under a node by their leaf range.
    CREATE INDEX idx_nodes_archive_leaf ON memory_nodes (archive_id, leaf_index);
    """),
    (4, """
    -- BM25 full-text search. The body is forest.storage.fulltext.index_text (our tokens: words, CJK
    -- bigrams), computed by a SQL function every connection registers (forest.storage.db).
    CREATE VIRTUAL TABLE node_text USING fts5(body, tokenize = 'unicode61 remove_diacritics 2');
    INSERT INTO node_text (rowid, body)
        SELECT id, forest_index_text(node_type, summary, content) FROM memory_nodes;
    CREATE TRIGGER node_text_insert AFTER INSERT ON memory_nodes BEGIN
        INSERT INTO node_text (rowid, body) VALUES (new.id, forest_index_text(new.node_type, new.summary, new.content));
    END;
    CREATE TRIGGER node_text_delete AFTER DELETE ON memory_nodes BEGIN
        DELETE FROM node_text WHERE rowid = old.id;
    END;
    """),
    (5, """
    -- Research memory (seed 002), per model_id and session. Times are Unix seconds (REAL): the
    -- retention arithmetic and time ranges compare them directly.
    CREATE TABLE workspace_items (
        id         INTEGER PRIMARY KEY AUTOINCREMENT,
        model_id   TEXT NOT NULL,
        session_id TEXT NOT NULL,
        kind       TEXT NOT NULL CHECK (kind IN ('focus', 'constraint', 'finding')),
        text       TEXT NOT NULL,
        source     TEXT NOT NULL DEFAULT '',   -- where it came from: a citation, "compaction", ...
        created_at REAL NOT NULL,
        removed_at REAL
    );
    CREATE INDEX idx_workspace_session ON workspace_items (model_id, session_id, kind, removed_at);

    CREATE TABLE episodic_events (
        id               INTEGER PRIMARY KEY AUTOINCREMENT,
        model_id         TEXT NOT NULL,
        session_id       TEXT NOT NULL,
        kind             TEXT NOT NULL,   -- question, exploration, answer, finding, ...
        content          TEXT NOT NULL,
        data             TEXT NOT NULL DEFAULT '{}',
        created_at       REAL NOT NULL,
        last_recalled_at REAL,
        recall_count     INTEGER NOT NULL DEFAULT 0,
        stability_days   REAL NOT NULL,   -- S of the retention exp(-dt/S); grows on each recall
        embedding        BLOB NOT NULL    -- float32, unit length
    );
    -- Covers what the retention needs (search_episodic reads it for every event in range):
    -- the rows themselves hold the vectors, and scanning them is far slower.
    CREATE INDEX idx_episodic_clock ON episodic_events
        (model_id, created_at, session_id, kind, id, last_recalled_at, stability_days);

    CREATE TABLE semantic_knowledge (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        model_id      TEXT NOT NULL,
        topic         TEXT NOT NULL,
        topic_key     TEXT NOT NULL,      -- the topic normalized, so "Few-shot fusion" = "few-shot  FUSION"
        conclusion    TEXT NOT NULL,
        version       INTEGER NOT NULL,
        created_at    REAL NOT NULL,
        superseded_at REAL                -- NULL for the version in force
    );
    CREATE UNIQUE INDEX idx_knowledge_version ON semantic_knowledge (model_id, topic_key, version);

    CREATE TABLE session_messages (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        model_id     TEXT NOT NULL,
        session_id   TEXT NOT NULL,
        role         TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'summary')),
        content      TEXT NOT NULL,
        tokens       INTEGER NOT NULL,
        event_id     INTEGER REFERENCES episodic_events (id),   -- the original, kept after compaction
        created_at   REAL NOT NULL,
        compacted_at REAL                 -- set when a compaction summary replaced it
    );
    CREATE INDEX idx_messages_session ON session_messages (model_id, session_id, compacted_at);
    """),
    (6, """
    -- Personal memory service (seeds 003, 004), per user_id. Times are Unix seconds (REAL).
    CREATE TABLE personal_memories (
        id         INTEGER PRIMARY KEY AUTOINCREMENT,
        user_id    TEXT NOT NULL,
        agent_id   TEXT,
        run_id     TEXT,
        memory     TEXT NOT NULL,
        metadata   TEXT NOT NULL DEFAULT '{}',   -- free keys (scene, trip_id, ...) that filters match
        embedding  BLOB NOT NULL,                -- float32, unit length
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        deleted_at REAL                          -- soft delete: the history keeps what it said
    );
    CREATE INDEX idx_personal_user ON personal_memories (user_id, deleted_at);

    CREATE TABLE personal_memory_history (
        id         INTEGER PRIMARY KEY AUTOINCREMENT,
        memory_id  INTEGER NOT NULL REFERENCES personal_memories (id),
        user_id    TEXT NOT NULL,
        event      TEXT NOT NULL CHECK (event IN ('ADD', 'UPDATE', 'DELETE')),
        old_value  TEXT,
        new_value  TEXT,
        actor      TEXT NOT NULL,               -- who changed it: an agent_id, "user", "process_memory", ...
        reason     TEXT NOT NULL DEFAULT '',
        created_at REAL NOT NULL
    );
    CREATE INDEX idx_personal_history ON personal_memory_history (user_id, memory_id);

    -- Accepted process_memory input waits here until written: a crash or restart loses none of it.
    CREATE TABLE personal_write_queue (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        user_id     TEXT NOT NULL,
        agent_id    TEXT,
        run_id      TEXT,
        input       TEXT NOT NULL,
        metadata    TEXT NOT NULL DEFAULT '{}',
        observed_at REAL NOT NULL,              -- when it was said (the memory's time)
        status      TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'failed')),
        attempts    INTEGER NOT NULL DEFAULT 0,
        next_try_at REAL NOT NULL,
        decision    TEXT,                       -- JSON: privacy label, reason, what was written
        last_error  TEXT
    );
    CREATE INDEX idx_write_queue_due ON personal_write_queue (status, next_try_at);

    CREATE TABLE personal_triples (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        user_id      TEXT NOT NULL,
        memory_id    INTEGER REFERENCES personal_memories (id),
        source       TEXT NOT NULL,
        relationship TEXT NOT NULL,
        target       TEXT NOT NULL,
        source_key   TEXT NOT NULL,
        target_key   TEXT NOT NULL,
        created_at   REAL NOT NULL,
        UNIQUE (user_id, source_key, relationship, target_key)
    );

    CREATE TABLE personal_tags (
        user_id    TEXT NOT NULL,
        tag        TEXT NOT NULL,
        kind       TEXT NOT NULL,               -- topic or preference
        weight     REAL NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (user_id, tag)
    );
    """),
    (7, """
    -- Trees that read like the paper (outline-aware, condensed, text stored once).
    -- Summary nodes get a title (the heading path they cover, or a label of their content); leaves
    -- keep the headings above them (a JSON list, outermost first) so a tree can be re-planned
    -- from its stored leaves (`forest rebuild`).
    ALTER TABLE memory_nodes ADD COLUMN title TEXT;
    ALTER TABLE memory_nodes ADD COLUMN heading_path TEXT;
    UPDATE memory_nodes SET heading_path = json_array(section)
        WHERE node_type = 'LEAF_CHUNK' AND section IS NOT NULL;
    -- Seed 000 §2.1's content of a summary node (its children's content joined) is derived from
    -- its leaves on read instead of being stored again in every ancestor.
    UPDATE memory_nodes SET content = '' WHERE node_type = 'SUMMARY_NODE';
    -- Every binary merge of the seed's rule, also those condensed away into an n-ary node, so the
    -- merge order can be replayed: left = leaves first_leaf..split_leaf-1, right = split_leaf..last_leaf.
    CREATE TABLE archive_merges (
        archive_id  INTEGER NOT NULL REFERENCES archives (id) ON DELETE CASCADE,
        merge_order INTEGER NOT NULL,
        first_leaf  INTEGER NOT NULL,
        split_leaf  INTEGER NOT NULL,
        last_leaf   INTEGER NOT NULL,
        similarity  REAL,                 -- NULL for a join of archives
        node_id     INTEGER,              -- the summary node it made, NULL if condensed into its parent
        PRIMARY KEY (archive_id, merge_order)
    );
    -- A summary node's title is searchable text too.
    DROP TRIGGER node_text_insert;
    CREATE TRIGGER node_text_insert AFTER INSERT ON memory_nodes BEGIN
        INSERT INTO node_text (rowid, body) VALUES (new.id, forest_index_text(
            new.node_type, COALESCE(new.title || char(10), '') || new.summary, new.content));
    END;
    INSERT INTO archive_merges (archive_id, merge_order, first_leaf, split_leaf, last_leaf, similarity, node_id)
        SELECT n.archive_id, n.merge_order, n.first_leaf,
               (SELECT MIN(c.first_leaf) FROM memory_nodes c WHERE c.parent_id = n.id AND c.first_leaf > n.first_leaf),
               n.last_leaf, n.merge_similarity, n.id
        FROM memory_nodes n WHERE n.node_type = 'SUMMARY_NODE' AND n.merge_order IS NOT NULL
          AND EXISTS (SELECT 1 FROM memory_nodes c WHERE c.parent_id = n.id AND c.first_leaf > n.first_leaf);
    """),
    (8, """
    -- Personal memory retrieval, queue leases, vector provenance, facts shared by memories.
    -- BM25 over each live memory's text as forest.text.tokenize gives it (words, CJK bigrams),
    -- Porter-stemmed; rowid = the memory's id. Memories older than this table are indexed by
    -- PersonalStore.index_missing when the service opens (the tokenizer is Python).
    CREATE VIRTUAL TABLE IF NOT EXISTS personal_memory_text USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2');

    -- The embedder that made a memory's vector: vectors of two embedders are never compared.
    ALTER TABLE personal_memories ADD COLUMN embedder TEXT;

    -- A worker claims queued input with a lease; finishing checks the claim, so two processes
    -- on one store never write the same input twice, and a crashed worker's lease runs out.
    ALTER TABLE personal_write_queue ADD COLUMN claim TEXT;
    ALTER TABLE personal_write_queue ADD COLUMN lease_until REAL;

    -- Which memories state a fact: a fact shared by two memories lives while one of them does.
    CREATE TABLE IF NOT EXISTS personal_triple_sources (
        triple_id  INTEGER NOT NULL REFERENCES personal_triples (id),
        memory_id  INTEGER NOT NULL REFERENCES personal_memories (id),
        PRIMARY KEY (triple_id, memory_id)
    );
    INSERT OR IGNORE INTO personal_triple_sources (triple_id, memory_id)
        SELECT id, memory_id FROM personal_triples WHERE memory_id IS NOT NULL;
    CREATE INDEX IF NOT EXISTS idx_triple_sources_memory ON personal_triple_sources (memory_id);
    """),
    # 9: episodic event vectors carry the embedder that made them (NULL: made before this tag, unknown).
    (9, """
    ALTER TABLE episodic_events ADD COLUMN embedder TEXT;
    """),
    # 10: queued input carries the vector process_memory made of it (and its embedder), so the
    # worker does not embed the same text a second time; input and memories carry their
    # conversation context (the input said just before), indexed with them in a second BM25
    # column (the index is rebuilt from the memories when the service starts: index_missing).
    (10, """
    ALTER TABLE personal_write_queue ADD COLUMN embedding BLOB;
    ALTER TABLE personal_write_queue ADD COLUMN embedder TEXT;
    ALTER TABLE personal_write_queue ADD COLUMN context TEXT;
    ALTER TABLE personal_memories ADD COLUMN context TEXT;
    CREATE INDEX idx_write_queue_user_time ON personal_write_queue (user_id, observed_at);
    DROP TABLE personal_memory_text;
    CREATE VIRTUAL TABLE personal_memory_text USING fts5(body, context,
        tokenize = 'porter unicode61 remove_diacritics 2');
    """),
    # 11: deleted text leaves the files. A memory's context is the memory kept of what was said
    # before it (context_id), never queued input the privacy filter discarded; written queue items
    # keep their decision only; deleted memories keep no text, vector or metadata, nor does their
    # history. FTS indexes named in pending_erasures still hold deleted terms in old segments:
    # Database.finish_erasures merges them away (and the first open after this migration also
    # rewrites the file, whose free pages hold what was deleted before secure_delete was on).
    (11, """
    ALTER TABLE personal_memories ADD COLUMN context_id INTEGER;
    CREATE TABLE pending_erasures (id INTEGER PRIMARY KEY AUTOINCREMENT, target TEXT NOT NULL);
    UPDATE personal_write_queue SET input = '', metadata = '{}', embedding = NULL, context = NULL WHERE status = 'done';
    UPDATE personal_write_queue SET context = NULL;
    UPDATE personal_memory_history SET old_value = NULL, new_value = NULL, reason = ''
        WHERE memory_id IN (SELECT id FROM personal_memories WHERE deleted_at IS NOT NULL);
    UPDATE personal_memories SET memory = '', metadata = '{}', embedding = x'', context = NULL
        WHERE deleted_at IS NOT NULL;
    UPDATE personal_memories SET context_id = (
        SELECT said.id FROM personal_memories said WHERE said.user_id = personal_memories.user_id
          AND said.deleted_at IS NULL AND said.memory = personal_memories.context ORDER BY said.id DESC LIMIT 1)
        WHERE context IS NOT NULL;
    DELETE FROM personal_memory_text WHERE rowid IN (
        SELECT id FROM personal_memories WHERE context IS NOT NULL AND context_id IS NULL);
    UPDATE personal_memories SET context = NULL WHERE context_id IS NULL;
    INSERT INTO pending_erasures (target) VALUES ('personal_memory_text'), ('node_text'), ('VACUUM');
    """),
]

LATEST_VERSION = MIGRATIONS[-1][0]
