"""A real headless Chromium page on another origin tries to reach the tools: every request is refused.

The same page served from a same-site loopback origin is the control: its requests do reach the tools,
so the refusal comes from the gate, not from the browser blocking them.
"""
import http.server
import threading
import time

import pytest

from testkit.processes import free_port
from test_browser import CHROMIUM, DRIVER, MISSING, webdriver

pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"BROWSER TESTS SKIPPED: {', '.join(MISSING)} missing")

ATTACK = """<!doctype html><title>loading</title><body>
<img src="{api}/tools/list_archives?model_id=m">
<img src="{api}/tools/ask_memory?model_id=m&query=volcanoes&session_id=s1">
<img src="{api}/tools/search_episodic_memory?model_id=m&query=volcanoes">
<script>
const post = fetch("{api}/tools/add_research_note", {{method: "POST", mode: "no-cors",
  headers: {{"Content-Type": "text/plain"}},
  body: JSON.stringify({{model_id: "m", session_id: "s1", kind: "finding", text: "planted by another site"}})}}).catch(() => null);
const images = [...document.images].map(i => i.complete ? null : new Promise(r => {{ i.onload = i.onerror = r; }}));
Promise.all([post, ...images]).then(() => {{ document.title = "done"; }});
</script></body>"""


def _serve_page(host: str, html: str) -> http.server.ThreadingHTTPServer:
    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer((host, free_port()), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu"):
        options.add_argument(flag)
    options.binary_location = CHROMIUM
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(DRIVER))
    yield driver
    driver.quit()


def _visit(driver, page_host: str, api: str) -> None:
    page = _serve_page(page_host, ATTACK.format(api=api))
    try:
        driver.get(f"http://{page_host}:{page.server_address[1]}/")
        deadline = time.monotonic() + 30
        while driver.title != "done" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert driver.title == "done"
        time.sleep(0.5)  # the server logs a call as it finishes
    finally:
        page.shutdown()


def test_a_page_on_another_site_cannot_call_the_tools(browser, tmp_path, embedder):
    from forest import MemoryForest
    from forest.serving.http import ThreadServer

    forest = MemoryForest(data_dir=tmp_path / "store", embedder=embedder)
    server = ThreadServer(forest, port=free_port()).start()
    try:
        _visit(browser, "127.0.0.2", server.url)  # another site: 127.0.0.2 is not 127.0.0.1's site
        assert server.calls.latest() == []

        # Control: the same page from a same-site loopback origin reaches the read-only tool; GET of a
        # tool with side effects is refused (405), so ask_memory never runs, and so is the text/plain
        # POST (415): only a JSON body runs a tool, and a browser sends one from a page on another
        # port only after a CORS preflight, which the server never grants.
        _visit(browser, "127.0.0.1", server.url)
        called = {c["tool"] for c in server.calls.latest()}
        assert called == {"list_archives"}, called
    finally:
        server.stop()
        forest.close()
