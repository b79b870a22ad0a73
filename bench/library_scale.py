"""A researcher's library at scale, three parts (each on its own with --part):

qasper   All 281 QASPER dev papers in ../shared/eval/qasper-dev as one model_id, imported as a folder
         with `forest library import` (a child process) that is killed midway and run again:
         throughput (papers per hour over both runs), what the kill cost, store size; then
         retrieve and context latency p50/p95 over the questions, and the forest protocol at
         library scale: how often the first passage comes from the question's paper, and context
         hits at 500 and 2,000 tokens (eval_qasper's rule) for the forest, flat dense (1,000-char
         chunks) and the best flat system built from the same parts (the forest's own leaves and
         vectors ranked flat: paragraph 600 +title|path, the best flat system on held-out papers,
         docs/benchmarks.md), with exact McNemar tests, in one run.
page     The Library page with 1,000 archives (synthetic metadata: authors, years, tags,
         collections) in a real browser (headless Chromium on `streamlit run app.py`): first paint
         of the page after the click, the table redrawn after a word typed in its filter, and the
         pages whose pickers offer every archive (Ask, Forest); also the engine's part (listing,
         rows, filtering) alone.
import   A Zotero library (built from Zotero's schema, testkit/zotero_factory.py) and a .bib with a
         missing file and a duplicate: imported, skipped, missing, duplicate counts, metadata checked.

Run: `python -m bench.library_scale` (all; the qasper part ingests 281 papers and embeds the flat
baseline's chunks: about 80 minutes on 2 cores), or `--part page [--loads N]`, `--part import`,
`--part qasper [--papers N] [--store DIR]`.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.eval_qasper import DEFAULT_DATA as QASPER_DATA
from bench.eval_qasper import dense_pack, load_leaves, load_questions, ngram_hit, words
from bench.flat_baselines import DENSE_1000, EmbeddingCache, FlatIndex, mcnemar_exact
from forest.service import MemoryForest

ROOT = Path(__file__).resolve().parents[1]
from testkit.library import paper, ready_archives, zotero_library
FOREST = str(Path(sys.executable).parent / "forest")
MODEL_ID = "qasper"
BUDGETS = (500, 2000)
BEST_FLAT = "flat para 600 +title|path"


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    return f"p50 {statistics.median(ordered):.1f} ms, p95 {ordered[int(0.95 * (len(ordered) - 1))]:.1f} ms"


def disk_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


# --- qasper ----------------------------------------------------------------------------------------
def import_with_a_kill(papers: Path, data_dir: Path, kill_at: int) -> dict:
    """`forest library import` of the papers folder, SIGKILLed once `kill_at` archives are ready, then run
    again to the end. Seconds of each run; archives the second run found already imported."""
    env = {**os.environ, "FOREST_DATA_DIR": str(data_dir)}
    args = [FOREST, "library", "import", str(papers), "--model-id", MODEL_ID, "--json", "--no-progress"]
    started = time.perf_counter()
    first = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    while first.poll() is None and ready_archives(data_dir) < kill_at:
        time.sleep(0.2)
    first.kill()
    first.wait()
    first_seconds = time.perf_counter() - started
    kept = ready_archives(data_dir)
    started = time.perf_counter()
    second = subprocess.run(args, env=env, capture_output=True, text=True)
    if second.returncode != 0:
        raise SystemExit(f"the second import failed: {second.stderr}")
    report = json.loads(second.stdout)
    return {"first_s": first_seconds, "kept_after_kill": kept, "second_s": time.perf_counter() - started,
            "report": report}


def qasper_part(args: argparse.Namespace) -> None:
    by_paper = load_questions(args.qasper)   # papers with a question whose evidence is a paragraph
    papers = sorted(p.stem for p in (args.qasper / "papers").glob("*.txt"))[:args.papers]
    questions = [q for p in papers for q in by_paper.get(p, [])]
    work = Path(args.store or tempfile.mkdtemp(prefix="library-scale-"))
    folder, data_dir = work / "papers", work / "store"
    folder.mkdir(parents=True, exist_ok=True)
    for paper_id in papers:
        if not (folder / f"{paper_id}.txt").exists():
            shutil.copy(args.qasper / "papers" / f"{paper_id}.txt", folder / f"{paper_id}.txt")
    if ready_archives(data_dir) < len(papers):
        ran = import_with_a_kill(folder, data_dir, kill_at=len(papers) // 2)
        counts = ran["report"]["counts"]
        total = ran["first_s"] + ran["second_s"]
        print(f"\nimport of {len(papers)} papers as one model_id: killed after {ran['first_s']:.0f} s with "
              f"{ran['kept_after_kill']} archives ready; the second run found {counts['unchanged']} imported, "
              f"imported {counts['imported']} ({counts['failed']} failed) in {ran['second_s']:.0f} s")
        print(f"throughput over both runs: {len(papers) / total * 3600:.0f} papers/h "
              f"({total:.0f} s for {len(papers)} papers)")
    print(f"store size: {disk_bytes(data_dir) / 1e6:.1f} MB ({disk_bytes(data_dir) / len(papers) / 1e3:.0f} kB a paper)")

    forest = MemoryForest(data_dir=data_dir)
    archives = {a.id: a.name for a in forest.archives(MODEL_ID)}
    assert sorted(archives.values()) == papers, "each paper once"
    forest.embedder.embed_query("warm up")
    retrieve_ms, context_ms = [], []
    leaves, matrix, _ = load_leaves(forest, MODEL_ID)
    from forest.ingest import load_document

    cache = EmbeddingCache(forest.embedder)
    documents = {p: load_document(folder / f"{p}.txt") for p in papers}
    dense = FlatIndex.build(DENSE_1000, documents, cache)
    gold_words = {p: words(p) for q in questions for ev in q.annotators for p in ev}
    hits: dict[tuple[str, int], list[bool]] = {}
    right_paper: dict[str, list[bool]] = {"forest context": [], DENSE_1000.name: [], BEST_FLAT: []}
    for q in questions:
        forest.embedder.forget_query(q.text)
        started = time.perf_counter()
        forest.retrieve(MODEL_ID, q.text)
        retrieve_ms.append((time.perf_counter() - started) * 1000)
        vector = forest.embedder.embed_query(q.text)
        for budget in BUDGETS:
            started = time.perf_counter()
            result = forest.context(MODEL_ID, q.text, budget_tokens=budget)
            context_ms.append((time.perf_counter() - started) * 1000)
            flat = dense_pack(matrix, vector, leaves, budget)
            for system, texts in (("forest context", [s.node.content for s in result.leaves]),
                                  (DENSE_1000.name, dense.dense(vector, budget)),
                                  (BEST_FLAT, [leaf.content for leaf in flat])):
                hits.setdefault((system, budget), []).append(ngram_hit(q, texts, gold_words))
            if budget == BUDGETS[0]:
                right_paper["forest context"].append(
                    bool(result.leaves) and archives.get(result.leaves[0].node.archive_id) == q.paper_id)
                right_paper[DENSE_1000.name].append(dense.top_paper(vector) == q.paper_id)
                right_paper[BEST_FLAT].append(bool(flat) and flat[0].archive == q.paper_id)
    print(f"\nQASPER dev, {len(papers)} papers in one model_id ({len(leaves):,} passages); the "
          f"{len(questions)} questions with paragraph evidence of {len({q.paper_id for q in questions})} of them")
    print(f"retrieve {percentiles(retrieve_ms)} (query embedded each time); context {percentiles(context_ms)}")
    print("| system | first passage from the question's paper | context hits @500 | @2000 |")
    print("|---|---|---|---|")
    for system in right_paper:
        print(f"| {system} | {np.mean(right_paper[system]):.3f} | {np.mean(hits[system, 500]):.3f} | "
              f"{np.mean(hits[system, 2000]):.3f} |")
    for other in (DENSE_1000.name, BEST_FLAT):
        for budget in BUDGETS:
            a_only, b_only, p = mcnemar_exact(hits["forest context", budget], hits[other, budget])
            print(f"McNemar forest vs {other} @{budget}: forest only {a_only}, flat only {b_only}, p = {p:.3f}")
    forest.close()
    if not args.store:
        shutil.rmtree(work, ignore_errors=True)


# --- page ------------------------------------------------------------------------------------------
def thousand_archives(data_dir: Path, count: int) -> MemoryForest:
    """`count` archives under model_id "library": one small paper imported again and again from its
    export (vectors shipped, nothing embedded), each with its own synthetic library metadata."""
    from testkit.topics import topic_text

    forest = MemoryForest(data_dir=data_dir, chunk_size=300)
    if len(forest.archives("library")) >= count:
        return forest
    seed = next(iter(forest.archives("seed")), None) or \
        forest.ingest_text("seed", "seed", topic_text("jazz", "volcanoes"))
    export = forest.export_archive("seed", seed.id, with_vectors=True)
    rng = random.Random(27)
    surnames = ["Buck", "Alt", "Chen", "Dubois", "Evans", "Fischer", "García", "Hoang", "Ito", "Jensen", "Kowalski",
                "Li", "Müller", "Nakamura", "Okafor", "Petrov", "Quinn", "Rossi", "Silva", "Tanaka", "Wang", "Zhang"]
    tags = ["retrieval", "summarization", "question answering", "memory", "agents", "evaluation", "RL", "vision"]
    collections = ["Reading", "Reading/NLP", "Reading/IR", "Thesis", "Thesis/Chapter 2", "Archive"]
    for number in range(len(forest.archives("library")), count):
        document = copy.deepcopy(export)
        title = f"Paper {number}: {rng.choice(tags).title()} with {rng.choice(tags)}"
        document["archive"]["library"] = {
            "title": title, "year": rng.randint(1995, 2025), "doi": f"10.5555/bench.{number}",
            "creators": [{"last": name, "first": "A.", "type": "author"}
                         for name in rng.sample(surnames, rng.randint(1, 5))],
            "tags": rng.sample(tags, rng.randint(0, 3)), "collections": rng.sample(collections, rng.randint(0, 2)),
            "source_kind": "zotero", "abstract": "A synthetic abstract about " + title.lower()}
        forest.import_archive("library", document, name=title, on_duplicate="keep")
    return forest


FEW_ARCHIVES = 50


def search_latency(forest: MemoryForest) -> str:
    """retrieve and context (500 tokens) over the synthetic archives' sentences as questions: every
    archive holds them, the worst case for the hits' collapse to their common ancestors."""
    from testkit.topics import TOPICS

    questions = [s.strip() + "." for name in ("jazz", "volcanoes") for p in TOPICS[name] for s in p.split(".")
                 if len(s.split()) > 4]
    forest.embedder.embed_query("warm up")
    retrieve_ms, context_ms = [], []
    for question in questions:
        forest.embedder.forget_query(question)
        started = time.perf_counter()
        forest.retrieve("library", question)
        retrieve_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        forest.context("library", question, budget_tokens=500)
        context_ms.append((time.perf_counter() - started) * 1000)
    return f"retrieve {percentiles(retrieve_ms)}, context {percentiles(context_ms)} ({len(questions)} questions)"


