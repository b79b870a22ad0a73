"""Workbench speed in a real browser, on a warm `streamlit run`: the first meaningful paint of every
page after a click in the sidebar, the Forest page's tree drawn at about 300 and 1,000 leaves
(and unfolded whole), and a citation's page preview (locate the passage, render the PNG).

Targets: each page < 1 s; the tree < 1 s at 300 leaves and < 3 s at 1,000; the page
preview < 0.5 s.
Real papers (../shared/eval/pdfs): the 300-leaf archive is 1705.07830.pdf (15 pages) in small
chunks; the 1,000-leaf archive holds all seven papers (the first ingested, the rest appended).
Each archive is its own model_id, chosen in the sidebar. Headless Chromium (Debian chromium +
chromium-driver, selenium) clicks; a time runs from the click until the page's own output is in
the DOM (the tree: vis-network's first drawing of it).

Run: `python -m bench.bench_workbench [--repeat 5] [--store DIR]`
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from forest.config import load_settings
from forest.tree.leaves import leaf_chunks
from forest.views.page_preview import render_page
from forest.service import MemoryForest
from forest.ingest import load_document

ROOT = Path(__file__).resolve().parents[1]
PAPERS = sorted((ROOT.parent / "shared" / "eval" / "pdfs").glob("*.pdf"))
FIRST = ROOT.parent / "shared" / "eval" / "pdfs" / "1705.07830.pdf"
Ready = Callable[[object], bool]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chunk_size_for(papers: list[Path], leaves: int) -> int:
    """The chunk size that cuts `papers` into about `leaves` leaves with the configured chunker
    (chunking is cheap; embedding is not)."""
    documents = [load_document(p) for p in papers]
    chunker = load_settings().chunker
    return min(range(150, 2001, 10), key=lambda size: abs(leaves - sum(
        len(leaf_chunks(d, chunker, size, size // 10)) for d in documents)))


def build(forest: MemoryForest, model_id: str, papers: list[Path], leaves: int):
    """The archive of `papers` in about `leaves` leaves (made once per store: see --store)."""
    made = forest.archives(model_id)
    if made:
        return made[0]
    size = chunk_size_for(papers, leaves)
    archive = forest.ingest_file(papers[0], model_id, chunk_size=size, chunk_overlap=size // 10)
    for paper in papers[1:]:
        archive = forest.append_file(paper, model_id, archive.id)
    return archive


def answering(url: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def wait(driver, ready: Ready, seconds: float = 120):
    return WebDriverWait(driver, seconds, poll_frequency=0.02,
                         ignored_exceptions=(StaleElementReferenceException,)).until(ready)


def click_page(driver, title: str) -> None:
    wait(driver, lambda d: next((a for a in d.find_elements(By.CSS_SELECTOR, "[data-testid=stSidebarNav] a")
                                 if a.text.strip().splitlines()[-1:] == [title]), None)).click()


def timed(driver, title: str, ready: Ready) -> float:
    start = time.perf_counter()
    click_page(driver, title)
    wait(driver, ready)
    return time.perf_counter() - start


def header(title: str, selector: str) -> Ready:
    """The page's header and its first own element (a widget, a table...) are in the DOM."""
    return lambda d: (any(h.text == title for h in d.find_elements(By.CSS_SELECTOR, "h2"))
                      and bool(d.find_elements(By.CSS_SELECTOR, selector)))


def tree_drawn(nodes: int) -> Ready:
    return lambda d: d.execute_script("const h = document.querySelector('#forest-tree');"
                                      f"return !!h && h.dataset.drawn === '{nodes}'")


PAGES: dict[str, str] = {   # page: what shows it has painted its content, not only its header
    "Library": "[data-testid=stFileUploader]", "Ask": "input[aria-label=Question]",
    "Research memory": "[data-testid=stTabs]", "Reconcile": "input[aria-label=Question]",
    "Personal memory": "input[aria-label=user_id]", "Server": "[data-testid=stCode]",
}


def choose_model_id(driver, model_id: str) -> None:
    """In the sidebar of a page that reads archives (the choice holds across pages)."""
    click_page(driver, "Ask")
    wait(driver, header("Ask", PAGES["Ask"]))   # the sidebar is drawn for good: a click now opens the list
    driver.find_element(By.CSS_SELECTOR, "[data-testid=stSidebar] input[aria-label=model_id]").click()
    wait(driver, lambda d: next((o for o in d.find_elements(By.CSS_SELECTOR, "[role=option]")
                                 if o.text == model_id), None)).click()
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "[data-testid=stSidebar] input[aria-label=model_id]")
         .get_attribute("value") == model_id)


