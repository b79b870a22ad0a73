"""Faults only the server stack has (PostgreSQL + pgvector, a store no process owns): `forest serve`
workers SIGKILLed while clients keep writing through REST and MCP, `forest personal worker`
processes SIGKILLed while they share one write queue, and PostgreSQL restarted under that load.
Shared by tests/test_faults_server.py and bench/bench_faults.py --stack server.

Clients write documents (`add_document`) and personal input (`process_memory`), each with text no
other write has, and retry a failed call until it succeeds. Afterwards a fresh engine drains the
write queue and checks the store: a write a client was told succeeded is there exactly once (lost:
none; doubled: more than one), a write whose every call failed is there at most once and whole,
and `forest doctor --repair` leaves nothing to repair (drift: what it cannot). Every failed call
must have failed in time (an error, not a hang), and with a reply of one line, never a stack trace.
"""
from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx

from testkit.processes import answers_health, forest_env, free_port, stop_process
from testkit.topics import topic_text
from testkit import faults
from testkit.faults import Server, Store, open_forest
from forest import MemoryForest
from forest.personal.memory_store import PersonalStore

FOREST = str(Path(sys.executable).parent / "forest")
MODEL = "lab"
USER = "ann"
# The queue workers' scenario writes for several users: one user's input is written by one worker
# at a time (in order), so workers share a queue by user.
USERS = (USER, *(f"{USER}-{k}" for k in range(1, 6)))
TOPICS = ("volcanoes", "jazz", "photosynthesis")
# A call that has not answered after this long is a hang (the database pool gives up after 30 s).
HANG_SECONDS = 90.0
# How long one write may take to succeed, retries included.
WRITE_SECONDS = 300.0
STARTUP_SECONDS = 240.0


def server_env(store: Store) -> dict[str, str]:
    """The environment of every `forest` process on the store: faults.settings (offline, small
    leaves), one OpenMP thread each (many processes share two cores)."""
    return forest_env(Path(store.data_dir), FOREST_DATABASE_URL=store.database_url, FOREST_VECTOR_STORE="pgvector",
                      FOREST_CHUNK_SIZE="300", FOREST_CHUNK_OVERLAP="0", FOREST_SUMMARIZER="textrank",
                      OMP_NUM_THREADS="1")


# --- what the clients write -------------------------------------------------------------------
def document(n: int) -> tuple[str, str]:
    """Write n's archive name and text: a topic, and a sentence no other document holds."""
    return f"record {n}", f"## Record {n}\n\nSpecimen {n} was catalogued on arrival.\n\n{topic_text(TOPICS[n % 3])}"


def memory(n: int) -> str:
    """Write n's input: private (the privacy filter keeps it) and contradicting no other."""
    return f"My colleague number {n} is called Person{n}."


@dataclass
class Write:
    """One write a client makes, and every call it took."""
    kind: str                        # "document" | "memory"
    n: int
    face: str                        # "rest" | "mcp"
    errors: list[str] = field(default_factory=list)   # each failed call's error
    succeeded: bool = False

    @property
    def key(self) -> str:
        return document(self.n)[0] if self.kind == "document" else memory(self.n)


@dataclass
class Call:
    ok: bool
    error: str = ""
    seconds: float = 0.0
    server_said: bool = False        # the error is the server's reply (not a dropped connection)


# --- calling the tools --------------------------------------------------------------------------
def call(write: Write, endpoint: str, http: httpx.Client) -> Call:
    """One call of the write's tool through its face."""
    if write.kind == "document":
        name, text = document(write.n)
        tool, arguments = "add_document", {"model_id": MODEL, "name": name, "text": text}
    else:
        tool, arguments = "process_memory", {"user_id": USER, "input": memory(write.n)}
    return call_rest(http, endpoint, tool, arguments) if write.face == "rest" else call_mcp(endpoint, tool, arguments)


def call_rest(client: httpx.Client, endpoint: str, tool: str, arguments: dict[str, Any]) -> Call:
    """POST /tools/<tool>. A reply that is not 200 must be JSON {"error": one line}."""
    began = time.monotonic()
    try:
        reply = client.post(f"{endpoint}/tools/{tool}", json=arguments, timeout=HANG_SECONDS)
    except httpx.HTTPError as exc:
        return Call(False, f"{type(exc).__name__}: {exc}", time.monotonic() - began)
    seconds = time.monotonic() - began
    if reply.status_code == 200:
        return _judged(tool, reply.json(), seconds)
    try:
        said = reply.json()["error"]
    except (ValueError, KeyError, TypeError):
        said = f"(not a JSON error) {reply.text}"
    return Call(False, f"HTTP {reply.status_code}: {said}", seconds, server_said=True)