def page_part(args: argparse.Namespace) -> None:
    from forest.views.library_view import archive_rows, filtered

    data_dir = Path(args.store or tempfile.mkdtemp(prefix="library-page-"))
    started = time.perf_counter()
    forest = thousand_archives(data_dir, FEW_ARCHIVES)
    if len(forest.archives("library")) == FEW_ARCHIVES:   # a store made earlier may hold more already
        print(f"\nsearch at {FEW_ARCHIVES} archives: {search_latency(forest)}")
    forest.close()
    forest = thousand_archives(data_dir, args.archives)
    print(f"{args.archives} archives under model_id 'library' (made in {time.perf_counter() - started:.0f} s)")
    print(f"search at {args.archives} archives: {search_latency(forest)}")
    listing, rows_ms, filter_ms = [], [], []
    for _ in range(10):
        started = time.perf_counter()
        archives = forest.archives("library")
        listing.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        rows = archive_rows(archives)
        rows_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        filtered(rows, "retrieval", authors=["Buck"], years=(2010, 2020))
        filter_ms.append((time.perf_counter() - started) * 1000)
    print(f"engine: listing {statistics.median(listing):.1f} ms, rows {statistics.median(rows_ms):.1f} ms, "
          f"a filter {statistics.median(filter_ms):.2f} ms (medians of 10)")
    first_tree = archives[0].nodes   # the Forest page opens on the first archive listed
    forest.close()
    script_times(data_dir)
    browser_times(data_dir, args.loads, first_tree)
    if not args.store:
        shutil.rmtree(data_dir, ignore_errors=True)


