"""The workbench as a fresh visitor meets it, in a real headless Chromium against `streamlit run`:
every page opened by its own URL (the first of them as the first request the server ever gets),
with the app's shell; nothing fetched from outside the machine; tabs that stay open across
actions; the personal graph drawn centred; the write queue refreshing by itself.

Screenshots of every page land in tests/screenshots/ (git-ignored) for a reviewer to look at."""
import re
from pathlib import Path
from urllib.parse import urlparse

import pytest

from conftest import ROOT
from testkit.processes import free_port
from testkit.topics import topic_text
from test_browser import MISSING, requested_urls, settled, streamlit_app
from test_browser import chromium as browser

if not MISSING:
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"BROWSER TESTS SKIPPED: {', '.join(MISSING)} missing")
SCREENSHOTS = ROOT / "tests" / "screenshots"
# URL path -> the page's header. The first one is the first request of the fresh server process.
PAGES = {"tree": "Forest", "ask": "Ask", "compare": "Compare", "library": "Library", "research": "Research memory",
         "reconcile": "Reconcile", "memory": "Personal memory", "server": "Server", "": "Library"}
NAVIGATION = ["Library", "Forest", "Ask", "Compare", "Research memory", "Reconcile", "Personal memory", "Server"]
ICONS = ["library_books", "account_tree", "question_answer", "table_chart", "psychology", "balance", "person", "hub"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`streamlit run app.py` on a store with an archive and a user's memories; nothing has opened
    a page of it yet."""
    from forest import MemoryForest

    data_dir = tmp_path_factory.mktemp("navigation") / "store"
    forest = MemoryForest(data_dir=data_dir, chunk_size=300)
    forest.ingest_text("reader", "notes", "## Jazz\n\n" + topic_text("jazz") + "\n\n## Volcanoes\n\n" +
                       topic_text("volcanoes"), threshold=0.0)
    forest.personal.memory_tool("add", "zhu", text=["灿灿是小朱的女儿", "灿灿还有一个弟弟，叫帅帅"])
    forest.close()
    endpoint = free_port()
    with streamlit_app(data_dir, FOREST_SERVER_PORT=str(endpoint),
                       FOREST_CORE_FILE=str(data_dir.parent / "CORE.md")) as (app, url):
        yield app, url, endpoint


def chromium() -> "webdriver.Chrome":
    """A new browser: no cookies, no storage, a new Streamlit session; it logs every request."""
    return browser(1600, 1000, log_network=True)


def assert_local(urls: list[str], url: str) -> None:
    local = (url, url.replace("http", "ws", 1), "data:", "blob:", "about:")
    assert urls and [u for u in urls if not u.startswith(local)] == []


def shot(driver, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    assert driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))


def test_every_page_by_its_own_url_in_a_fresh_browser_shows_the_whole_app(server):
    app, url, endpoint = server
    for path, header in PAGES.items():
        driver = chromium()
        try:
            driver.get(f"{url}/{path}")
            WebDriverWait(driver, 90).until(lambda d: settled(d) and header in [
                h.text for h in d.find_elements(By.CSS_SELECTOR, "[data-testid=stHeading] h2")])
            links = [a.text.splitlines() for a in driver.find_elements(By.CSS_SELECTOR, "[data-testid=stSidebarNav] a")]
            assert [title for *_, title in links] == NAVIGATION, path  # titles, not file names ("shared")
            assert [icon for icon, _ in links] == ICONS                # each link: its icon, then its title
            assert driver.execute_script("return document.fonts.check('24px \"Material Symbols Rounded\"')")
            assert driver.find_elements(By.TAG_NAME, "h1") == []   # no app-wide heading over the page's own
            sidebar = driver.find_element(By.CSS_SELECTOR, "[data-testid=stSidebar]").text
            assert f"Agent endpoint running: http://127.0.0.1:{endpoint}/mcp" in sidebar
            width = driver.execute_script(
                "return document.querySelector('[data-testid=stMainBlockContainer]').getBoundingClientRect().width")
            assert width > 1000, f"/{path} is not in the wide layout ({width:.0f} px)"
            assert urlparse(driver.current_url).path.rstrip("/") == f"/{path or 'library'}"  # "/" opens /library
            assert not driver.find_elements(By.CSS_SELECTOR, "[data-testid=stException]")
            shot(driver, path or "start")
            assert_local(requested_urls(driver), url)
        finally:
            driver.quit()
    assert app.poll() is None


def test_the_server_watches_no_files_while_a_page_is_open(server):
    """The file watcher is off: no inotify watch over the checkout, .venv and the store (a session's
    watcher lives as long as its page is open)."""
    app, url, _ = server
    fdinfo = Path(f"/proc/{app.pid}/fdinfo")
    if not fdinfo.is_dir():
        pytest.skip("needs Linux /proc")
    driver = chromium()
    try:
        driver.get(f"{url}/library")
        WebDriverWait(driver, 90).until(lambda d: settled(d) and "Archives of reader" in d.page_source)
        watches = sum(len(re.findall(r"^inotify wd:", f.read_text(), re.M))
                      for f in fdinfo.iterdir() if f.is_file())
    finally:
        driver.quit()
    assert watches == 0


def tab(driver, label: str):
    return driver.find_element(By.XPATH, f"//*[@role='tab'][contains(normalize-space(.), '{label}')]")


def test_research_memory_stays_on_its_tab_after_an_action(server):
    _, url, _ = server
    driver = chromium()
    try:
        driver.get(f"{url}/research")
        WebDriverWait(driver, 90).until(lambda d: settled(d) and d.find_elements(By.XPATH, "//*[@role='tab']"))
        tab(driver, "Workspace").click()
        note = WebDriverWait(driver, 30).until(
            lambda d: next(iter(d.find_elements(By.CSS_SELECTOR, "textarea[aria-label=Note]")), None))
        note.send_keys("Bebop came from small New York clubs")
        driver.find_element(By.XPATH, "//button[.//p[text()='Add note']]").click()
        WebDriverWait(driver, 30).until(lambda d: "Bebop came from small New York" in d.page_source and settled(d))
        assert tab(driver, "Workspace").get_attribute("aria-selected") == "true"
        assert "Added the finding." in driver.page_source  # the toast saying what happened
        assert_local(requested_urls(driver), url)
    finally:
        driver.quit()


def open_user(driver, url: str, user_id: str) -> None:
    driver.get(f"{url}/memory")
    field = WebDriverWait(driver, 90).until(lambda d: d.find_element(By.CSS_SELECTOR, "input[aria-label=user_id]"))
    field.send_keys(user_id + "\n")
    WebDriverWait(driver, 30).until(lambda d: settled(d) and d.find_elements(By.XPATH, "//*[@role='tab']"))


def test_personal_graph_is_drawn_centred_when_its_tab_opens(server):
    _, url, _ = server
    driver = chromium()
    try:
        open_user(driver, url, "zhu")
        tab(driver, "Graph").click()
        frame = WebDriverWait(driver, 30).until(
            lambda d: next((f for f in d.find_elements(By.TAG_NAME, "iframe") if f.is_displayed()), None))
        driver.switch_to.frame(frame)
        # Where the drawn nodes sit in the canvas, as fractions of its width and height.
        centre = WebDriverWait(driver, 30).until(lambda d: d.execute_script("""
            if (typeof network === 'undefined' || !network.body.data.nodes.length) return null;
            const canvas = document.querySelector('canvas').getBoundingClientRect();
            const points = Object.values(network.getPositions()).map(p => network.canvasToDOM(p));
            const xs = points.map(p => p.x), ys = points.map(p => p.y);
            return [(Math.min(...xs) + Math.max(...xs)) / 2 / canvas.width,
                    (Math.min(...ys) + Math.max(...ys)) / 2 / canvas.height, canvas.width];"""))
        driver.switch_to.default_content()
        assert centre[2] > 600 and abs(centre[0] - 0.5) < 0.1 and abs(centre[1] - 0.5) < 0.1, centre
        shot(driver, "memory-graph")
        assert_local(requested_urls(driver), url)
    finally:
        driver.quit()


def test_personal_write_queue_shows_the_write_finish_without_a_click(server):
    _, url, _ = server
    driver = chromium()
    try:
        open_user(driver, url, "ann")
        # under load the tabs may be drawn before the message field in the first one
        WebDriverWait(driver, 30).until(lambda d: d.find_element(By.CSS_SELECTOR, "textarea[aria-label=Message]")
                                        ).send_keys("I live in Berlin")
        driver.find_element(By.XPATH, "//button[.//p[text()='Process']]").click()
        WebDriverWait(driver, 30).until(lambda d: "in the background" in d.page_source and settled(d))
        tab(driver, "Write queue").click()
        WebDriverWait(driver, 60).until(lambda d: "pending 0 · done 1 · failed 0" in d.page_source)
        assert "I live in Berlin" in driver.page_source
    finally:
        driver.quit()
