"""What any Streamlit page costs to load on this machine, beside the workbench's Library page: the
floor under bench_server_load.py's page-load figure.

Three apps, each served by `streamlit run` and loaded by the same headless Chromium timer as
bench_server_load.py (navigation until the "Library" header and a table are drawn), idle, with
the browser cache kept and cleared in turn:
- bare: a title and a one-row dataframe;
- navigation: the same page inside st.navigation with the workbench's seven pages and a sidebar
  selectbox (the workbench's shell without its engine);
- workbench: app.py on a store (--store; default: the sample paper ingested into a temporary
  store), the endpoint off.

    python -m bench.bench_streamlit_floor [--loads 8] [--store DIR]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench.bench_server_load import ROOT, BrowserTimer, free_port, missing_browser

PAGE = '''import streamlit as st
st.title("Library")
st.sidebar.selectbox("model_id", ["bench", "other"])
st.dataframe([{"id": 1, "name": "paper", "leaves": 90, "nodes": 112}], hide_index=True)
'''
NAVIGATION = '''import streamlit as st
st.set_page_config(page_title="Memory Forest", page_icon="🌳", layout="wide")
NAMES = ["library", "tree", "ask", "research", "reconcile", "memory", "server"]
st.navigation([st.Page(f"pages/{name}.py", title=name.title(), icon=":material/hub:") for name in NAMES]).run()
'''


def write_apps(folder: Path) -> dict[str, Path]:
    (folder / "bare").mkdir(parents=True)
    (folder / "bare" / "app.py").write_text(PAGE.replace('st.sidebar.selectbox("model_id", ["bench", "other"])\n', ""))
    pages = folder / "navigation" / "pages"
    pages.mkdir(parents=True)
    (folder / "navigation" / "app.py").write_text(NAVIGATION)
    for name in ("library", "tree", "ask", "research", "reconcile", "memory", "server"):
        (pages / f"{name}.py").write_text(PAGE)
    return {"bare": folder / "bare" / "app.py", "navigation": folder / "navigation" / "app.py",
            "workbench": ROOT / "app.py"}


def serve(app: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(app), "--server.headless", "true",
                                "--server.port", str(port), "--server.address", "127.0.0.1",
                                "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                               cwd=app.parent, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url + "/_stcore/health", timeout=1)
            return process, url
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise SystemExit(f"{app} did not start")


def sample_store(folder: Path) -> Path:
    from forest import MemoryForest
    from forest.config import load_settings

    forest = MemoryForest(load_settings({"data_dir": folder}, environ={}))
    try:
        forest.ingest_file(next((ROOT / "data" / "samples").glob("*.pdf")), "bench")
    finally:
        forest.close()
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--loads", type=int, default=8, help="timed loads per app (half with the cache cleared)")
    parser.add_argument("--store", type=Path, help="the workbench's store (default: the sample paper, ingested)")
    args = parser.parse_args()
    if reason := missing_browser():
        raise SystemExit(reason)

    work = Path(tempfile.mkdtemp(prefix="bench-streamlit-floor-"))
    try:
        store = args.store or sample_store(work / "store")
        apps = write_apps(work / "apps")
        print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        browser = BrowserTimer(work / "profile", 60)
        times: dict[str, list[float]] = {}
        try:
            for name, app in apps.items():
                env = {**os.environ, "FOREST_DATA_DIR": str(store), "FOREST_SERVER_PORT": "0"}
                process, url = serve(app, env)
                try:
                    browser.load(url, True)  # the first run of the script and a cold browser
                    times[name] = [browser.load(url, clear_cache=i % 2 == 1)[0] for i in range(args.loads)]
                finally:
                    process.terminate()
                    process.wait()
        finally:
            browser.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"\npage load, headless Chromium, idle, {args.loads} loads each (cache kept and cleared in turn)")
    print(f"{'app':<12} {'median s':>9} {'min s':>7} {'max s':>7}")
    for name, values in times.items():
        print(f"{name:<12} {statistics.median(values):>9.2f} {min(values):>7.2f} {max(values):>7.2f}")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
