"""The agents' endpoint under load, on each store: 50 concurrent MCP clients make 2,000
retrieve/explore calls in total over streamable HTTP on loopback, while a workbench page is loaded
in a browser; the same clients and questions, one stack after the other, in one run.

Target: 0 errors, p50/p95 latency printed; a Streamlit page load timed during
the load stays under 2 s.

Stacks (--stacks, in the order given):
  embedded  SQLite + embedded Chroma: one process owns the store, so the endpoint is the one the
            workbench embeds (forest.serving.http.ThreadServer, started on the first script run),
            in the process that also renders its pages.
  server1   PostgreSQL + pgvector, one `forest serve --transport http` process; the workbench is a
            process of its own on the same store (it embeds no endpoint there).
  server2   the same with `forest serve --transport http --workers 2`: two uvicorn workers on one
            port, what the workbench's Server page tells a deployer to run.

Setup: the first --papers QASPER dev papers with questions (../shared/eval/qasper-dev) are
ingested into a temporary embedded store (about 10 s a paper) under model_id "bench". For the
server stacks a local PostgreSQL with pgvector starts (forest.storage.sql.local_postgres, in the
temporary folder) and the embedded store is copied into a new database of it (`forest store copy`:
the same rows, ids and vectors; nothing is embedded again), so every stack answers from the same
content. Each stack then starts from cold processes: its endpoint, `streamlit run app.py`, a new
Chromium.

The clients run in a separate process (spawned: one asyncio loop, one
mcp.client.ClientSession per client), so their CPU time is not charged to the server's GIL;
all share the machine's cores, as they would on one box. Each client loops: retrieve_memory
with a random question of those papers, then explore_memory_node on a SUMMARY_NODE of that
result with the same question (a node another client found if the result had none), until
--calls calls have been made in total. An error is a result with is_error, a result without
the tool's key (representative_nodes / children), or an exception (--call-timeout included).
Latency is per call, from call_tool to its result; connecting the sessions is not counted.
Beside them, --storm-clients sessions call process_memory in a loop (a personal-memory write
storm, users of their own per stack); their calls are a row of their own and their errors count
in the verdict. Before the clock starts, rounds of concurrent retrieve and process_memory calls
warm the endpoint up (models load on first use, in each worker) until a round answers within 1 s.

CPU: the CPU seconds each part used during the load (the client process, the endpoint's
processes, PostgreSQL's, the workbench's when separate; children included), per call made: less
noisy than calls/s on a shared machine, and it shows where the cores went. --nice N runs the
clients and the `forest serve` processes at niceness N, the workbench and Chromium first: on one
box the page waits for a core, not for the endpoint's GIL, once the load keeps every core busy.

Page load: headless Chromium
driven by selenium (Debian packages chromium and chromium-driver, PyPI package selenium) is
timed from navigation until the script's output is in the page: the start page opens the
Library page, whose header and archives table (or "No archives yet" note) must be there, i.e. a
full script run in a new browser
session. Idle, before the clients start: a cold load (first script run in the Streamlit process,
new browser), then one with the browser cache and one with it cleared. Under load, each time
--page-at calls have completed: one with the cache cleared, then one cached; the verdict takes
the worst of each kind. Chromium is required: the embedded endpoint starts on the first script
run, which needs a browser session.

Run: `python -m bench.bench_server_load [--stacks embedded,server1,server2] [--clients 50]
[--calls 2000] [--papers 5]` (about 5 minutes on 2 cores with the 5 papers' ingest;
--data-dir DIR keeps the embedded store and reuses the papers already in it).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import multiprocessing
import os
import queue
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "eval" / "qasper-dev"
MODEL_ID = "bench"
TOOLS = ("retrieve_memory", "explore_memory_node")
STORM = "process_memory (storm)"
TARGET_PAGE_SECONDS = 2.0

# Ready when the script's output is on the page (the start page opens the Library page: its
# header and archives table); an exception box is a failed load.
PAGE_READY_JS = """
const err = document.querySelector('[data-testid="stException"]');
if (err) return 'error: ' + err.innerText.slice(0, 300);
const title = [...document.querySelectorAll('h1, h2')].some(h => h.textContent.trim() === 'Library');
const table = document.querySelector('[data-testid="stDataFrame"]')
    || document.body.innerText.includes('No archives yet');