def unfold_all(driver, nodes: int) -> float:
    """Seconds from 'Unfold all' until vis-network has drawn every node of the tree."""
    wait(driver, tree_drawn(nodes))
    return driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const network = window.memoryForestNetwork, start = performance.now();
        network.once("afterDrawing", () => done((performance.now() - start) / 1000));
        document.querySelector(".forest-bar button[data-act=unfold]").click();""")


def line(label: str, times: list[float], target: float) -> str:
    return (f"{label:<38} median {statistics.median(times):.2f} s, max {max(times):.2f} s "
            f"(target < {target:g} s) over {len(times)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--previews", type=int, default=30, help="cited leaves to preview")
    parser.add_argument("--store", type=Path, help="build the archives here once and reuse them (default: a "
                                                   "temporary store, removed afterwards)")
    args = parser.parse_args()
    data_dir = args.store or Path(tempfile.mkdtemp(prefix="bench-workbench-"))
    app = driver = None
    try:
        forest = MemoryForest(data_dir=data_dir)
        archives = {300: build(forest, "leaves300", [FIRST], 300),
                    1000: build(forest, "leaves1000", [FIRST, *(p for p in PAPERS if p != FIRST)], 1000)}
        for target, archive in archives.items():
            print(f"archive for ~{target} leaves: {archive.leaves} leaves, {archive.nodes} nodes, depth "
                  f"{archive.depth}, {len(archive.settings['documents'])} paper(s)")

        previews = []
        leaves = [n for n in forest.tree("leaves1000", archives[1000].id) if n.is_leaf]
        forest.source_preview("leaves1000", leaves[0].id)   # not timed: imports PyMuPDF
        for leaf in random.Random(15).sample(leaves, min(args.previews, len(leaves))):
            start = time.perf_counter()
            preview = forest.source_preview("leaves1000", leaf.id)
            render_page(preview.pdf, preview.first_page, preview.highlights.get(preview.first_page, []))
            previews.append(time.perf_counter() - start)
        forest.close()
        print(line("page preview (locate + render PNG)", previews, 0.5))

        port = free_port()
        env = {**os.environ, "FOREST_DATA_DIR": str(data_dir), "FOREST_SERVER_PORT": str(free_port()),
               "FOREST_SAMPLES_DIR": str(data_dir / "no-samples")}
        app = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless",
                                "true", "--server.port", str(port), "--server.address", "127.0.0.1"],
                               env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        options = webdriver.ChromeOptions()
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1600,1000"):
            options.add_argument(flag)
        options.binary_location = shutil.which("chromium")
        driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(shutil.which("chromedriver")))
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",   # the page itself 1600x1000
                               {"width": 1600, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
        driver.set_script_timeout(60)
        answering(f"http://127.0.0.1:{port}")
        driver.get(f"http://127.0.0.1:{port}")
        wait(driver, header("Library", PAGES["Library"]))

        paints: dict[str, list[float]] = {page: [] for page in PAGES}
        draws: dict[int, list[float]] = {300: [], 1000: []}
        unfolds: list[float] = []
        for target, archive in archives.items():
            choose_model_id(driver, f"leaves{target}")
            for page, selector in PAGES.items():   # warm: every page has run (and loaded its models) once
                timed(driver, page, header(page, selector))
            timed(driver, "Forest", tree_drawn(archive.nodes))
            for _ in range(args.repeat):
                for page, selector in PAGES.items():
                    paints[page].append(timed(driver, page, header(page, selector)))
                draws[target].append(timed(driver, "Forest", tree_drawn(archive.nodes)))
                if target == 1000:
                    unfolds.append(unfold_all(driver, archive.nodes))

        print("first meaningful paint after a click in the sidebar, warm server, both forests:")
        for page, times in paints.items():
            print("  " + line(page, times, 1))
        print(line(f"Forest, {archives[300].leaves}-leaf tree drawn", draws[300], 1))
        print(line(f"Forest, {archives[1000].leaves}-leaf tree drawn", draws[1000], 3))
        print(line(f"  then 'Unfold all' ({archives[1000].nodes} nodes shown)", unfolds, 3))
    finally:
        if driver is not None:
            driver.quit()
        if app is not None:
            app.terminate()
            app.wait(timeout=20)
        if args.store is None:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
