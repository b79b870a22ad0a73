"""Untrusted Markdown in a real headless Chromium: a document whose text holds images (inline, by
reference, raw HTML, in a formula) and links pointing at a listening loopback server is read on
the Ask, Forest and Reconcile pages, which render document text and answers as Markdown.
Not one request reaches that server (it used to get the image requests: a document or a model
could make the page call any address), while an image the test adds itself does reach it."""
import http.server
import threading
import time

import pytest

from testkit.processes import free_port
from test_browser import MISSING, button, chromium, open_page, streamlit_app, wait

if not MISSING:
    from selenium.webdriver.common.by import By

pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"BROWSER TESTS SKIPPED: {', '.join(MISSING)} missing")

DOCUMENT = """## Bebop

Charlie Parker played bebop in New York ![beacon]({beacon}/inline.png) with Dizzy Gillespie.

Bebop musicians played fast tempos ![chart][fig] in small clubs of New York.

[fig]: {beacon}/reference.png

Bebop in New York was fast <img src="{beacon}/html.png"> and harmonically complex, \
as [the liner notes]({beacon}/link) and <{beacon}/autolink> say.

Bebop players in New York wrote $\\includegraphics{{{beacon}/katex.png}}$ new tunes over old chord changes.
"""


class Beacon(http.server.ThreadingHTTPServer):
    """A loopback server that records every request it gets."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        beacon = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                beacon.paths.append(self.path)
                self.send_response(404)
                self.end_headers()

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", free_port()), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def control(self, driver) -> list[str]:
        """The paths requested once the page is given an image of this server itself and its request
        came (10 s at most): the control that makes silence before it mean no request."""
        driver.execute_script(f"const i = new Image(); i.src = '{self.url}/control.png';"
                              "document.body.appendChild(i);")
        deadline = time.monotonic() + 10
        while "/control.png" not in self.paths and time.monotonic() < deadline:
            time.sleep(0.1)
        return self.paths


def test_document_and_answer_markdown_load_nothing_from_elsewhere(tmp_path):
    from forest import MemoryForest

    beacon = Beacon()
    data_dir = tmp_path / "store"
    forest = MemoryForest(data_dir=data_dir, chunk_size=120)
    forest.ingest_text("reader", "bebop notes", DOCUMENT.format(beacon=beacon.url))
    forest.close()
    try:
        with streamlit_app(data_dir) as (_, url):
            driver = chromium()
            try:
                driver.get(url)
                wait(driver, lambda d: "Library" in d.page_source)

                open_page(driver, "Ask")  # the offline answer quotes the passages' sentences
                wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "input[aria-label=Question]")).send_keys(
                    "Who played bebop in New York?")
                button(driver, "Ask").click()
                wait(driver, lambda d: "Sources" in d.page_source and "Answered by" in d.page_source)
                answer = driver.page_source

                open_page(driver, "Forest")  # the selected node's summary
                wait(driver, lambda d: "summary by" in d.page_source)

                open_page(driver, "Reconcile")  # passages found for a query, then side by side
                wait(driver, lambda d: d.find_elements(By.XPATH, "//*[@role='tab'][contains(., 'Compare two passages')]")
                     )[0].click()
                for side in ("A", "B"):
                    box = wait(driver, lambda d: d.find_element(
                        By.CSS_SELECTOR, f"input[aria-label='Passage {side}: search the papers']"))
                    box.send_keys("bebop in New York")
                    button(driver, f"Search for passage {side}").click()
                    options = wait(driver, lambda d: d.find_elements(
                        By.XPATH, f"//*[@role='radiogroup'][@aria-label='Passage {side}']//label"))
                options[1].click()  # B: another passage than A's first
                button(driver, "Reconcile the two passages").click()
                wait(driver, lambda d: "Verdict" in d.page_source)
                for expander in driver.find_elements(By.XPATH, "//summary[contains(., 'Whole passage')]"):
                    expander.click()
                time.sleep(2)  # any image the last render asked for has been requested by now

                assert beacon.paths == []
                # The text is there to read, as written, not dropped: and nothing is a remote image or link.
                assert "inline.png" in answer and "Charlie Parker" in answer
                assert not driver.find_elements(By.CSS_SELECTOR, f"img[src^='{beacon.url}']")
                links = [a.get_attribute("href") for a in driver.find_elements(By.TAG_NAME, "a")]
                assert [link for link in links if link and not link.startswith(url)] == []
                assert beacon.control(driver) == ["/control.png"]
            finally:
                driver.quit()
    finally:
        beacon.shutdown()