def call_mcp(endpoint: str, tool: str, arguments: dict[str, Any]) -> Call:
    """One MCP session over streamable HTTP for the call, as a client that reconnects does."""
    began = time.monotonic()
    try:
        result = asyncio.run(_mcp(endpoint, tool, arguments))
    except Exception as exc:  # noqa: BLE001 - a dropped connection comes as whatever the SDK raises
        return Call(False, f"{type(exc).__name__}: {_first(exc)}", time.monotonic() - began)
    seconds = time.monotonic() - began
    if result.is_error:
        return Call(False, "tool error: " + " ".join(c.text for c in result.content if hasattr(c, "text")), seconds,
                    server_said=True)
    return _judged(tool, result.structured_content, seconds)


async def _mcp(endpoint: str, tool: str, arguments: dict[str, Any]) -> Any:
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    with anyio.fail_after(HANG_SECONDS):
        http = create_mcp_http_client()
        async with (http, streamable_http_client(f"{endpoint}/mcp", http_client=http) as (read, write),
                    ClientSession(read, write) as session):
            await session.initialize()
            return await session.call_tool(tool, arguments)


def _judged(tool: str, result: dict[str, Any], seconds: float) -> Call:
    """process_memory answers even when it could not queue the input: then it says so."""
    if tool == "process_memory" and not result["metadata"]["queued"]:
        return Call(False, f"not queued: {result['metadata'].get('error')}", seconds, server_said=True)
    return Call(True, seconds=seconds)


def _first(exc: BaseException) -> str:
    """An exception group's first leaf, in one line."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return " ".join(str(exc).split()) or type(exc).__name__


# --- the load -------------------------------------------------------------------------------------
class Load:
    """Client threads writing through REST and MCP until stopped, each write retried until it
    succeeds; every call is recorded."""

    def __init__(self, endpoint: str, clients: int, rng: random.Random) -> None:
        self.endpoint = endpoint
        self.writes: list[Write] = []
        self.calls: list[Call] = []
        self._next = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._rng = random.Random(rng.random())
        self._threads = [threading.Thread(target=self._client, args=(i,), daemon=True) for i in range(clients)]

    def start(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        """Stop starting writes; the writes in hand go on until they succeed."""
        self._stop.set()
        for thread in self._threads:
            thread.join(WRITE_SECONDS + HANG_SECONDS)

    def wait_for_calls(self, count: int, timeout: float = 120.0) -> bool:
        """Until `count` more calls succeeded (the servers answer again)."""
        target, deadline = self.successes() + count, time.monotonic() + timeout
        while self.successes() < target:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def successes(self) -> int:
        with self._lock:
            return sum(c.ok for c in self.calls)

    def _client(self, index: int) -> None:
        face = "mcp" if index % 2 else "rest"
        with httpx.Client() as http:
            while not self._stop.is_set():
                with self._lock:
                    n, self._next = self._next, self._next + 1
                    kind = "document" if self._rng.random() < 0.4 else "memory"
                    write = Write(kind, n, face)
                    self.writes.append(write)
                self._until_done(write, http)

    def _until_done(self, write: Write, http: httpx.Client) -> None:
        deadline = time.monotonic() + WRITE_SECONDS
        while time.monotonic() < deadline:
            answer = call(write, self.endpoint, http)
            with self._lock:
                self.calls.append(answer)
            if answer.ok:
                write.succeeded = True
                return
            write.errors.append(answer.error)
            time.sleep(0.2)


# --- processes ------------------------------------------------------------------------------------
class Serve:
    """`forest serve --transport http --workers N` on one port: uvicorn's supervisor runs a process
    per worker and starts a new one when one dies."""

    def __init__(self, store: Store, workdir: Path, workers: int) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log = workdir / f"serve-{self.port}.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [FOREST, "serve", "--transport", "http", "--port", str(self.port), "--workers", str(workers)],
                env=server_env(store), stdout=log, stderr=subprocess.STDOUT)
        self.started = workers        # workers started in all, replacements included

    def startups(self) -> int:
        """Workers that finished their startup so far (uvicorn logs it once each)."""
        return self.log.read_text(errors="replace").count("Application startup complete.")

    def wait_ready(self) -> None:
        """Until every worker started so far has finished its startup."""
        deadline = time.monotonic() + STARTUP_SECONDS
        while self.startups() < self.started:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"forest serve did not start its workers: {self.log.read_text()[-3000:]}")
            time.sleep(0.1)

    def workers(self) -> list[int]:
        """The worker processes' pids."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
        return [int(pid) for pid in children if "spawn_main" in _command(int(pid))]

    def kill_worker(self, rng: random.Random) -> None:
        """SIGKILL one worker; the supervisor starts another."""
        os.kill(rng.choice(self.workers()), signal.SIGKILL)
        self.started += 1

    def stop(self) -> None:
        stop_process(self.process)


