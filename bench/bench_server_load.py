"""The thread server under load: 50 concurrent MCP clients make 2,000 retrieve/explore calls in
total over streamable HTTP on loopback, while a workbench page is loaded in a browser.

Target: 0 errors, p50/p95 latency printed; a Streamlit page load timed during
the load stays under 2 s.

Setup: the first --papers QASPER dev papers with questions (../shared/eval/qasper-dev) are
ingested into a temporary store (about 10 s a paper) under model_id "bench"; then this process
lets go of the store and `streamlit run app.py` opens it (an embedded store serves one process),
with its agent endpoint (forest.serving.http.ThreadServer, started on the first script run) on a free
loopback port: the clients call the very endpoint the workbench embeds, in the process that also
renders its pages. The clients run in a separate process (spawned: one asyncio loop, one
mcp.client.ClientSession per client), so their CPU time is not charged to the server's GIL;
both share the machine's cores, as they would on one box. Each client loops: retrieve_memory
with a random question of those papers, then explore_memory_node on a SUMMARY_NODE of that
result with the same question (a node another client found if the result had none), until
--calls calls have been made in total. An error is a result with is_error, a result without
the tool's key (representative_nodes / children), or an exception (--call-timeout included).
Latency is per call, from call_tool to its result; connecting the sessions is not counted.
Beside them, --storm-clients sessions call process_memory in a loop (a personal-memory write
storm); their calls are a row of their own and their errors count in the verdict.

Page load: headless Chromium
driven by selenium (Debian packages chromium and chromium-driver, PyPI package selenium) is
timed from navigation until the script's output is in the page: the "Memory Forest" title and
the archives table (or the "No archives yet" note), i.e. a full script run in a new browser
session. Idle, before the clients start: a cold load (first script run in the Streamlit process,
new browser), then one with the browser cache and one with it cleared. Under load, each time
--page-at calls have completed: one with the cache cleared, then one cached; the verdict takes
the worst of each kind. Chromium is required: the endpoint starts on the first script run, which
needs a browser session.

Run: `python bench/bench_server_load.py [--clients 50] [--calls 2000] [--papers 5]`
(a few minutes on 2 cores; --data-dir DIR keeps the store and reuses the papers already in it).
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

# Ready when the script's output is on the page; an exception box is a failed load.
PAGE_READY_JS = """
const err = document.querySelector('[data-testid="stException"]');
if (err) return 'error: ' + err.innerText.slice(0, 300);
const title = [...document.querySelectorAll('h1')].some(h => h.textContent.includes('Memory Forest'));
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
             max_seconds: float, seed: int, done: Any, results: Any, storm_clients: int = 0) -> None:
    try:
        outcome = asyncio.run(_load(url, questions, clients, calls, top_k, call_timeout, max_seconds, seed, done,
                                    storm_clients))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, never lost
        outcome = {"fatal": f"{type(exc).__name__}: {exc}"}
    results.put(outcome)


async def _load(url: str, questions: list[str], clients: int, calls: int, top_k: int, call_timeout: float,
                max_seconds: float, seed: int, done: Any, storm_clients: int = 0) -> dict[str, Any]:
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
                    await call(session, "process_memory", {"user_id": f"storm-{i}", "input":
                               f"My friend number {n} is called Robin{i}x{n} and lives in Lyon."}, "vector_chunks", STORM)
        except Exception as exc:  # noqa: BLE001
            records.append((STORM, 0.0, f"storm {i}: {type(exc).__name__}: {exc}"[:300]))

    tasks = [asyncio.create_task(client(i)) for i in range(clients)]
    storms = [asyncio.create_task(storm(i)) for i in range(storm_clients)]
    start = time.perf_counter()
    await all_ready.wait()
    connected_in = time.perf_counter() - start
    go.set()
    start = time.perf_counter()
    hung = False
    try:
        await asyncio.wait_for(asyncio.gather(*tasks, *storms), timeout=max_seconds)
    except TimeoutError:
        hung = True
    wall = time.perf_counter() - start
    return {"records": records, "connect_ms": connect_ms, "connect_errors": connect_errors,
            "connected_in": connected_in, "wall": wall, "hung": hung, "issued": issued,
            "explore_source": dict(explore_source)}


# --- the workbench page ----------------------------------------------------------------------
class Workbench:
    """`streamlit run app.py` on a free loopback port, reading the same store."""

    def __init__(self, data_dir: Path, log_dir: Path, server_port: int) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.endpoint = f"http://127.0.0.1:{server_port}"   # its agent endpoint, once a script has run
        self.log_path = log_dir / "streamlit.log"
        env = {**os.environ, "FOREST_DATA_DIR": str(data_dir), "FOREST_SERVER_PORT": str(server_port)}
        self.log = open(self.log_path, "wb")  # noqa: SIM115 - open as long as the process, closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
             "--server.port", str(self.port), "--server.address", "127.0.0.1",
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_healthy(self, url: str, seconds: float = 60.0) -> float:
        """Seconds until `url` answers 200 (Streamlit's /_stcore/health, the endpoint's /health)."""
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            if self.process.poll() is not None:
                raise RuntimeError(f"streamlit exited with {self.process.returncode}:\n{self.log_tail()}")
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
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)  # its own session: streamlit and its children
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self.log.close()


class BrowserTimer:
    """Headless Chromium via selenium: seconds from navigation until PAGE_READY_JS says 'ok'."""

    label = "headless Chromium (selenium): navigation -> title and archives table rendered"

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