return title && table ? 'ok' : null;
"""
NAVIGATION_JS = """
const n = performance.getEntriesByType('navigation')[0];
return n ? [n.responseEnd, n.loadEventEnd] : null;
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- data -----------------------------------------------------------------------------------
def pick_papers(data: Path, count: int) -> tuple[list[str], list[str]]:
    """The first `count` paper ids (sorted) that have a text and questions; their questions."""
    by_paper: dict[str, list[str]] = {}
    for q in json.loads((data / "questions.json").read_text(encoding="utf-8")):
        if (data / "papers" / f"{q['paper_id']}.txt").is_file() and q["question"].strip():
            by_paper.setdefault(q["paper_id"], []).append(q["question"].strip())
    papers = sorted(by_paper)[:count]
    return papers, [question for p in papers for question in by_paper[p]]


# --- the clients (run in a spawned process) --------------------------------------------------
def run_load(url: str, questions: list[str], clients: int, calls: int, top_k: int, call_timeout: float,
             max_seconds: float, seed: int, done: Any, results: Any, storm_clients: int = 0,
             storm_users: str = "storm", nice: int = 0) -> None:
    os.nice(nice)
    try:
        outcome = asyncio.run(_load(url, questions, clients, calls, top_k, call_timeout, max_seconds, seed, done,
                                    storm_clients, storm_users))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, never lost
        outcome = {"fatal": f"{type(exc).__name__}: {exc}"}
    results.put(outcome)


async def _load(url: str, questions: list[str], clients: int, calls: int, top_k: int, call_timeout: float,
                max_seconds: float, seed: int, done: Any, storm_clients: int = 0,
                storm_users: str = "storm") -> dict[str, Any]:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    issued = 0
    records: list[tuple[str, float, str | None]] = []   # (tool, ms, error or None)
    connect_ms: list[float] = []
    connect_errors: list[str] = []
    summary_pool: list[int] = []
    explore_source = Counter()
    ready = 0
    all_ready = asyncio.Event()
    go = asyncio.Event()

    def mark_ready() -> None:
        nonlocal ready
        ready += 1
        if ready == clients:
            all_ready.set()

    async def call(session, tool: str, args: dict[str, Any], key: str, label: str | None = None) -> dict[str, Any] | None:
        start = time.perf_counter()
        error, payload = None, None
        try:
            result = await session.call_tool(tool, args, read_timeout_seconds=call_timeout)
            if result.is_error:
                error = "is_error: " + " ".join(getattr(c, "text", "") for c in result.content)[:300]
            elif not isinstance(result.structured_content, dict) or key not in result.structured_content:
                error = f"no {key!r} in the result"
            else:
                payload = result.structured_content
        except Exception as exc:  # noqa: BLE001 - every failure is counted, none stops the run
            error = f"{type(exc).__name__}: {exc}"[:300]
        records.append((label or tool, (time.perf_counter() - start) * 1000, error))
        with done.get_lock():
            done.value += 1
        return payload

    async def client(i: int) -> None:
        nonlocal issued
        rng = random.Random(seed + i)
        marked = False
        try:
            http = create_mcp_http_client()
            async with (http, streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
                        ClientSession(read, write) as session):
                start = time.perf_counter()
                await session.initialize()
                connect_ms.append((time.perf_counter() - start) * 1000)
                marked = True
                mark_ready()
                await go.wait()
                explore_next: tuple[int, str] | None = None
                while issued < calls:
                    issued += 1
                    if explore_next:
                        node_id, question = explore_next
                        explore_next = None
                        await call(session, "explore_memory_node",
                                   {"model_id": MODEL_ID, "node_id": node_id, "query": question}, "children")
                        continue
                    question = rng.choice(questions)
                    found = await call(session, "retrieve_memory",
                                       {"model_id": MODEL_ID, "query": question, "top_k": top_k},
                                       "representative_nodes")
                    if found is None:
                        continue
                    summaries = [n["id"] for n in found["representative_nodes"]
                                 if n.get("node_type") == "SUMMARY_NODE"]
                    if summaries:
                        explore_source["own retrieve"] += 1
                        summary_pool.extend(summaries)
                        explore_next = (rng.choice(summaries), question)
                    elif summary_pool:
                        explore_source["another client's retrieve"] += 1
                        explore_next = (rng.choice(summary_pool), question)
        except Exception as exc:  # noqa: BLE001
            text = f"client {i}: {type(exc).__name__}: {exc}"[:300]
            if marked:  # the session broke after connecting (or on closing)
                records.append(("session", 0.0, text))
            else:
                connect_errors.append(text)
        finally:
            if not marked:
                mark_ready()

    async def storm(i: int) -> None:
        """A personal-memory write storm beside the readers: process_memory with private statements
        (each one queued and written by the background writer) until the readers are done."""
        try:
            http = create_mcp_http_client()
            async with (http, streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
                        ClientSession(read, write) as session):
                await session.initialize()
                await go.wait()
                n = 0
                while issued < calls:
                    n += 1
                    await call(session, "process_memory", {"user_id": f"{storm_users}-{i}", "input":
                               f"My friend number {n} is called Robin{i}x{n} and lives in Lyon."}, "vector_chunks", STORM)
        except Exception as exc:  # noqa: BLE001
            records.append((STORM, 0.0, f"storm {i}: {type(exc).__name__}: {exc}"[:300]))

    tasks = [asyncio.create_task(client(i)) for i in range(clients)]
    storms = [asyncio.create_task(storm(i)) for i in range(storm_clients)]
    start = time.perf_counter()
    await all_ready.wait()
    connected_in = time.perf_counter() - start
    go.set()
    start, cpu_start = time.perf_counter(), time.process_time()
    hung = False
    try:
        await asyncio.wait_for(asyncio.gather(*tasks, *storms), timeout=max_seconds)
    except TimeoutError:
        hung = True
    wall = time.perf_counter() - start
    return {"records": records, "connect_ms": connect_ms, "connect_errors": connect_errors,
            "connected_in": connected_in, "wall": wall, "hung": hung, "issued": issued,
            "explore_source": dict(explore_source), "cpu_seconds": time.process_time() - cpu_start}