class Workers:
    """`forest personal worker` processes on one store's write queue."""

    def __init__(self, store: Store, workdir: Path) -> None:
        self.store, self.workdir = store, workdir
        self.processes: list[subprocess.Popen] = []

    def start(self, count: int = 1) -> None:
        for _ in range(count):
            with open(self.workdir / f"worker-{len(self.processes)}.log", "wb") as log:
                self.processes.append(subprocess.Popen([FOREST, "personal", "worker"], env=server_env(self.store),
                                                       stdout=log, stderr=subprocess.STDOUT))

    def alive(self) -> list[subprocess.Popen]:
        return [p for p in self.processes if p.poll() is None]

    def kill(self, process: subprocess.Popen) -> None:
        process.send_signal(signal.SIGKILL)
        process.wait()

    def stop(self) -> None:
        for process in self.processes:
            stop_process(process)




def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


# --- what is left -----------------------------------------------------------------------------------
@dataclass
class Outcome:
    """What one scenario did and what the store holds afterwards."""
    scenario: str
    faults: int = 0                  # kills, or database restarts
    writes: int = 0
    calls: int = 0
    failed_calls: int = 0
    lost: int = 0
    doubled: int = 0
    drift: int = 0                   # what doctor --repair left
    repaired: int = 0                # stores doctor found something to repair in (a killed build, ...)
    slowest_failure: float = 0.0     # seconds until a failed call failed
    seconds: float = 0.0
    violations: list[str] = field(default_factory=list)

    def add_calls(self, calls: list[Call]) -> None:
        failed = [c for c in calls if not c.ok]
        self.calls += len(calls)
        self.failed_calls += len(failed)
        self.slowest_failure = max([self.slowest_failure, *(c.seconds for c in failed)])
        for call in failed:
            if call.seconds >= HANG_SECONDS:
                self.violations.append(f"a call hung for {call.seconds:.0f} s: {call.error}")
            if call.server_said and not clear(call.error):
                self.violations.append(f"an unclear error reached a client: {call.error[:500]!r}")


def clear(error: str) -> bool:
    """One line, no stack trace, not the generic reply to a crash."""
    return "\n" not in error and "Traceback" not in error and "internal error" not in error \
        and "(not a JSON error)" not in error


def examine(store: Store, outcome: Outcome, writes: list[Write], queued: list[str] = ()) -> None:
    """Drain the write queue with a fresh worker, then count what was lost, doubled or left
    half-built, and what `forest doctor --repair` could not repair. `queued`: inputs the scenario
    put in the queue itself (not through a client), each of which must be written once."""
    forest = open_forest(store)
    try:
        if not forest.personal.drain(180):
            outcome.violations.append("a fresh worker could not drain the write queue in 180 s")
        left = forest.personal.store.queue_totals()
        if left["pending"] or left["failed"]:
            outcome.lost += left["pending"] + left["failed"]
            outcome.violations.append(f"lost: queue items not written: {left}")
        report = forest.doctor()
        if report.missing_vectors:  # doctor counts ready archives only: visible ones without their vectors
            outcome.violations.append(f"half-built: visible archives lacking vectors: {report.missing_vectors}")
        outcome.repaired += not report.healthy
        forest.doctor(repair_drift=True)
        if not (after := forest.doctor()).healthy:
            outcome.drift += 1
            outcome.violations.append(f"drift: doctor --repair left {after.to_dict()}")
        outcome.violations += [f"half-built: {problem}" for a in forest.archives(MODEL)
                               if (problem := _half_built(forest, a))]
        documents = {w.key: w.succeeded for w in writes if w.kind == "document"}
        inputs = {w.key: w.succeeded for w in writes if w.kind == "memory"} | dict.fromkeys(queued, True)
        _count(outcome, documents, Counter(a.name for a in forest.archives(MODEL)))
        _count(outcome, inputs, Counter(m.memory for user in USERS for m in forest.personal.memories(user)))
    finally:
        forest.close()


