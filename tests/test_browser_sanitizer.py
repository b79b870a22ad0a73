"""Every workbench page renders document, model and agent text through the one sanitizer
(forest.markdown_safety.safe_markdown), in a real headless Chromium against `streamlit run`: a remote image
pointing at a listening loopback server is planted in every kind of text the pages show (archive
titles, document text and its summaries, answers, research notes of each kind and their sources,
knowledge topics and conclusions, conversation messages, episodic events, personal memories), and
every page is walked, each tab opened and each expander unfolded. Not one request reaches that
server (the Research memory page used to fetch a note's image), while an image the test adds
itself does."""
import time

import pytest

from testkit.topics import topic_text
from test_browser import MISSING, button, chromium, settled, streamlit_app, wait
from test_browser_markdown import Beacon

if not MISSING:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"BROWSER TESTS SKIPPED: {', '.join(MISSING)} missing")

MODEL, SESSION, USER = "reader", "default", "ann"


def image(beacon: Beacon, where: str) -> str:
    return f"![x]({beacon.url}/{where}.png)"


def plant(data_dir, beacon: Beacon) -> None:
    """A store whose every kind of text holds a remote image, each naming where it was put."""
    from forest import MemoryForest

    forest = MemoryForest(data_dir=data_dir, chunk_size=300)
    try:
        forest.ingest_text(MODEL, f"Bebop notes {image(beacon, 'archive-title')}",
                           f"## Jazz {image(beacon, 'heading')}\n\n{topic_text('jazz')} {image(beacon, 'passage')}\n\n"
                           f"## Volcanoes\n\n{image(beacon, 'passage-2')} {topic_text('volcanoes')}", threshold=0.0)
        research = forest.research
        for kind in ("finding", "constraint", "focus"):
            research.add_note(MODEL, SESSION, kind, f"Bebop {kind} {image(beacon, kind)}",
                              source=f"liner notes {image(beacon, kind + '-source')}")
        research.update_knowledge(MODEL, f"bebop {image(beacon, 'knowledge-topic')}",
                                  f"Bebop is fast {image(beacon, 'knowledge-conclusion')}", SESSION)
        research.add_message(MODEL, SESSION, "user", f"Who played bebop? {image(beacon, 'message-user')}")
        research.add_message(MODEL, SESSION, "assistant", f"Charlie Parker {image(beacon, 'message-assistant')}")
        research.record(MODEL, SESSION, "observation", f"Heard bebop {image(beacon, 'episodic-event')}")
        reply = forest.personal.memory_tool("add", USER, text=f"I love bebop {image(beacon, 'memory')}").to_dict()
        assert reply["status"] == "success", reply
    finally:
        forest.close()


def unfold_everything(driver) -> str:
    """Open each tab in turn and, in each, every folded expander (their content is drawn then);
    the page's HTML with each tab open."""
    seen = [driver.page_source]
    for n in range(len(driver.find_elements(By.XPATH, "//*[@role='tab']"))):
        try:
            driver.find_elements(By.XPATH, "//*[@role='tab']")[n].click()
        except (IndexError, StaleElementReferenceException):
            continue
        wait(driver, settled)
        for summary in driver.find_elements(By.XPATH, "//details[not(@open)]/summary"):
            try:
                if summary.is_displayed():
                    summary.click()
            except StaleElementReferenceException:
                pass
        wait(driver, settled)
        seen.append(driver.page_source)
    return "".join(seen)


def ask(driver) -> None:
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "input[aria-label=Question]")).send_keys(
        "Who played bebop?")
    button(driver, "Ask").click()
    wait(driver, lambda d: "Answered by" in d.page_source and settled(d), 120)


def compare(driver) -> None:
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "textarea[aria-label='Questions, one per line']")
         ).send_keys("Who played bebop?")
    button(driver, "Compare").click()
    wait(driver, lambda d: "Click a citation to see the passage" in d.page_source and settled(d), 120)


def open_user(driver) -> None:
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "input[aria-label=user_id]")).send_keys(USER + "\n")
    wait(driver, lambda d: settled(d) and d.find_elements(By.XPATH, "//*[@role='tab']"))


# URL path, what to do there before every tab and expander is opened, and text the page must show
# (the planted text is there to read, as written).
PAGES = [("library", None, "Bebop notes"), ("tree", None, "Jazz"), ("ask", ask, "Answered by"),
         ("compare", compare, "Who played bebop?"), ("research", None, "Bebop finding"),
         ("reconcile", None, "Reconcile"), ("memory", open_user, "I love bebop"), ("server", None, "Server")]


def test_no_page_loads_a_planted_remote_image(tmp_path):
    beacon = Beacon()
    data_dir = tmp_path / "store"
    plant(data_dir, beacon)
    hits: dict[str, list[str]] = {}
    try:
        with streamlit_app(data_dir, FOREST_CORE_FILE=str(tmp_path / "CORE.md")) as (_, url):
            driver = chromium()
            try:
                for path, action, shown in PAGES:
                    before = len(beacon.paths)
                    driver.get(f"{url}/{path}?model_id={MODEL}")
                    wait(driver, lambda d: settled(d) and d.find_elements(By.CSS_SELECTOR, "[data-testid=stHeading]"),
                         90)
                    if action:
                        action(driver)
                    # a page can rerun once after its first draw (the model_id from the URL taking
                    # hold), so what it shows is waited for, unfolding again, not read once
                    wait(driver, lambda d: shown in unfold_everything(d), 90, f"/{path} does not show {shown!r}")
                    time.sleep(1)  # any image the last render asked for has been requested by now
                    hits[path] = beacon.paths[before:]
                    assert not driver.find_elements(By.CSS_SELECTOR, "[data-testid=stException]"), path
                assert {page: paths for page, paths in hits.items() if paths} == {}
                assert beacon.control(driver) == ["/control.png"]
            finally:
                driver.quit()
    finally:
        beacon.shutdown()
