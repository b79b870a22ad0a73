"""The Reconcile page in a real headless Chromium: search for two passages, pick them, compare, and
read the verdict as a person sees it. RECONCILE_SCREENSHOT=path also keeps a screenshot there
(docs/reconcile.png is made this way)."""
import os
import shutil

import pytest

from test_browser import chromium, pytestmark, streamlit_app, wait  # noqa: F401  (the skip when no browser)
from test_reconcile_page import AQA, SURVEY

By = pytest.importorskip("selenium.webdriver.common.by").By
TITLE = "Ask the Right Questions: Active Question Reformulation with Reinforcement Learning"


def search_and_pick(driver, side: str, query: str, passage_text: str) -> None:
    box = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, f"input[aria-label='Passage {side}: search the papers']"))
    box.send_keys(query)
    driver.find_element(By.XPATH, f"//button[.//p[text()='Search for passage {side}']]").click()
    option = wait(driver, lambda d: next((label for label in d.find_elements(
        By.XPATH, f"//div[@data-testid='stRadio'][.//*[text()='Passage {side}']]//label")
        if passage_text in label.text), None))
    option.click()


def test_reconcile_page_compares_two_searched_passages_in_the_browser(tmp_path):
    from forest import MemoryForest

    data_dir = tmp_path / "store"
    forest = MemoryForest(data_dir=data_dir, chunk_size=300)
    forest.ingest_text("reader", TITLE, AQA)
    forest.ingest_text("reader", "A Survey of QA Benchmarks", SURVEY)
    forest.close()
    with streamlit_app(data_dir) as (_, url):
        driver = chromium(1400, 1800)
        try:
            driver.get(f"{url}/reconcile")
            wait(driver, lambda d: d.find_elements(By.XPATH, "//*[@role='tab'][contains(., 'Compare two passages')]"))
            driver.find_element(By.XPATH, "//*[@role='tab'][contains(., 'Compare two passages')]").click()
            search_and_pick(driver, "A", "how many question/answer pairs does SearchQA contain", "over 140k")
            search_and_pick(driver, "B", "size of the SearchQA benchmark", "only 40k")
            wait(driver, lambda d: d.find_element(
                By.XPATH, "//button[.//p[text()='Reconcile the two passages']]")).click()
            verdict = wait(driver, lambda d: next((p for p in d.find_elements(By.CSS_SELECTOR, "[data-testid=stMarkdown]")
                                                   if p.text.startswith("They give different numbers")), None))
            assert "over 140k against 40k" in verdict.text and TITLE in verdict.text
            assert "Traceback" not in driver.page_source
            target = os.environ.get("RECONCILE_SCREENSHOT")
            shot = tmp_path / "reconcile.png"
            driver.execute_script("window.scrollTo(0, 0)")
            assert driver.save_screenshot(str(shot)) and shot.read_bytes()[:4] == b"\x89PNG"
            if target:
                shutil.copy(shot, target)
        finally:
            driver.quit()