def _half_built(forest: MemoryForest, archive: Any) -> str | None:
    """What is missing from a visible archive: leaves its document entry names, a single root."""
    nodes = forest.tree(MODEL, archive.id)
    leaves = sorted(n.first_leaf for n in nodes if n.is_leaf)
    recorded = archive.settings["documents"][-1]["last_leaf"] + 1
    if leaves != list(range(recorded)) or archive.leaves != recorded:
        return f"{archive.name}: leaves {leaves}, {recorded} recorded"
    if sum(n.parent_id is None for n in nodes) != 1:
        return f"{archive.name}: {sum(n.parent_id is None for n in nodes)} roots"
    return None


def _count(outcome: Outcome, acknowledged: dict[str, bool], stored: Counter) -> None:
    """Each write acknowledged to its client is stored once; any other at most once; nothing is
    stored that no write made."""
    for key, succeeded in acknowledged.items():
        if succeeded and stored[key] == 0:
            outcome.lost += 1
            outcome.violations.append(f"lost: {key!r}")
        if stored[key] > 1:
            outcome.doubled += 1
            outcome.violations.append(f"doubled: written {stored[key]} times: {key!r}")
    if unknown := set(stored) - set(acknowledged):
        outcome.violations.append(f"unexpected: stored without a write: {sorted(unknown)[:5]}")


# --- the scenarios ------------------------------------------------------------------------------------
def kill_serve_workers(server: Server, workdir: Path, kills: int, rng: random.Random, clients: int = 4,
                       workers: int = 2) -> Outcome:
    """`forest serve --workers N` SIGKILLed worker by worker, each at a random moment while the
    clients write; the port stays served by the others while the supervisor starts a new one."""
    outcome, began = Outcome("serve workers SIGKILLed"), time.monotonic()
    store = server.store(workdir / "serve-kills")
    serve = Serve(store, workdir, workers)
    load = Load(serve.endpoint, clients, rng)
    try:
        serve.wait_ready()
        load.start()
        for _ in range(kills):
            if not load.wait_for_calls(clients):
                outcome.violations.append("the servers stopped answering")
                break
            time.sleep(rng.uniform(0.0, 1.5))
            serve.kill_worker(rng)
            outcome.faults += 1
            serve.wait_ready()
    finally:
        load.stop()
        serve.stop()
    _finish(outcome, store, load, began)
    server.remove(store)
    return outcome


def kill_queue_workers(server: Server, workdir: Path, kills: int, rng: random.Random, workers: int = 3,
                       batch: int = 48) -> Outcome:
    """`forest personal worker` processes sharing one queue; `batch` inputs are queued, a worker
    holding a claim is SIGKILLed at a random moment after it claimed and another is started, `kills`
    times. A killed worker's claims are taken over when another is idle (release_orphans), not when
    their lease runs out: the queue drains within DRAIN_SECONDS of the last kill."""
    outcome, began = Outcome("queue workers SIGKILLed"), time.monotonic()
    store = server.store(workdir / "worker-kills")
    forest = open_forest(store)
    queue, pool, queued = PersonalStore(forest.db), Workers(store, workdir), []
    try:
        pool.start(workers)
        while outcome.faults < kills:
            now = time.time()
            for n in range(len(queued), len(queued) + batch):
                queue.enqueue(USERS[n % len(USERS)], memory(n), {}, {}, now, now)
                queued.append(memory(n))
            victim = _claim_holder(forest, pool)
            if victim is None:
                outcome.violations.append(f"no worker claimed queued input within {STARTUP_SECONDS:.0f} s")
                break
            time.sleep(rng.uniform(0.0, 0.6))
            pool.kill(victim)
            pool.start(1)
            outcome.faults += 1
        drained = time.monotonic()
        while queue.queue_totals()["pending"] and time.monotonic() - drained < DRAIN_SECONDS:
            time.sleep(0.2)
        if queue.queue_totals()["pending"]:
            outcome.violations.append(f"the live workers left input pending {DRAIN_SECONDS:.0f} s after the last kill")
    finally:
        pool.stop()
        forest.close()
    outcome.writes = len(queued)
    examine(store, outcome, [], queued)
    outcome.seconds = time.monotonic() - began
    server.remove(store)
    return outcome


