"""The workbench in a real headless Chromium (`streamlit run` + selenium): what AppTest cannot see,
the Ask page's one-click answer and a user's knowledge graph drawn (the tree and citations: test_browser_reading.py).
`streamlit_app` and `chromium` start the workbench and a browser for every browser test."""
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import ROOT
from testkit.processes import forest_env, free_port
from testkit.topics import topic_text

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
try:
    from selenium import webdriver
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # pragma: no cover - reported by the skip below
    webdriver = None

MISSING = [what for what, ok in (("chromium", CHROMIUM), ("chromedriver", DRIVER), ("selenium", webdriver)) if not ok]
pytestmark = pytest.mark.skipif(
    bool(MISSING), reason=f"BROWSER TESTS SKIPPED: {', '.join(MISSING)} missing (install Debian's chromium and "
                          "chromium-driver and `pip install selenium`; `make test` does this as root)")
STREAMLIT = str(Path(sys.executable).parent / "streamlit")


@contextmanager
def streamlit_app(data_dir: Path, **env: str) -> Iterator[tuple[subprocess.Popen, str]]:
    """`streamlit run app.py` on the store in `data_dir` (no endpoint, no sample papers unless `env`
    says otherwise); yields the process and its URL once it answers. The health check opens no
    session: the first page a test requests is the server's first."""
    port = free_port()
    settings = {"FOREST_SERVER_PORT": "0", "FOREST_SAMPLES_DIR": str(data_dir.parent / "no-samples"), **env}
    app = subprocess.Popen([STREAMLIT, "run", str(ROOT / "app.py"), "--server.headless", "true", "--server.port",
                            str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
                           env=forest_env(data_dir, **settings), cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield app, url
    finally:
        app.terminate()
        app.wait(timeout=20)


def chromium(width: int = 1400, height: int = 1000, log_network: bool = False) -> "webdriver.Chrome":
    """Headless Chromium whose page is `width` x `height`; with log_network, its performance log
    records every request."""
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", f"--window-size={width},{height}"):
        options.add_argument(flag)
    options.binary_location = CHROMIUM
    if log_network:
        options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(DRIVER))
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
    return driver


def requested_urls(driver) -> list[str]:
    """Every URL the page requested (or opened a websocket to) since the last call; needs a
    browser made with log_network."""
    events = [json.loads(entry["message"])["message"] for entry in driver.get_log("performance")]
    return [e["params"]["request"]["url"] for e in events if e["method"] == "Network.requestWillBeSent"] + \
        [e["params"]["url"] for e in events if e["method"] == "Network.webSocketCreated"]


@pytest.fixture(scope="module")
def workbench(tmp_path_factory):
    from forest import MemoryForest

    data_dir = tmp_path_factory.mktemp("browser") / "store"
    forest = MemoryForest(data_dir=data_dir, chunk_size=300)
    archive = forest.ingest_text("reader", "notes", "## Jazz\n\n" + topic_text("jazz") + "\n\n## Volcanoes\n\n" +
                                 topic_text("volcanoes"), threshold=0.0)
    nodes = forest.tree("reader", archive.id)
    forest.personal.memory_tool("add", "zhu", text=["灿灿是小朱的女儿", "灿灿还有一个弟弟，叫帅帅"])
    forest.close()
    with streamlit_app(data_dir) as (_, url):
        driver = chromium()
        try:
            driver.get(url)
            WebDriverWait(driver, 60).until(lambda d: "Library" in d.page_source and "Memory Forest" in d.page_source)
            yield driver, url, nodes
        finally:
            driver.quit()


def wait(driver, condition, seconds: float = 60, message: str = ""):
    """`condition` true within `seconds`; an element Streamlit re-renders meanwhile is looked up again."""
    return WebDriverWait(driver, seconds, ignored_exceptions=(StaleElementReferenceException,)).until(condition,
                                                                                                        message)


def open_page(driver, title: str) -> None:
    wait(driver, lambda d: next((a for a in d.find_elements(By.CSS_SELECTOR, "[data-testid=stSidebarNav] a")
                                 if title in a.text), None)).click()


def settled(driver) -> bool:
    """The script run finished (Streamlit marks the app 'notRunning') and nothing is still loading."""
    return driver.execute_script(
        "const app = document.querySelector('[data-testid=stApp]');"
        "return !!app && app.dataset.testScriptState === 'notRunning' && "
        "!document.querySelector('[data-testid=stSpinner], [data-testid=stSkeleton]')")


def button(driver, label: str):
    """The button labelled `label` once it is shown and can be clicked."""
    quoted = f'"{label}"' if "'" in label else f"'{label}'"
    return wait(driver, lambda d: next((b for b in d.find_elements(By.XPATH, f"//button[.//p[text()={quoted}]]")
                                        if b.is_displayed() and b.is_enabled()), None))


def selectbox(driver, label: str):
    """The input of the (first) selectbox labelled `label`; None if there is none."""
    return next((box.find_element(By.TAG_NAME, "input") for box in driver.find_elements(By.CSS_SELECTOR,
                 "[data-testid=stSelectbox]") if box.find_element(By.TAG_NAME, "label").text.strip() == label), None)


def selected(driver, label: str) -> str | None:
    """The value the (first) selectbox labelled `label` shows; None if there is none."""
    field = selectbox(driver, label)
    return None if field is None else field.get_attribute("value")


def choose(driver, label: str, option: str) -> None:
    """Pick the option starting with `option` in the selectbox labelled `label`, and wait for the run
    it starts. Its text is typed first, as a person with a long list does (the list draws only the
    options in view); a run still drawing the page redraws the box and closes its list, so the
    pick starts when the page has settled, and is made again if the list closed under it."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    for attempt in range(3):
        field = wait(driver, lambda d: settled(d) and selectbox(d, label))
        field.click()
        field.send_keys(option)
        try:
            wait(driver, lambda d: next((o for o in d.find_elements(By.CSS_SELECTOR, "[role=option]")
                                         if o.text.strip().startswith(option)), None), 20).click()
            break
        except TimeoutException:
            if attempt == 2:
                raise
            ActionChains(driver).send_keys(Keys.ESCAPE).perform()
    wait(driver, lambda d: settled(d) and (selected(d, label) or "").startswith(option))


def test_ask_page_answers_in_one_click_answer_first_steps_folded(workbench):
    driver, _, _ = workbench
    open_page(driver, "Ask")
    question = WebDriverWait(driver, 30).until(lambda d: d.find_element(By.CSS_SELECTOR, "input[aria-label=Question]"))
    question.send_keys("Who played bebop?")
    # Streamlit can draw the button after the field: on a busy machine it was not there yet
    wait(driver, lambda d: d.find_element(By.XPATH, "//button[.//p[text()='Ask']]")).click()
    link = wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-testid=stMarkdown] a[href^='#cite-']"), 120)[0]
    steps = driver.find_element(By.XPATH, "//details[.//p[starts-with(text(), 'How the agent got there')]]")
    # the answer comes before the folded steps, which open on a click and say what the agent did
    assert link.location["y"] < steps.location["y"] and steps.get_attribute("open") is None
    steps.find_element(By.TAG_NAME, "summary").click()
    wait(driver, lambda d: "Chosen by the offline policy" in steps.text)
    assert "Opened" in steps.text and "#1" not in steps.text


def test_personal_memory_page_draws_the_users_graph_offline(workbench, tmp_path):
    driver, _, _ = workbench
    open_page(driver, "Personal memory")
    user = WebDriverWait(driver, 30).until(lambda d: d.find_element(By.CSS_SELECTOR, "input[aria-label=user_id]"))
    user.send_keys("zhu\n")
    WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.XPATH, "//*[@role='tab'][contains(normalize-space(.), 'Graph')]"))
    driver.find_element(By.XPATH, "//*[@role='tab'][contains(normalize-space(.), 'Graph')]").click()
    frame = WebDriverWait(driver, 30).until(
        lambda d: next((f for f in d.find_elements(By.TAG_NAME, "iframe") if f.is_displayed()), None))
    driver.switch_to.frame(frame)
    try:
        count = WebDriverWait(driver, 30).until(lambda d: d.execute_script(
            "return typeof network !== 'undefined' && document.querySelector('canvas') && "
            "network.body.data.nodes.length"))
        labels = driver.execute_script("return network.body.data.edges.get().map(e => e.label)")
        remote = driver.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name).filter(n => n.startsWith('http'))")
    finally:
        driver.switch_to.default_content()
    assert count == 3 and sorted(labels) == ["女儿", "弟弟"]
    assert remote == []  # the drawing loaded nothing from the network
    shot = tmp_path / "graph.png"
    assert driver.save_screenshot(str(shot)) and shot.read_bytes()[:4] == b"\x89PNG"
    if os.environ.get("FOREST_SCREENSHOTS"):
        shutil.copy(shot, Path(os.environ["FOREST_SCREENSHOTS"]) / "graph.png")