# --- the processes of a stack ----------------------------------------------------------------
def stop_group(process: subprocess.Popen) -> None:
    """SIGTERM to the process's own session (its children too: streamlit's, uvicorn's workers)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


class Logged:
    """A child process in a session of its own, its output in a log file."""

    def __init__(self, command: list[str], env: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        self.log = open(log_path, "wb")  # noqa: SIM115 - open as long as the process, closed in stop()
        self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                        start_new_session=True)

    def wait_healthy(self, url: str, seconds: float = 120.0) -> float:
        """Seconds until `url` answers 200 (Streamlit's /_stcore/health, the endpoint's /health)."""
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.log_path.stem} exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(url, timeout=2) as reply:
                    if reply.status == 200:
                        return time.perf_counter() - start
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"{url} not healthy after {seconds:.0f} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 20) -> str:
        self.log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        stop_group(self.process)
        self.log.close()


class Workbench(Logged):
    """`streamlit run app.py` on a free loopback port, on the store `store_env` names; its agent
    endpoint (the one it embeds, or the `forest serve` processes it points to) on `server_port`."""

    def __init__(self, store_env: dict[str, str], log_dir: Path, server_port: int) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.endpoint = f"http://127.0.0.1:{server_port}"
        super().__init__(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
             "--server.port", str(self.port), "--server.address", "127.0.0.1",
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            {**os.environ, **store_env, "FOREST_SERVER_PORT": str(server_port)}, log_dir / "streamlit.log")


class Serve(Logged):
    """`forest serve --transport http` on a free loopback port, with `workers` uvicorn workers."""

    def __init__(self, store_env: dict[str, str], log_dir: Path, workers: int, nice: int = 0) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        forest = str(Path(sys.executable).parent / "forest")
        super().__init__(["nice", "-n", str(nice), forest, "serve", "--transport", "http", "--port", str(self.port),
                          "--workers", str(workers)], {**os.environ, **store_env}, log_dir / "serve.log")


def cpu_seconds(root: int) -> float:
    """CPU time of a process and its descendants, live or ended (an ended child's time is in its
    parent's cutime/cstime): Linux /proc."""
    parents, spent = {}, {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            parents[int(entry)] = int(fields[1])
            spent[int(entry)] = sum(int(f) for f in fields[11:15])   # utime stime cutime cstime
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += spent.get(pid, 0)
        todo += children.get(pid, [])
    return total / os.sysconf("SC_CLK_TCK")


class BrowserTimer:
    """Headless Chromium via selenium: seconds from navigation until PAGE_READY_JS says 'ok'."""

    label = "headless Chromium (selenium): navigation -> the Library page's header and archives table rendered"

    def __init__(self, profile_dir: Path, timeout: float) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = browser_binary()
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--disable-quic", "--no-first-run", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--window-size=1280,900",
                     f"--user-data-dir={profile_dir}"):
            options.add_argument(flag)
        self.timeout = timeout
        self.driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
        self.driver.set_page_load_timeout(timeout)

    def load(self, url: str, clear_cache: bool) -> tuple[float, str]:
        from selenium.webdriver.support.ui import WebDriverWait

        self.driver.get("about:blank")
        if clear_cache:
            self.driver.execute_cdp_cmd("Network.clearBrowserCache", {})
        start = time.perf_counter()
        self.driver.get(url)
        state = WebDriverWait(self.driver, self.timeout, poll_frequency=0.02).until(
            lambda d: d.execute_script(PAGE_READY_JS))
        elapsed = time.perf_counter() - start
        if state != "ok":
            raise RuntimeError(f"the page rendered an exception: {state}")
        marks = self.driver.execute_script(NAVIGATION_JS)
        detail = f"HTML {marks[0] / 1000:.2f} s, assets loaded {marks[1] / 1000:.2f} s" if marks else ""
        return elapsed, detail

    def close(self) -> None:
        self.driver.quit()


def browser_binary() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


def missing_browser() -> str | None:
    """Why headless Chromium cannot run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium)"
    if not browser_binary() or not shutil.which("chromedriver"):
        return "Chromium or chromedriver not found (apt-get install chromium chromium-driver)"
    return None


def post_tool(endpoint: str, tool: str, arguments: dict[str, Any]) -> float:
    """One tool call over REST, on a connection of its own; its seconds."""
    request = urllib.request.Request(f"{endpoint}/tools/{tool}", data=json.dumps(arguments).encode(),
                                     headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as reply:
        reply.read()
    return time.perf_counter() - start


def warm_up(endpoint: str, question: str, rounds: int = 10, fast: float = 1.0) -> tuple[int, float]:
    """Before the clock starts: models load on first use, in each process that answers (a uvicorn
    worker is picked per connection, not by us). Rounds of 8 concurrent retrieve_memory and
    process_memory calls, each on a new connection, until a round's slowest takes under `fast`
    seconds; (rounds made, that round's slowest)."""
    from concurrent.futures import ThreadPoolExecutor

    calls = [("retrieve_memory", {"model_id": MODEL_ID, "query": question})] * 4 + \
            [("process_memory", {"user_id": "warm-up", "input": "I warm up before the load."})] * 4
    slowest = float("inf")
    with ThreadPoolExecutor(len(calls)) as pool:
        for made in range(1, rounds + 1):
            slowest = max(pool.map(lambda c: post_tool(endpoint, *c), calls))
            if slowest < fast:
                break
    return made, slowest


# --- the stacks ------------------------------------------------------------------------------
STACKS = {
    "embedded": "SQLite + embedded Chroma, the endpoint embedded in the workbench",
    "server1": "PostgreSQL + pgvector, 1 `forest serve` process",
    "server2": "PostgreSQL + pgvector, `forest serve --workers 2`",
}


class Stores:
    """The store every stack answers from: the embedded one, and its copy in PostgreSQL."""

    def __init__(self, embedded_dir: Path, work: Path) -> None:
        self.embedded_dir = embedded_dir
        self.work = work
        self.postgres = None
        self.database_url: str | None = None

    def embedded_env(self) -> dict[str, str]:
        return {"FOREST_DATA_DIR": str(self.embedded_dir)}

    def server_env(self) -> dict[str, str]:
        return {"FOREST_DATA_DIR": str(self.work / "server-store"), "FOREST_DATABASE_URL": self.database_url,
                "FOREST_VECTOR_STORE": "pgvector"}

    def copy_to_postgres(self, forest: Any) -> str:
        """A local PostgreSQL, a new database in it, the embedded store copied into it; what it did."""
        from forest.config import load_settings
        from forest.storage.sql.local_postgres import LocalPostgres

        started = time.perf_counter()
        self.postgres = LocalPostgres(self.work / "postgres")
        self.postgres.start()
        self.database_url = self.postgres.create_database("bench")
        env = self.server_env()
        target = load_settings({"data_dir": env["FOREST_DATA_DIR"], "database_url": self.database_url,
                                "vector_store": "pgvector"}, environ={})
        report = forest.copy_store(target)
        checks = report["checks"]
        return (f"copied into PostgreSQL + pgvector ({self.postgres.directory}) in "
                f"{time.perf_counter() - started:.1f} s: {report['rows']['memory_nodes']} nodes, "
                f"rows equal {checks['rows_equal']}, vectors equal {checks['vectors_equal']}, "
                f"found by their own vectors {checks['found_by_own_vector']}/{checks['nodes_searched']}")

    def postgres_pid(self) -> int | None:
        return self.postgres.pid() if self.postgres is not None else None

    def pending_writes(self, users: str) -> int:
        """Queued personal-memory input of the storm's users not written yet (server store)."""
        import psycopg

        with psycopg.connect(self.database_url) as conn:
            return conn.execute("SELECT count(*) FROM personal_write_queue WHERE status = 'pending' "
                                "AND user_id LIKE %s", (f"{users}-%",)).fetchone()[0]

    def stop(self) -> None:
        if self.postgres is not None:
            self.postgres.stop()


class PageTimes:
    """The workbench page loads of one stack: (when, cache, seconds or None, note)."""

    def __init__(self, timer: BrowserTimer, url: str) -> None:
        self.timer, self.url = timer, url
        self.loads: list[tuple[str, str, float | None, str]] = []

    def time(self, when: str, cache: str, progress: Any = None) -> None:
        before = progress.value if progress is not None else None
        try:
            seconds, note = self.timer.load(self.url, clear_cache=cache == "cache cleared")
        except Exception as exc:  # noqa: BLE001
            seconds, note = None, f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        if progress is not None:
            note += f"; calls {before} -> {progress.value} done meanwhile"
        self.loads.append((when, cache, seconds, note.strip("; ")))


def run_stack(stack: str, args: argparse.Namespace, stores: Stores, questions: list[str]) -> dict[str, Any]:
    """One stack from cold processes: endpoint, workbench, browser; idle page loads, the load with
    page loads under it. Its outcome, page loads and CPU use."""
    log_dir = stores.work / stack
    log_dir.mkdir()
    parts: list[Any] = []   # what to stop, last first
    try:
        if stack == "embedded":
            workbench = Workbench(stores.embedded_env(), log_dir, server_port=free_port())
            endpoint, endpoint_pid = workbench.endpoint, workbench.process.pid
            parts.append(workbench)
        else:
            serve = Serve(stores.server_env(), log_dir, workers=int(stack.removeprefix("server")), nice=args.nice)
            parts.append(serve)
            started = serve.wait_healthy(f"{serve.url}/health")
            print(f"  endpoint: {serve.url}/mcp (`forest serve`, pid {serve.process.pid}), answering after {started:.1f} s")
            endpoint, endpoint_pid = serve.url, serve.process.pid
            workbench = Workbench(stores.server_env(), log_dir, server_port=serve.port)
            parts.append(workbench)
        print(f"  workbench: {workbench.url} (streamlit, pid {workbench.process.pid}); "
              f"healthy after {workbench.wait_healthy(f'{workbench.url}/_stcore/health'):.1f} s")
        timer = BrowserTimer(log_dir / "chromium-profile", timeout=60.0)
        parts.append(timer)
        pages = PageTimes(timer, workbench.url)
        pages.time("idle", "cold: first script run, new browser")   # embedded: also starts the endpoint
        if stack == "embedded":
            started = workbench.wait_healthy(f"{endpoint}/health")
            print(f"  endpoint: {endpoint}/mcp (embedded in the workbench's process), "
                  f"answering {started:.1f} s after the first page load")
        rounds, slowest = warm_up(endpoint, questions[0])
        print(f"  warmed up in {rounds} round(s) of 8 concurrent calls (last round's slowest {slowest:.2f} s)")
        pages.time("idle", "cached")
        pages.time("idle", "cache cleared")
        if stack == "embedded":   # one process: the pages and the endpoint
            pids = {"workbench and endpoint": endpoint_pid}
        else:
            pids = {"endpoint": endpoint_pid, "PostgreSQL": stores.postgres_pid(), "workbench": workbench.process.pid}
        outcome, cpu = drive_load(args, endpoint, questions, pages, stack, pids)
        if stack != "embedded" and "fatal" not in outcome:
            outcome["drained"] = drain_storm(stores, stack)
        return {"outcome": outcome, "pages": pages.loads, "cpu": cpu}
    finally:
        for part in reversed(parts):
            try:
                part.close() if isinstance(part, BrowserTimer) else part.stop()
            except Exception as exc:  # noqa: BLE001
                print(f"warning: stopping {type(part).__name__}: {exc}", file=sys.stderr)


def drive_load(args: argparse.Namespace, endpoint: str, questions: list[str], pages: PageTimes, stack: str,
               pids: dict[str, int]) -> tuple[dict[str, Any], dict[str, float]]:
    """The clients' process against `endpoint`, page loads at --page-at; the outcome, and the CPU
    seconds of each part during the load (the clients count their own, from the first call on)."""
    spawn = multiprocessing.get_context("spawn")
    done = spawn.Value("i", 0)
    results = spawn.Queue()
    load_process = spawn.Process(
        target=run_load, name="bench-clients",
        args=(endpoint, questions, args.clients, args.calls, args.top_k, args.call_timeout,
              args.max_seconds, args.seed, done, results, args.storm_clients, f"storm-{stack}", args.nice))
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    load_process.start()
    outcome = None
    marks = sorted(args.page_at)
    deadline = time.monotonic() + args.max_seconds + 120
    try:
        while outcome is None and time.monotonic() < deadline:
            if marks and done.value >= marks[0]:
                when = f"under load, at call {marks.pop(0)}"
                pages.time(when, "cache cleared", done)
                pages.time(when, "cached", done)
            try:
                outcome = results.get(timeout=0.05)
            except queue.Empty:
                if not load_process.is_alive() and results.empty():
                    outcome = {"fatal": f"the client process died (exit code {load_process.exitcode})"}
        if outcome is None:
            outcome = {"fatal": f"no result from the client process after {args.max_seconds + 120:.0f} s"}
        cpu = {"clients": outcome.get("cpu_seconds", 0.0),
               **{name: cpu_seconds(pid) - before[name] for name, pid in pids.items()}}
    finally:
        load_process.join(timeout=30)
        if load_process.is_alive():
            load_process.terminate()
            load_process.join(timeout=10)
    for mark in marks:
        pages.loads.append((f"under load, at call {mark}", "-", None, "not taken: the load ended first"))
    return outcome, cpu


def drain_storm(stores: Stores, stack: str, seconds: float = 120.0) -> str:
    """Wait until the storm's queued writes are written (the next stack shares the database and
    must not inherit them); says how long that took."""
    started = time.perf_counter()
    pending = stores.pending_writes(f"storm-{stack}")
    while pending and time.perf_counter() - started < seconds:
        time.sleep(0.5)
        pending = stores.pending_writes(f"storm-{stack}")
    waited = time.perf_counter() - started
    return (f"the storm's queued writes were written {waited:.1f} s after the load" if not pending
            else f"{pending} storm writes still queued {seconds:.0f} s after the load")


# --- the run ---------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stacks", default="embedded,server1,server2",
                        help=f"comma-separated, run in this order: {', '.join(STACKS)}")
    parser.add_argument("--clients", type=int, default=50, help="concurrent MCP sessions")
    parser.add_argument("--storm-clients", type=int, default=4,
                        help="extra MCP sessions calling process_memory in a loop (a personal-memory write "
                             "storm) while the readers run; their errors count in the verdict")
    parser.add_argument("--calls", type=int, default=2000, help="tool calls in total, over all clients")
    parser.add_argument("--papers", type=int, default=5, help="QASPER papers to ingest")
    parser.add_argument("--top-k", type=int, default=8)
    parser.add_argument("--page-at", type=int, nargs="+", default=[500],
                        help="time a page load when this many calls have completed")
    parser.add_argument("--call-timeout", type=float, default=60.0, help="seconds before a call counts as hung")
    parser.add_argument("--max-seconds", type=float, default=1200.0, help="give up on the load after this long")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the QASPER dev folder")
    parser.add_argument("--data-dir", type=Path, help="keep the embedded store here (reuse papers already in it)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--nice", type=int, default=0,
                        help="run the agents' side (the clients, and the `forest serve` processes of the server "
                             "stacks) at this niceness: the workbench first, as a deployer may give it on a shared "
                             "box (the embedded endpoint runs in the workbench's process and cannot be set apart)")
    args = parser.parse_args()
    stacks = [s.strip() for s in args.stacks.split(",") if s.strip()]
    if not stacks or set(stacks) - set(STACKS):
        parser.error(f"--stacks takes {', '.join(STACKS)}")
    # As `forest serve` does: warnings only. Otherwise the MCP SDK's own setup (INFO, rich) logs
    # every session's creation and end, 100 lines per run of 50 clients, into this table.
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(levelname)s: %(message)s")

    from forest.service import MemoryForest

    papers, questions = pick_papers(args.data, args.papers)
    if not papers:
        parser.error(f"no QASPER papers with questions under {args.data}")
    why_not = missing_browser()
    if why_not:
        parser.error(f"{why_not}: the workbench's endpoint starts on a page's first script run")
    work = Path(tempfile.mkdtemp(prefix="bench-server-load-"))
    work.chmod(0o755)   # PostgreSQL runs as a user of its own when we are root (local_postgres)
    stores = Stores(args.data_dir or work / "store", work)
    forest = None
    results: dict[str, dict[str, Any]] = {}
    try:
        forest = MemoryForest(data_dir=stores.embedded_dir)
        started = time.perf_counter()
        forest.retriever  # noqa: B018 - models and stores load before any clock starts
        forest.embedder.embed_query("warm up")
        print(f"models loaded in {time.perf_counter() - started:.1f} s")
        have = {a.name for a in forest.archives(MODEL_ID)} if MODEL_ID in forest.model_ids() else set()
        started = time.perf_counter()
        for paper in papers:
            if paper not in have:
                forest.ingest_file(args.data / "papers" / f"{paper}.txt", MODEL_ID, name=paper)
        archives = forest.archives(MODEL_ID)
        print(f"forest: {len(papers)} papers ({', '.join(papers)}) under model_id {MODEL_ID!r}: "
              f"{sum(a.leaves for a in archives)} leaves, {sum(a.nodes for a in archives)} nodes; "
              f"ingested in {time.perf_counter() - started:.1f} s; {len(questions)} questions")
        if any(s != "embedded" for s in stacks):
            print(stores.copy_to_postgres(forest))
        forest.close()   # the stacks' processes own the store from here
        forest = None
        print(f"load: {args.clients} MCP clients, {args.calls} retrieve/explore calls, {args.storm_clients} "
              f"process_memory storm sessions{f'; the agents side at nice {args.nice}' if args.nice else ''}; "
              f"machine: {os.cpu_count()} cores, load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} before the stacks run")
        for stack in stacks:
            print(f"\n=== {stack}: {STACKS[stack]} ===")
            results[stack] = run_stack(stack, args, stores, questions)
            results[stack]["failed"] = report(args, results[stack])
        if len(results) > 1:
            summary(args, results)
        print(f"\nload average after the run: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
              f"(1, 5, 15 min; {os.cpu_count()} cores)")
    finally:
        if forest is not None:
            forest.close()
        stores.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 1 if not results or any(r["failed"] for r in results.values()) else 0


def report(args: argparse.Namespace, result: dict[str, Any]) -> bool:
    """One stack's table, errors, page loads, CPU and verdict; True if it failed."""
    outcome, page_loads = result["outcome"], result["pages"]
    if "fatal" in outcome:
        print(f"LOAD FAILED: {outcome['fatal']}")
        return True
    records = outcome["records"]
    connect = outcome["connect_ms"]
    print(f"{len(connect)}/{args.clients} MCP sessions connected in {outcome['connected_in']:.1f} s "
          f"(initialize p50 {percentile(connect, 0.5):.0f} ms, max {max(connect, default=float('nan')):.0f} ms)")
    for error in outcome["connect_errors"]:
        print(f"  connect error: {error}")
    print()
    header = f"{'tool':<22}{'calls':>7}{'errors':>8}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}"
    print(header)
    print("-" * len(header))
    groups = [(tool, [r for r in records if r[0] == tool]) for tool in (*TOOLS, STORM, "session")]
    groups = [g for g in groups if g[1] or g[0] not in ("session", STORM)] + [("all", records)]
    for name, rows in groups:
        ms = [r[1] for r in rows if r[2] is None]
        errors = sum(r[2] is not None for r in rows)
        print(f"{name:<22}{len(rows):>7}{errors:>8}{percentile(ms, 0.5):>9.0f}{percentile(ms, 0.95):>9.0f}"
              f"{max(ms, default=float('nan')):>9.0f}")
    errors = Counter(r[2] for r in records if r[2] is not None)
    total_errors = sum(errors.values()) + len(outcome["connect_errors"])
    wall = outcome["wall"]
    calls = [r for r in records if r[0] in TOOLS]
    print(f"\n{len(calls)} calls by {args.clients} clients in {wall:.1f} s: {len(calls) / wall:.1f} calls/s"
          f"{'  (LOAD DID NOT FINISH: stopped after --max-seconds)' if outcome['hung'] else ''}")
    print("explore targets: " + ", ".join(f"{n} from {k}" for k, n in outcome["explore_source"].items()))
    if outcome.get("drained"):
        print(outcome["drained"])
    if errors:
        print("errors (distinct messages, most frequent first):")
        for message, n in errors.most_common(10):
            print(f"  {n:>5} x {message}")
    every = len(records)
    print(f"CPU during the load, ms per call made ({every} calls, storm included): " + ", ".join(
        f"{name} {seconds * 1000 / max(every, 1):.1f}" for name, seconds in result["cpu"].items()))

    print(f"\npage load of the workbench, {BrowserTimer.label}:")
    for when, cache, seconds, note in page_loads:
        shown = f"{seconds:6.2f} s" if seconds is not None else "  FAILED"
        print(f"  {when:<26}{cache:<38}{shown}   {note}")
    calls_ok = total_errors == 0 and not outcome["hung"] and len(calls) >= args.calls
    verdicts = [f"errors {total_errors} -> {'PASS' if calls_ok else 'FAIL'}"]
    page_ok = True
    for cache, worst in worst_under_load(page_loads).items():
        ok = worst is not None and worst < TARGET_PAGE_SECONDS
        page_ok = page_ok and ok
        shown = f"{worst:.2f} s" if worst is not None else "not measured or failed"
        verdicts.append(f"page load under load ({cache}) {shown} vs {TARGET_PAGE_SECONDS:.0f} s "
                        f"-> {'PASS' if ok else 'FAIL'}")
    print("\nverdict: " + "\n         ".join(verdicts))
    return not (calls_ok and page_ok)


def worst_under_load(page_loads: list) -> dict[str, float | None]:
    """The slowest page load under load of each cache kind; None where one failed or none was taken."""
    kinds = dict.fromkeys(c for when, c, _, _ in page_loads if when.startswith("under load") and c != "-")
    worst: dict[str, float | None] = {}
    for cache in kinds or ("no page load",):
        loads = [s for when, c, s, _ in page_loads if when.startswith("under load") and c == cache]
        worst[cache] = max(loads) if loads and None not in loads else None
    return worst


def summary(args: argparse.Namespace, results: dict[str, dict[str, Any]]) -> None:
    """The stacks side by side."""
    print(f"\n=== summary: {args.clients} clients, {args.calls} calls, {args.storm_clients} storm sessions"
          f"{f', the agents side at nice {args.nice}' if args.nice else ''} ===")
    header = (f"{'stack':<10}{'calls/s':>8}{'retrieve p50/p95':>18}{'explore p50/p95':>17}{'storm p50/p95':>15}"
              f"{'errors':>7}{'page idle':>10}{'page under load':>17}{'CPU ms/call':>13}")
    print(header)
    print("-" * len(header))
    for stack, result in results.items():
        outcome = result["outcome"]
        if "fatal" in outcome:
            print(f"{stack:<10}  LOAD FAILED: {outcome['fatal']}")
            continue
        records = outcome["records"]

        def p50_95(tool: str) -> str:
            ms = [r[1] for r in records if r[0] == tool and r[2] is None]
            return f"{percentile(ms, 0.5):.0f}/{percentile(ms, 0.95):.0f}" if ms else "-"

        calls = sum(r[0] in TOOLS for r in records)
        errors = sum(r[2] is not None for r in records) + len(outcome["connect_errors"])
        idle = [s for when, c, s, _ in result["pages"] if when == "idle" and c == "cache cleared"]
        worst = worst_under_load(result["pages"])
        loaded = "/".join(f"{w:.2f}" if w is not None else "FAIL" for w in worst.values())
        cpu = sum(result["cpu"].values()) * 1000 / max(len(records), 1)
        print(f"{stack:<10}{calls / outcome['wall']:>8.1f}{p50_95(TOOLS[0]):>18}{p50_95(TOOLS[1]):>17}"
              f"{p50_95(STORM):>15}{errors:>7}{(f'{idle[0]:.2f} s' if idle and idle[0] else '-'):>10}"
              f"{loaded + ' s':>17}{cpu:>13.1f}")
    print("page idle: cache cleared; page under load: the worst with the cache cleared / cached; "
          "CPU: every part (clients, endpoint, PostgreSQL, workbench) per call made")


if __name__ == "__main__":
    sys.exit(main())