DRAIN_SECONDS = 120.0  # far less than the 600 s lease a dead worker's claim would otherwise wait out


def _claim_holder(forest: MemoryForest, pool: Workers) -> subprocess.Popen | None:
    """A live worker that holds claimed input (claims are "host:pid:nonce")."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        claims = forest.db.query("SELECT DISTINCT claim FROM personal_write_queue WHERE status = 'pending' "
                                 "AND lease_until IS NOT NULL")
        holders = {int(c[0].rsplit(":", 2)[1]) for c in claims if c[0]}
        if live := [p for p in pool.alive() if p.pid in holders]:
            return live[0]
        time.sleep(0.02)
    return None


RESTARTED = "PostgreSQL restarted"


def restart_database(server: Server, workdir: Path, restarts: int, rng: random.Random, clients: int = 4) -> Outcome:
    """PostgreSQL restarted under load (a fast restart, then a crash: stop -m immediate and start,
    in turn) while clients write through `forest serve --workers 2` and two `forest personal
    worker` processes write the queue. No process dies of it; the calls in hand fail with one
    clear line and the next ones work."""
    outcome, began = Outcome(RESTARTED), time.monotonic()
    store = server.store(workdir / "restarts")
    serve, pool = Serve(store, workdir, 2), Workers(store, workdir)
    load = Load(serve.endpoint, clients, rng)
    try:
        pool.start(2)
        serve.wait_ready()
        load.start()
        for i in range(restarts):
            if not load.wait_for_calls(clients):
                outcome.violations.append(f"no call succeeded after restart {i}")
                break
            time.sleep(rng.uniform(0.0, 1.5))
            if i % 2:
                server.postgres.stop(mode="immediate")
                time.sleep(rng.uniform(0.0, 2.0))
                server.postgres.start()
            else:
                server.postgres.restart()
            outcome.faults += 1
        if not load.wait_for_calls(clients):
            outcome.violations.append("no call succeeded after the last restart")
        if serve.startups() != 2 or len(pool.alive()) != 2:  # a serve worker that died was started again
            outcome.violations.append("a process died of a database restart")
    finally:
        load.stop()
        pool.stop()
        serve.stop()
    dropped = [c for c in load.calls if not c.ok and not c.server_said]
    if dropped:
        outcome.violations.append(f"{len(dropped)} calls lost their connection to a live server: {dropped[0].error}")
    _finish(outcome, store, load, began)
    server.remove(store)
    return outcome


EVERY_CALL = (("document", "rest"), ("document", "mcp"), ("memory", "rest"), ("memory", "mcp"))


def kill_serve_after_each_write(ctx: Any, server: Server, workdir: Path,
                                calls: tuple[tuple[str, str], ...] = EVERY_CALL) -> Outcome:
    """A serve process SIGKILLs itself right after each durable write a call makes, in turn (an
    `add_document`; a `process_memory` and its queue's writes), for each (kind, face) of `calls`:
    every moment a client can lose the reply to a write that was done. The client sends the call
    again to a serve process started on the same port; afterwards the write is there exactly once."""
    outcome, began = Outcome("serve killed after each write"), time.monotonic()
    for kind, face in calls:
        writes = _sweep(ctx, server, workdir, outcome, kind, face, None)
        for die_after in range(1, writes + 1):
            _sweep(ctx, server, workdir, outcome, kind, face, die_after)
            outcome.faults += 1
    outcome.seconds = time.monotonic() - began
    return outcome


def _sweep(ctx: Any, server: Server, workdir: Path, outcome: Outcome, kind: str, face: str,
           die_after: int | None) -> int:
    """One write through a serve process that dies right after its `die_after`-th durable write
    (None: left alone), sent again to a new serve process while the kill took its reply. Returns
    the serve's durable writes when left alone."""
    store = server.store(workdir / f"sweep-{kind}-{face}-{die_after}")
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    serving = [_start_serve(ctx, store, port, die_after)]
    write, calls = Write(kind, die_after or 0, face), []
    label = f"{kind} by {face}, {f'killed after write {die_after}' if die_after else 'left alone'}"
    writes = 0
    try:
        with httpx.Client() as http:
            calls.append(answer := call(write, endpoint, http))
            while not answer.ok and _killed(serving[-1][0]):
                write.errors.append(answer.error)
                serving.append(_start_serve(ctx, store, port, None))
                calls.append(answer := call(write, endpoint, http))
        write.succeeded = answer.ok
        if not answer.ok:
            outcome.violations.append(f"{label}: the call failed, not by the kill: {answer.error}")
        if die_after is None:
            writes = _writes_when_done(store, serving[0][1])
        elif not _killed(serving[0][0]):  # after the reply: the queue worker's writes
            outcome.violations.append(f"{label}: the serve process made fewer writes than when left alone")
    finally:
        for process, channel in serving:
            process.kill()
            process.join()
            channel.close()
    server.settle(store)
    found = len(outcome.violations)
    outcome.add_calls(calls)
    outcome.writes += 1
    examine(store, outcome, [write])
    outcome.violations[found:] = [f"{label}: {v}" for v in outcome.violations[found:]]
    server.remove(store)
    return writes


def _killed(process: Any) -> bool:
    """Whether the process dies of its kill (waiting for it as long as a call may take)."""
    process.join(HANG_SECONDS)
    return process.exitcode == -signal.SIGKILL


def _writes_when_done(store: Store, channel: Connection) -> int:
    """The serve's durable writes once nothing is queued (process_memory's write goes on after
    the reply)."""
    forest = open_forest(store)
    try:
        deadline = time.monotonic() + HANG_SECONDS
        while forest.personal.store.has_pending() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        forest.close()
    time.sleep(0.5)  # the serve counts a write once its commit has returned
    channel.send("writes?")
    return channel.recv()


def _start_serve(ctx: Any, store: Store, port: int, die_after: int | None) -> tuple[Any, Connection]:
    """A serve process from the forkserver (its imports already made) answering /health."""
    ours, theirs = ctx.Pipe()
    process = ctx.Process(target=_serve, args=(store, port, die_after, theirs), daemon=True)
    process.start()
    theirs.close()
    if answers_health(f"http://127.0.0.1:{port}", process.is_alive, STARTUP_SECONDS):
        return process, ours
    process.kill()
    raise RuntimeError(f"the serve process on port {port} did not start")


def _serve(store: Store, port: int, die_after: int | None, channel: Connection) -> None:
    """What `forest serve --transport http` runs (serve_http), on the faults' settings, in a
    forkserver child: the models loaded first, then every durable write counted (and the process
    SIGKILLed right after its `die_after`-th); the count is sent when asked."""
    from forest.serving.http import serve_http

    log = os.open(Path(store.data_dir).parent / f"serve-{port}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    forest = open_forest(store)
    forest.embedder.embed_query("warm up")
    forest.vectors.ids(MODEL)
    forest.personal.store.has_pending()
    claim = PersonalStore.claim

    def claim_when_due(self: PersonalStore, now: float, *args: Any, **kwargs: Any) -> list[Any]:
        # An idle worker claims (an empty UPDATE transaction) every second: not a write a kill
        # could lose anything after, and it would make the count depend on timing.
        return claim(self, now, *args, **kwargs) if self.outstanding(now) else []

    PersonalStore.claim = claim_when_due  # type: ignore[method-assign]
    writes = faults.count_durable_writes(die_after)

    def say_writes() -> None:
        while True:
            channel.recv()
            channel.send(writes())

    threading.Thread(target=say_writes, daemon=True).start()
    serve_http(forest, "127.0.0.1", port)


def _finish(outcome: Outcome, store: Store, load: Load, began: float) -> None:
    outcome.add_calls(load.calls)
    outcome.writes = len(load.writes)
    if given_up := [w for w in load.writes if not w.succeeded]:
        outcome.violations.append(f"{len(given_up)} writes never succeeded, retried for {WRITE_SECONDS:.0f} s: "
                                  f"{given_up[0].errors[-1]}")
    examine(store, outcome, load.writes)
    outcome.seconds = time.monotonic() - began
