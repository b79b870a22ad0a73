"""Workbench speed in a real browser: drawing a ~500-node tree on the Forest page, and switching
pages on a warm process.

Targets (the workbench issue): the tree drawn in under 3 s; a page switch under 1 s.
A real paper (../shared/eval/pdfs/1705.07830.pdf, 15 pages) is ingested with small chunks so its
tree has about 500 nodes; `streamlit run app.py` serves it; headless Chromium (Debian chromium +
chromium-driver, selenium) clicks through the sidebar. Times run from the click until the page's
own output is in the DOM (the tree: vis-network's first drawing of every node).

Run: `python bench/bench_workbench.py [--repeat 5]`
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from forest.service import MemoryForest

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT.parent / "shared" / "eval" / "pdfs" / "1705.07830.pdf"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def click_page(driver, title: str) -> None:
    next(a for a in driver.find_elements(By.CSS_SELECTOR, "[data-testid=stSidebarNav] a") if title in a.text).click()


def timed(driver, title: str, ready) -> float:
    start = time.perf_counter()
    click_page(driver, title)
    WebDriverWait(driver, 60, poll_frequency=0.02, ignored_exceptions=(StaleElementReferenceException,)).until(ready)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--chunk-size", type=int, default=300, help="small chunks: a ~500-node tree")
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="bench-workbench-"))
    app = driver = None
    try:
        forest = MemoryForest(data_dir=data_dir)
        archive = forest.ingest_file(PAPER, "bench", chunk_size=args.chunk_size)
        forest.close()
        print(f"archive: {PAPER.name}, {archive.leaves} leaves, {archive.nodes} nodes, depth {archive.depth}")
        port = free_port()
        env = {**os.environ, "FOREST_DATA_DIR": str(data_dir), "FOREST_SERVER_PORT": "0"}
        app = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless",
                                "true", "--server.port", str(port), "--server.address", "127.0.0.1"],
                               env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        options = webdriver.ChromeOptions()
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
            options.add_argument(flag)
        options.binary_location = shutil.which("chromium")
        driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(shutil.which("chromedriver")))
        time.sleep(2)
        driver.get(f"http://127.0.0.1:{port}")
        WebDriverWait(driver, 60, ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda d: any("Library" in a.text for a in d.find_elements(By.CSS_SELECTOR, "[data-testid=stSidebarNav] a")))
        time.sleep(1)  # a fresh server first lists pages/ itself, then app.py's st.navigation replaces it

        def tree_drawn(d) -> bool:
            return d.execute_script("const h = document.querySelector('#forest-tree');"
                                    f"return !!h && h.dataset.drawn === '{archive.nodes}'")

        def page(header: str):
            return lambda d: any(h.text == header for h in d.find_elements(By.CSS_SELECTOR, "h2"))

        draws, switches = [], []
        for _ in range(args.repeat):
            switches.append(timed(driver, "Ask", page("Ask")))
            draws.append(timed(driver, "Forest", tree_drawn))
            switches.append(timed(driver, "Server", page("Server")))
        print(f"Forest page, {archive.nodes}-node tree drawn: median {statistics.median(draws):.2f} s, "
              f"max {max(draws):.2f} s (target < 3 s) over {len(draws)} loads")
        print(f"page switch (Ask, Server), warm process: median {statistics.median(switches):.2f} s, "
              f"max {max(switches):.2f} s (target < 1 s) over {len(switches)} switches")
    finally:
        if driver is not None:
            driver.quit()
        if app is not None:
            app.terminate()
            app.wait(timeout=20)
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
