"""The Compare page in a real headless Chromium against `streamlit run`: a real PDF and a text
paper compared on two questions, a click on a cell's citation opening the PDF page with the
passage highlighted in a dialog, and not one request leaving the machine."""
import json
from urllib.parse import urlparse

import pytest

from conftest import ROOT, topic_text
from test_browser import MISSING, chromium, open_page, requested_urls, streamlit_app, wait

if not MISSING:
    from selenium.webdriver.common.by import By

pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"BROWSER TESTS SKIPPED: {', '.join(MISSING)} missing")
PAPER = ROOT / "data" / "samples" / "2001.03131.pdf"
QUESTIONS = ("How are offensive tweets detected?", "Who played bebop?")


@pytest.fixture(scope="module")
def comparing(tmp_path_factory):
    from forest import MemoryForest

    data_dir = tmp_path_factory.mktemp("compare") / "store"
    forest = MemoryForest(data_dir=data_dir)
    paper = forest.ingest_file(PAPER, "reader")
    forest.ingest_text("reader", "jazz notes", "## Jazz\n\n" + topic_text("jazz"), threshold=0.0)
    forest.close()
    with streamlit_app(data_dir) as (_, url):
        driver = chromium(1600, 1000, log_network=True)
        try:
            driver.get(url)
            wait(driver, lambda d: "Library" in d.page_source)
            yield driver, paper
        finally:
            driver.quit()


def test_a_cells_citation_opens_its_pdf_page_highlighted(comparing):
    driver, paper = comparing
    open_page(driver, "Compare")
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "textarea[aria-label='Questions, one per line']")).send_keys(
        "\n".join(QUESTIONS))
    wait(driver, lambda d: d.find_element(By.XPATH, "//button[.//p[text()='Compare']]")).click()
    table = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "[data-testid=stMarkdown] table"), 120)
    headers = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    assert headers == ["Paper", *QUESTIONS]
    rows = {r.find_elements(By.TAG_NAME, "td")[0].text: r for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")}
    label = paper.cite_as or paper.name                               # the row named as the paper is cited
    assert set(rows) == {label, "jazz notes"}
    jazz = [td.text for td in rows["jazz notes"].find_elements(By.TAG_NAME, "td")]
    assert jazz[1] == "not found" and "Parker" in jazz[2]
    link = rows[label].find_elements(By.TAG_NAME, "td")[1].find_element(By.CSS_SELECTOR, "a[href^='#cite-']")
    assert link.text.startswith("p. ")
    node_id = link.get_attribute("href").rsplit("-", 1)[1]
    link.click()
    frame = wait(driver, lambda d: d.execute_script(
        "const f = document.querySelector('[role=dialog] .forest-page');"
        "const i = f && f.querySelector('img');"
        "return f && f.dataset.node === arguments[0] && i.complete && i.src.startsWith('data:') && f", node_id), 120)
    assert json.loads(frame.get_attribute("data-rects"))            # the passage's lines, highlighted
    assert urlparse(driver.current_url).path == "/compare"           # the same session, no navigation
    assert {b.text for b in driver.find_elements(By.CSS_SELECTOR, "[data-testid=stDownloadButton] button")} >= {
        "Download CSV", "Download Markdown"}
    assert {urlparse(u).hostname for u in requested_urls(driver) if u.startswith(("http", "ws"))} <= {"127.0.0.1",
                                                                                                      "localhost"}
