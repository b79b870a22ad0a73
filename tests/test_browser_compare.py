"""The Compare page in a real headless Chromium against `streamlit run`: three papers (a real PDF,
a one-page PDF and a text) compared on two questions, a click on a cell's citation opening the PDF page with the
passage highlighted in a dialog, and not one request leaving the machine."""
import json
from urllib.parse import urlparse

import pymupdf
import pytest

from conftest import ROOT
from testkit.topics import topic_text
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
    volcanoes = data_dir.parent / "volcanoes.pdf"
    with pymupdf.open() as doc:
        doc.new_page().insert_textbox(pymupdf.Rect(72, 72, 540, 770), "Volcanoes\n\n" + topic_text("volcanoes"),
                                      fontsize=11)
        doc.save(volcanoes)
    forest.ingest_file(volcanoes, "reader", name="volcano notes")
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
    assert set(rows) == {label, "jazz notes", "volcano notes"}   # a row per paper, a column per question
    jazz = [td.text for td in rows["jazz notes"].find_elements(By.TAG_NAME, "td")]
    assert jazz[1] == "not found" and "Parker" in jazz[2]
    assert [td.text for td in rows["volcano notes"].find_elements(By.TAG_NAME, "td")][1:] == ["not found"] * 2
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