def warm_up(endpoint: str, question: str) -> None:
    """One retrieve over REST before the clock starts: the workbench loads its models on first use."""
    body = json.dumps({"model_id": MODEL_ID, "query": question}).encode()
    request = urllib.request.Request(f"{endpoint}/tools/retrieve_memory", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as reply:
        reply.read()


# --- the run ---------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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
    parser.add_argument("--data-dir", type=Path, help="keep the store here (reuse papers already in it)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
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
    data_dir = args.data_dir or work / "store"
    forest = workbench = timer = load_process = None
    failed = False
    try:
        forest = MemoryForest(data_dir=data_dir)
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
        forest.close()   # the workbench owns the store from here
        forest = None

        workbench = Workbench(Path(data_dir), work, server_port=free_port())
        print(f"workbench: {workbench.url} (streamlit, pid {workbench.process.pid}); "
              f"healthy after {workbench.wait_healthy(f'{workbench.url}/_stcore/health'):.1f} s")
        timer = BrowserTimer(work / "chromium-profile", timeout=60.0)
        page_loads: list[tuple[str, str, float | None, str]] = []   # (when, cache, seconds, note)

        def time_page(when: str, cache: str, progress: Any = None) -> None:
            before = progress.value if progress is not None else None
            try:
                seconds, note = timer.load(workbench.url, clear_cache=cache == "cache cleared")
            except Exception as exc:  # noqa: BLE001
                seconds, note = None, f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
            if progress is not None:
                note += f"; calls {before} -> {progress.value} done meanwhile"
            page_loads.append((when, cache, seconds, note.strip("; ")))

        time_page("idle", "cold: first script run, new browser")   # also starts the endpoint
        started = workbench.wait_healthy(f"{workbench.endpoint}/health")
        warm_up(workbench.endpoint, questions[0])
        print(f"agent endpoint: {workbench.endpoint}/mcp (embedded in the workbench's process), "
              f"answering {started:.1f} s after the first page load")
        time_page("idle", "cached")
        time_page("idle", "cache cleared")

        spawn = multiprocessing.get_context("spawn")
        done = spawn.Value("i", 0)
        results = spawn.Queue()
        load_process = spawn.Process(
            target=run_load, name="bench-clients",
            args=(workbench.endpoint, questions, args.clients, args.calls, args.top_k, args.call_timeout,
                  args.max_seconds, args.seed, done, results, args.storm_clients))
        load_process.start()
        outcome = None
        marks = sorted(args.page_at)
        deadline = time.monotonic() + args.max_seconds + 120
        while outcome is None and time.monotonic() < deadline:
            if marks and done.value >= marks[0]:
                when = f"under load, at call {marks.pop(0)}"
                time_page(when, "cache cleared", done)
                time_page(when, "cached", done)
            try:
                outcome = results.get(timeout=0.05)
            except queue.Empty:
                if not load_process.is_alive() and results.empty():
                    outcome = {"fatal": f"the client process died (exit code {load_process.exitcode})"}
        if outcome is None:
            outcome = {"fatal": f"no result from the client process after {args.max_seconds + 120:.0f} s"}
        for mark in marks:
            page_loads.append((f"under load, at call {mark}", "-", None, "not taken: the load ended first"))

        failed = report(args, outcome, page_loads, timer.label)
    finally:
        if load_process is not None:
            load_process.join(timeout=30)
            if load_process.is_alive():
                load_process.terminate()
                load_process.join(timeout=10)
        for part in (timer, workbench):
            if part is not None:
                try:
                    part.close() if part is timer else part.stop()
                except Exception as exc:  # noqa: BLE001
                    print(f"warning: stopping {type(part).__name__}: {exc}", file=sys.stderr)
        if forest is not None:
            forest.close()
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


def report(args: argparse.Namespace, outcome: dict[str, Any], page_loads: list, page_label: str) -> bool:
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
    if errors:
        print("errors (distinct messages, most frequent first):")
        for message, n in errors.most_common(10):
            print(f"  {n:>5} x {message}")

    print(f"\npage load of the workbench, {page_label}:")
    for when, cache, seconds, note in page_loads:
        shown = f"{seconds:6.2f} s" if seconds is not None else "  FAILED"
        print(f"  {when:<26}{cache:<38}{shown}   {note}")
    calls_ok = total_errors == 0 and not outcome["hung"] and len(calls) >= args.calls
    verdicts = [f"errors {total_errors} -> {'PASS' if calls_ok else 'FAIL'}"]
    page_ok = True
    kinds = dict.fromkeys(c for when, c, _, _ in page_loads if when.startswith("under load") and c != "-")
    for cache in kinds or ("no page load",):
        loads = [s for when, c, s, _ in page_loads if when.startswith("under load") and c == cache]
        worst = max((s for s in loads if s is not None), default=None)
        ok = bool(loads) and None not in loads and worst < TARGET_PAGE_SECONDS
        page_ok = page_ok and ok
        shown = f"{worst:.2f} s" if worst is not None and None not in loads else "not measured or failed"
        verdicts.append(f"page load under load ({cache}) {shown} vs {TARGET_PAGE_SECONDS:.0f} s "
                        f"-> {'PASS' if ok else 'FAIL'}")
    print("\nverdict: " + "\n         ".join(verdicts))
    return not (calls_ok and page_ok)


if __name__ == "__main__":
    sys.exit(main())