def workbench_env(data_dir: Path) -> dict[str, str]:
    """The workbench on the bench's store: no agent endpoint, no sample papers."""
    return {"FOREST_DATA_DIR": str(data_dir), "FOREST_SERVER_PORT": "0", "FOREST_SAMPLES_DIR": str(data_dir / "no-samples")}


def script_times(data_dir: Path, runs: int = 10) -> None:
    """The Library page's script as the server runs it, without a browser (AppTest): what of a paint
    is the server's."""
    import streamlit as st
    from testkit.workbench import open_app, use_model_id

    os.environ.update(workbench_env(data_dir))
    st.cache_resource.clear()
    app = use_model_id(open_app(), "library")   # the engine started, on the Library page
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        app.run()
        seconds.append(time.perf_counter() - started)
    assert not app.exception and "archives shown" in " ".join(c.value for c in app.caption)
    from workbench.shared import get_forest, get_queue

    engine = get_forest()   # the one the runs used: it owns the store, which the browser's server needs next
    get_queue(engine).shutdown()
    engine.close()
    st.cache_resource.clear()
    print(f"server: the Library page's script runs in median {statistics.median(seconds):.2f} s, "
          f"max {max(seconds):.2f} s ({runs} runs, AppTest)")


def browser_times(data_dir: Path, loads: int, first_tree: int) -> None:
    """Each load: the Ask page (its paper picker offers every archive), the Library page, its table
    filtered by a typed word, the Forest page (its archive picker, the first archive's tree drawn)."""
    from bench.bench_workbench import answering, choose_model_id, header, timed, tree_drawn, wait
    from bench.bench_server_load import browser_binary, missing_browser
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    if (missing := missing_browser()):
        print(f"browser part skipped: {missing}")
        return
    port = _free_port()
    env = {**os.environ, **workbench_env(data_dir)}
    app = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless",
                            "true", "--server.port", str(port)], env=env, cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    options = webdriver.ChromeOptions()
    options.binary_location = browser_binary()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(shutil.which("chromedriver")))
    try:
        answering(f"http://127.0.0.1:{port}")
        driver.get(f"http://127.0.0.1:{port}")
        choose_model_id(driver, "library")
        times: dict[str, list[float]] = {"Ask page": [], "Library page": [], "Library table filtered": [],
                                         "Forest page": []}
        for _ in range(loads):
            times["Ask page"].append(timed(driver, "Ask", header("Ask", "input[aria-label=Question]")))
            times["Library page"].append(timed(driver, "Library", header("Library", "[data-testid=stDataFrame]")))
            box = driver.find_element(By.CSS_SELECTOR, "input[aria-label=Filter]")
            before = paging_label(driver)
            started = time.perf_counter()
            box.send_keys(("retrieval" if "retrieval" not in before else "") + Keys.ENTER)
            wait(driver, lambda d: paging_label(d) not in ("", before))
            times["Library table filtered"].append(time.perf_counter() - started)
            box.send_keys(Keys.CONTROL + "a", Keys.DELETE, Keys.ENTER)  # back to every archive
            wait(driver, lambda d: paging_label(d) == before)
            times["Forest page"].append(timed(driver, "Forest", tree_drawn(first_tree)))
        print(f"browser, {loads} loads (seconds from the click; the first load is the page's first in this server):")
        for what, seconds in times.items():
            print(f"  {what}: median {statistics.median(seconds):.2f} s, max {max(seconds):.2f} s "
                  f"({', '.join(f'{s:.2f}' for s in seconds)})")
    finally:
        driver.quit()
        app.terminate()
        app.wait(30)


