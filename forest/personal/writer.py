"""The write worker: a thread that takes process_memory's input from the durable queue (a table of
the store) and writes it (WritePolicy plans and applies each write). A write that fails is logged and retried
with backoff; the worker never ends on an exception. Claims are leased, so input a dead process
held is taken over; each write commits together with its "done" mark, exactly once."""
from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from forest.errors import ServiceUnavailable
from forest.storage.sql.database import Database
from forest.personal.memory_store import PersonalStore, QueuedInput
from forest.personal.policy import WritePlan, WritePolicy
from forest.personal.records import QueueCounts, WorkerState

log = logging.getLogger("forest.personal")

MAX_ATTEMPTS = 5
RETRY_BASE_SECONDS = 2.0
RETRY_MAX_SECONDS = 300.0
WORKER_BATCH = 32  # offline: one embedding call for the batch; with Claude, one item at a time
# A claim outlives the slowest batch (an LLM call's budget, forest.models.llm, is 150 s an item);
# after it another worker may retry.
LEASE_SECONDS = 600.0


class WriteWorker:
    def __init__(self, db: Database, store: PersonalStore, policy: WritePolicy, clock: Callable[[], float],
                 one_at_a_time: bool) -> None:
        """`clock` is read at every use (a test may change it); `one_at_a_time`: items are written
        singly (each costs an LLM request) rather than in batches."""
        self.db = db
        self.store = store
        self.policy = policy
        self.clock = clock
        self._batch = 1 if one_at_a_time else WORKER_BATCH
        self._claim = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._health: dict[str, Any] = {"failures": 0, "last_error": None, "last_error_at": None, "written": 0}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._thread: threading.Thread | None = None
        self._thread_lock = threading.Lock()

    def wake(self) -> None:
        """New input is queued: start the thread if it is not running and let it look."""
        with self._thread_lock:
            if self._thread is None or not self._thread.is_alive():
                self._release_orphans()
                self._stop.clear()
                self._thread = threading.Thread(target=self._run, name="personal-memory-writer", daemon=True)
                self._thread.start()
        self._wake.set()

    def drain(self, timeout: float = 60.0) -> bool:
        """Wait until no queued input is due (tests, evaluation); False on timeout."""
        self.wake()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._idle.clear()
            self._wake.set()
            if not self.store.outstanding(self.clock()) and self._idle.wait(0.05):
                return True
            time.sleep(0.02)
        return False

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def state(self) -> WorkerState:
        """This process's write worker, for the Server page: whether it runs, the queue's depth by
        status (every user), failures since start and the last error. (`forest doctor`, from any
        process, reads the queue itself: PersonalStore.queue_health.)"""
        return WorkerState(self._thread is not None and self._thread.is_alive(),
                           QueueCounts(**self.store.queue_totals()), **self._health)

    def _release_orphans(self) -> None:
        try:
            self.store.release_orphans(socket.gethostname(), _process_alive)
        except Exception as exc:
            self._failed("releasing the claims of dead processes", exc)

    def _failed(self, what: str, exc: Exception) -> None:
        log.error("personal memory writer: %s failed: %s", what, exc, exc_info=exc)
        self._health.update(failures=self._health["failures"] + 1, last_error=f"{what}: {type(exc).__name__}: {exc}",
                            last_error_at=self.clock())

    def _run(self) -> None:
        """Never ends on an exception: every failure is logged, counted and retried later."""
        while not self._stop.is_set():
            try:
                batch = self.store.claim(self.clock(), self._batch, self._claim, LEASE_SECONDS)
            except Exception as exc:
                self._failed("claiming queued input", exc)
                self._stop.wait(1.0)
                continue
            if not batch:
                self._idle.set()
                # Another worker process that died holding a claim (a kill, a crash): its items
                # are taken over now, not when its lease runs out minutes later.
                self._release_orphans()
                self._wake.wait(timeout=1.0)
                self._wake.clear()
                continue
            try:
                prepared = self.policy.prepare(batch)
            except Exception as exc:  # e.g. the embedder failed: every item is retried later
                self._failed("preparing a batch", exc)
                for item in batch:
                    self._retry(item, exc)
                continue
            for item, plan in zip(batch, prepared):
                self._commit(item, plan)
            self._finish_erasures()

    def _finish_erasures(self) -> None:
        """Input the privacy filter discarded leaves the files (see Database.finish_erasures)."""
        try:
            self.db.finish_erasures()
        except Exception as exc:  # the mark stays: the next batch or the next open finishes it
            self._failed("erasing discarded input", exc)

    def _commit(self, item: QueuedInput, plan: WritePlan) -> None:
        """One short transaction: the memory, its facts and "done" commit together, only while the
        claim is still ours (exactly once)."""
        try:
            with self.store.writing(item.user_id) as conn:
                if not self.store.holds(conn, item, self.clock()):
                    log.warning("queued input %d: the claim ran out before writing; another worker has it", item.id)
                    return
                decision = self.policy.apply(conn, plan)
                self.store.finish(conn, item, decision)
            self._health["written"] += 1
        except Exception as exc:  # logged and retried; the caller already has its context
            self._failed(f"writing queued input {item.id}", exc)
            self._retry(item, exc)

    def _retry(self, item: QueuedInput, exc: Exception) -> None:
        # A server that does not answer (the database, a model) is no fault of the input: it is
        # tried again, at most RETRY_MAX_SECONDS apart, until the server is back.
        give_up = item.attempts + 1 >= MAX_ATTEMPTS and not isinstance(exc, ServiceUnavailable)
        log.warning("writing queued input %d of user %s failed (attempt %d%s): %s", item.id, item.user_id,
                    item.attempts + 1, ", giving up" if give_up else "", exc)
        try:
            self.store.retry_later(item, f"{type(exc).__name__}: {exc}",
                                   self.clock() + min(RETRY_BASE_SECONDS * 2 ** min(item.attempts, 16), RETRY_MAX_SECONDS),
                                   give_up)
        except Exception as again:  # the lease runs out and the item is claimed again
            self._failed(f"scheduling a retry of queued input {item.id}", again)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True