def paging_label(driver) -> str:
    """The Library page's "N of M archives shown" caption: it changes when the table is filtered."""
    from selenium.webdriver.common.by import By

    return next((e.text for e in driver.find_elements(By.CSS_SELECTOR, "[data-testid=stCaptionContainer]")
                 if "archives shown" in e.text), "")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- import ----------------------------------------------------------------------------------------
def import_part(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        zotero_library(work / "Zotero", work / "scratch").close()
        forest = MemoryForest(data_dir=work / "store", chunk_size=300)
        zotero = forest.import_library("zotero", work / "Zotero")
        print(f"\nZotero library (2 items with PDFs, a note, tags, a collection): {zotero['counts']}")
        print("  metadata: " + "; ".join(f"{a.cite_as} — {a.library['title']}, DOI {a.library['doi'] or '-'}, "
                                         f"tags {a.library['tags']}, collections {a.library['collections']}"
                                         for a in forest.archives("zotero")))
        again = forest.import_library("zotero", work / "Zotero")
        print(f"  imported again: {again['counts']}")
        paper(work / "papers" / "jazz.pdf", "jazz")
        paper(work / "papers" / "plants.pdf", "photosynthesis")
        shutil.copy(work / "papers" / "jazz.pdf", work / "papers" / "copy.pdf")
        bib = work / "refs.bib"
        bib.write_text("@article{buck2018, author = {Buck, Ann and Bulian, Bo}, title = {Jazz}, year = {2018}, "
                       "file = {papers/jazz.pdf}}\n@article{green2019, author = {Green, Gus}, title = {Leaves}, "
                       "year = {2019}, doi = {10.1/leaf}, file = {:papers/plants.pdf:PDF}}\n@article{gone2020, "
                       "author = {Gone, Gil}, title = {Lost}, year = {2020}, file = {papers/lost.pdf}}\n"
                       "@article{again2018, author = {Buck, Ann}, title = {Jazz (preprint)}, year = {2018}, "
                       "file = {papers/copy.pdf}}\n", encoding="utf-8")
        report = forest.import_library("bib", bib)
        print(f".bib with a missing file and a duplicate: {report['counts']}")
        print(f"  missing: {report['missing'][0]['reason']}; duplicate: {report['duplicates'][0]['title']} "
              f"({report['duplicates'][0]['reason']} as {report['duplicates'][0]['same_as']})")
        print("  cited as: " + ", ".join(sorted(a.cite_as for a in forest.archives("bib"))))
        forest.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("qasper", "page", "import"), action="append",
                        help="run only these parts (default: all)")
    parser.add_argument("--papers", type=int, default=None, help="the first N QASPER dev papers (default: all)")
    parser.add_argument("--qasper", type=Path, default=QASPER_DATA)
    parser.add_argument("--archives", type=int, default=1000, help="archives on the Library page")
    parser.add_argument("--loads", type=int, default=5, help="browser page loads")
    parser.add_argument("--store", help="keep (and reuse) the store here")
    args = parser.parse_args()
    for part in args.part or ("import", "page", "qasper"):
        {"qasper": qasper_part, "page": page_part, "import": import_part}[part](args)


if __name__ == "__main__":
    main()
