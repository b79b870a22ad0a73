"""The workbench as a reading tool, in a real headless Chromium against `streamlit run` on a real
paper: the Forest page's outline and drawing (labels, folds, a click opening a node's detail, the
query overlay, tooltips), citations that open the PDF page with the passage highlighted where
PyMuPDF finds it, and not one request leaving the machine. Screenshots go to tests/screenshots/."""
import base64
import json
import re
import time
from urllib.parse import parse_qs, urlparse

import pymupdf
import pytest

from conftest import ROOT
from test_browser import MISSING, chromium, open_page, requested_urls, streamlit_app, wait

if not MISSING:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"BROWSER TESTS SKIPPED: {', '.join(MISSING)} missing")
PAPER = ROOT / "data" / "samples" / "2001.03131.pdf"
SHOTS = ROOT / "tests" / "screenshots"
LOCAL = {"127.0.0.1", "localhost"}


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    """The sample paper in a fresh store, the workbench on it, and a 1600x1000 Chromium that logs
    every network request."""
    from forest import MemoryForest

    data_dir = tmp_path_factory.mktemp("reading") / "store"
    forest = MemoryForest(data_dir=data_dir)
    archive = forest.ingest_file(PAPER, "reader")
    nodes = forest.tree("reader", archive.id)
    forest.close()
    SHOTS.mkdir(exist_ok=True)
    with streamlit_app(data_dir) as (_, url):
        driver = chromium(1600, 1000, log_network=True)
        try:
            driver.get(url)
            wait(driver, lambda d: "Library" in d.page_source)
            yield driver, nodes, []
        finally:
            driver.quit()


def click_node(driver, node_id: int) -> None:
    canvas = driver.find_element(By.CSS_SELECTOR, "#forest-tree canvas")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", canvas)
    time.sleep(0.5)
    where = driver.execute_script(f"const n = window.memoryForestNetwork; return n.canvasToDOM(n.getPosition({node_id}));")
    size = driver.execute_script("const r = arguments[0].getBoundingClientRect(); return [r.width, r.height];", canvas)
    ActionChains(driver).move_to_element_with_offset(
        canvas, int(where["x"] - size[0] / 2), int(where["y"] - size[1] / 2)).click().perform()


def shown_page(driver, node_id: int) -> tuple[int, pymupdf.Pixmap, list, pymupdf.Matrix]:
    """The page the source view shows for that node: its number, the PNG it displays, the
    rectangles it highlighted (pixels), and what takes a page point to its pixel (the view may
    show only the passage's column, larger)."""
    frame = wait(driver, lambda d: d.execute_script(
        "const f = [...document.querySelectorAll('.forest-page')].pop();"
        "const i = f && f.querySelector('img');"
        "return f && f.dataset.node === arguments[0] && i.complete && i.src.startsWith('data:') && f", str(node_id)))
    page, rects, src, origin, zoom = driver.execute_script(
        "const f = arguments[0]; return [f.dataset.page, f.dataset.rects, f.querySelector('img').src, "
        "f.dataset.origin, f.dataset.zoom];", frame)
    (x, y), zoom = json.loads(origin), float(zoom)
    to_pixels = pymupdf.Matrix(zoom, 0, 0, zoom, -x * zoom, -y * zoom)
    return int(page), pymupdf.Pixmap(base64.b64decode(src.split(",", 1)[1])), json.loads(rects), to_pixels


def yellow_share(image: pymupdf.Pixmap, rect: pymupdf.Rect) -> float:
    points = [(x, y) for x in range(int(rect.x0) + 1, int(rect.x1) - 1, 2)
              for y in range(int(rect.y0) + 1, int(rect.y1) - 1, 2)]
    marked = [p for p in points if (lambda r, g, b: r > 200 and g > 200 and b < 140)(*image.pixel(*p)[:3])]
    return len(marked) / max(len(points), 1)


def line_of(page: pymupdf.Page, text: str) -> pymupdf.Rect | None:
    """Where PyMuPDF's own search finds five consecutive words of `text` once, on one line of the
    page (ligatures such as 'ff' spelled out, so it returns a rectangle per glyph run)."""
    words = text.split()
    for start in range(len(words) // 3, len(words) - 5):
        found = page.search_for(" ".join(words[start:start + 5]), flags=pymupdf.TEXT_DEHYPHENATE)
        if found and max(r.y1 for r in found) - min(r.y0 for r in found) < 14:
            return pymupdf.Rect(min(r.x0 for r in found), min(r.y0 for r in found),
                                max(r.x1 for r in found), max(r.y1 for r in found))
    return None


def assert_highlights(driver, passage, neighbours) -> int:
    """The shown page is yellow where PyMuPDF finds the passage, and not where it finds another
    passage of the same page."""
    number, image, rects, to_pixels = shown_page(driver, passage.id)
    with pymupdf.open(PAPER) as doc:
        page = doc[number - 1]
        target = line_of(page, passage.content)
        others = [r for r in (line_of(page, n.content) for n in neighbours if n.page_start == number
                              and n.page_end == number) if r is not None]
    assert target is not None and rects
    target = target * to_pixels
    assert yellow_share(image, target) > 0.3
    middle = pymupdf.Point((target.x0 + target.x1) / 2, (target.y0 + target.y1) / 2)
    assert any(x0 <= middle.x <= x1 and y0 <= middle.y <= y1 for x0, y0, x1, y1 in rects)   # as the page reports
    shown = [r * to_pixels & pymupdf.Rect(0, 0, image.width, image.height) for r in others]
    other = next(r for r in shown if r.width > 20)   # another passage of the page, in the part shown
    assert yellow_share(image, other) < 0.02
    return number


def test_the_forest_page_reads_like_a_contents_page_and_a_click_opens_a_node(reader):
    driver, nodes, requested = reader
    by_title = {n.title: n for n in nodes if n.title}
    open_page(driver, "Forest")
    drawn = wait(driver, lambda d: d.execute_script(
        "const h = document.querySelector('#forest-tree'); return h && h.dataset.drawn"))
    assert int(drawn) == len(nodes)
    outline = driver.find_element(By.CSS_SELECTOR, ".forest-outline").text
    assert "Offensive Language Detection: A Comparative Analysis" in outline and "pp. 1-6" in outline
    assert "2 Methodology" in outline and "4 Experiments and Discussions" in outline
    legend = driver.find_element(By.CSS_SELECTOR, ".forest-legend").text
    assert "passage" in legend and "search hit" in legend and "the agent's path" in legend
    section = by_title["2 Methodology"]
    deep = next(n for n in nodes if n.is_leaf and n.depth > 2 and n.path.startswith(section.path))
    labels = driver.execute_script("return window.memoryForestView.nodes.get().map(n => n.label)")
    assert "2 Methodology" in labels and any(label.startswith("p. 1 · ") for label in labels)
    assert driver.execute_script(f"return window.memoryForestView.shown({deep.id})") is False  # folded away

    click_node(driver, section.id)   # a click in the drawing: the node's detail, in view, highlighted
    detail = wait(driver, lambda d: next((e for e in d.find_elements(By.CSS_SELECTOR, ".st-key-tree-detail")
                                          if "2 Methodology" in e.text), None))
    # safe_markdown puts a word joiner into a bare address so that it is not made a link
    assert section.citation in detail.text and section.summary[:60] in detail.text.replace("\u2060", "")
    assert driver.execute_script("return arguments[0].getBoundingClientRect().top < window.innerHeight - 200", detail)
    assert driver.execute_script("return window.memoryForestNetwork.getSelectedNodes()") == [section.id]
    assert driver.find_element(By.CSS_SELECTOR, ".forest-outline .forest-selected").text.startswith("2 Methodology")

    tooltip = driver.execute_script(  # hover: the summary in a tooltip that is on screen
        "const n = window.memoryForestNetwork; const p = n.canvasToDOM(n.getPosition(arguments[0]));"
        "const c = document.querySelector('#forest-tree canvas').getBoundingClientRect(); return [p, c.width, c.height]",
        section.id)
    canvas = driver.find_element(By.CSS_SELECTOR, "#forest-tree canvas")
    ActionChains(driver).move_to_element_with_offset(canvas, int(tooltip[0]["x"] - tooltip[1] / 2) + 20,
                                                     int(tooltip[0]["y"] - tooltip[2] / 2)).perform()
    box = wait(driver, lambda d: d.execute_script(
        "const t = document.querySelector('.forest-tip'); if (!t || t.hidden) "
        "return null; const r = t.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom, t.textContent]"), 10)
    assert section.summary[:40] in box[4] and 0 <= box[0] and box[2] <= 1600 and 0 <= box[1] and box[3] <= 1000
    # the pointer leaves the drawing straight from the box (no move over the canvas first): it goes
    ActionChains(driver).move_to_element(driver.find_element(By.CSS_SELECTOR, ".forest-legend")).perform()
    wait(driver, lambda d: d.execute_script("return document.querySelector('.forest-tip').hidden"), 5)
    # the Node box names what was clicked in the drawing
    assert "2 Methodology" in driver.execute_script(
        "return [...document.querySelectorAll('[data-testid=stSelectbox] input')].pop().value")

    # the outline's arrow unfolds the drawing too; a passage chosen there opens as a passage
    parent = next(n for n in nodes if n.id == deep.parent_id)
    driver.execute_script(f"document.querySelector('details[data-id=\"{parent.id}\"]').open = true")
    wait(driver, lambda d: d.execute_script(f"return window.memoryForestView.shown({deep.id})"), 10)
    driver.find_element(By.CSS_SELECTOR, f".forest-entry[data-id='{deep.id}']").click()
    wait(driver, lambda d: f"Passage {deep.id}" in d.find_element(By.CSS_SELECTOR, ".st-key-tree-detail").text)

    driver.find_element(By.XPATH, "//button[.//p[text()='Show on the page']]").click()   # the node's page
    assert assert_highlights(driver, deep, [n for n in nodes if n.is_leaf and n.id != deep.id]) == deep.page_start
    driver.save_screenshot(str(SHOTS / "forest-source.png"))
    # a toast (top right, a few seconds) may lie over the dialog's Close button
    wait(driver, lambda d: not d.find_elements(By.CSS_SELECTOR, "[data-testid=stToast]"))
    driver.find_element(By.CSS_SELECTOR, "[role=dialog] button[aria-label=Close]").click()

    query = driver.find_element(By.CSS_SELECTOR, "input[aria-label='Query overlay']")
    query.send_keys("Which embeddings were used for the tweets?\n")
    wait(driver, lambda d: d.execute_script(
        "return window.memoryForestView && window.memoryForestView.data.nodes.some(n => n.lit)"))
    view = ("const v = window.memoryForestView, n = window.memoryForestNetwork, at = n.getViewPosition();"
            "return [v.nodes.length, n.getScale(), at.x, at.y]")
    driver.find_element(By.CSS_SELECTOR, ".forest-bar button[data-act=fold]").click()
    time.sleep(0.5)
    folded = driver.execute_script(view)
    driver.find_element(By.CSS_SELECTOR, ".forest-bar button[data-act=unfold]").click()
    driver.find_element(By.CSS_SELECTOR, ".forest-bar button[data-act=fit]").click()
    time.sleep(0.5)
    unfolded = driver.execute_script(view)
    assert unfolded[0] == len(nodes)      # every passage drawn (and in view: the Fit test below)
    driver.find_element(By.CSS_SELECTOR, ".forest-bar button[data-act=fold]").click()
    time.sleep(0.5)
    assert driver.execute_script(view) == pytest.approx(folded, abs=1)   # folding goes back to the same view
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(str(SHOTS / "forest-overlay.png"))
    requested += requested_urls(driver)


def replay_to(driver, merge: int, last: int) -> None:
    """Move the merge replay with the keyboard, as a person can, and wait for the page to say so."""
    slider = driver.find_element(By.CSS_SELECTOR, "[data-testid=stSlider] input[type=range]")
    driver.execute_script("arguments[0].focus()", slider)
    slider.send_keys(Keys.END if merge == last else Keys.HOME)
    for _ in range(0 if merge == last else merge):
        slider.send_keys(Keys.ARROW_RIGHT)
    wait(driver, lambda d: f"Merge {merge} of {last} joined" in d.find_element(By.TAG_NAME, "body").text
         and d.execute_script("const v = window.memoryForestView; return v && v.data.key.split(':')[1]") == str(merge))


def test_fit_shows_every_box_unfolded_and_the_detail_column_has_room(reader):
    driver, nodes, _ = reader
    open_page(driver, "Forest")
    wait(driver, lambda d: d.execute_script("const h = document.querySelector('#forest-tree'); return h && h.dataset.drawn"))
    for label in ("Unfold all", "Fit"):
        driver.find_element(By.XPATH, f"//div[@class='forest-bar']/button[text()='{label}']").click()
    outside = driver.execute_script("""
        const v = window.memoryForestView, net = v.network;
        const room = v.holder.getBoundingClientRect();
        return v.nodes.getIds().filter((id) => {
          const b = net.getBoundingBox(id);
          const a = net.canvasToDOM({x: b.left, y: b.top}), z = net.canvasToDOM({x: b.right, y: b.bottom});
          return a.x < -1 || a.y < -1 || z.x > room.width + 1 || z.y > room.height + 1;
        });""")
    assert driver.execute_script("return window.memoryForestView.nodes.length") == len(nodes) and outside == []
    detail = driver.find_element(By.CSS_SELECTOR, ".st-key-tree-detail").rect["width"]
    assert detail >= 330, detail   # a title and a summary read in lines, not in a column of words


def test_a_query_overlay_holds_while_the_merge_replay_moves(reader):
    """Typed query, then the replay dragged back to early merges and to the end: no error on the
    page, the drawing holds exactly the forest after that merge, and the query stays lit."""
    driver, nodes, requested = reader
    last = max(n.merge_order or 0 for n in nodes)
    open_page(driver, "Forest")
    query = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "input[aria-label='Query overlay']"))
    query.send_keys("Which embeddings were used for the tweets?\n")
    wait(driver, lambda d: d.execute_script(
        "return window.memoryForestView && window.memoryForestView.data.nodes.some(n => n.lit)"))
    for merge in (1, 30, last):
        replay_to(driver, merge, last)
        time.sleep(1)
        page = driver.find_element(By.TAG_NAME, "body").text
        assert not driver.find_elements(By.CSS_SELECTOR, "[data-testid=stException]")
        assert "Traceback" not in page and "KeyError" not in page
        data = driver.execute_script("const v = window.memoryForestView; return [v.data.nodes.map(n => [n.id, n.parent, n.lit]),"
                                     " v.nodes.getIds(), window.memoryForestNetwork.getScale()]")
        drawn = {i: (parent, lit) for i, parent, lit in data[0]}
        made = {n.id for n in nodes if n.is_leaf or n.merge_order <= merge}
        assert set(drawn) == made                                   # the forest after that merge, no more
        roots = {n.id for n in nodes if n.id in made and n.parent_id not in made}
        assert {i for i, (parent, _) in drawn.items() if parent is None} == roots
        assert any(lit for _, lit in drawn.values())                 # the query is still lit
        assert data[1] and set(data[1]) <= made and data[2] >= 0.6  # boxes on the canvas, readable
        said = next(c.text for c in driver.find_elements(By.CSS_SELECTOR, "[data-testid=stCaptionContainer]")
                    if "hits (red)" in c.text)
        later = re.search(r"only made at merge (\d+)", said)          # the ancestor, when not made yet
        assert int(later[1]) > merge if later else "(gold)" in said
        driver.save_screenshot(str(SHOTS / f"forest-replay-{merge}.png"))
    requested += requested_urls(driver)


def test_a_citation_opens_its_pdf_page_with_the_passage_highlighted(reader):
    driver, nodes, requested = reader
    by_id = {n.id: n for n in nodes}
    open_page(driver, "Ask")
    question = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "input[aria-label=Question]"))
    question.send_keys(Keys.CONTROL, "a")   # it holds the question of the place: the Forest page's query
    question.send_keys("How are offensive tweets detected?")   # answered from two passages
    # Streamlit can draw the button after the field: on a busy machine it was not there yet
    wait(driver, lambda d: d.find_element(By.XPATH, "//button[.//p[text()='Ask']]")).click()
    links = wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-testid=stMarkdown] a[href^='#cite-']"), 120)
    assert links[0].text == "[1]"
    folded = "//details[.//p[starts-with(text(), 'How the agent got there')]]"

    def unfolded(d) -> bool:
        """The steps, opened: a click again if a redraw of the answer folded them meanwhile."""
        details = d.find_element(By.XPATH, folded)
        if details.get_attribute("open") is None:
            details.find_element(By.TAG_NAME, "summary").click()
            return False
        return "Chosen by the offline policy" in details.text

    wait(driver, unfolded)
    steps = wait(driver, lambda d: [m.text for m in d.find_element(By.XPATH, folded).find_elements(
        By.CSS_SELECTOR, "[data-testid=stMarkdown] p") if m.text.startswith(("1. Opened", "2. Opened"))])
    assert steps and "Chosen by the offline policy" in steps[0] and "scored" in steps[0]

    first = int(links[0].get_attribute("href").rsplit("-", 1)[1])     # the panel opens on citation [1]
    assert f"node {first}" in wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".st-key-ask-source").text)
    cited = [int(a.get_attribute("href").rsplit("-", 1)[1]) for a in links]
    other = next(i for i in cited if i != first)
    link = next(a for a in links if a.get_attribute("href").endswith(f"#cite-{other}"))
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", link)
    link.click()
    wait(driver, lambda d: f"node {other}" in d.find_element(By.CSS_SELECTOR, ".st-key-ask-source").text)
    assert urlparse(driver.current_url).path == "/ask"                  # the same session, no navigation
    assert parse_qs(urlparse(driver.current_url).query)["node"] == [str(other)]   # the passage in view: the place
    number = assert_highlights(driver, by_id[other], [n for n in nodes if n.is_leaf and n.id not in cited])
    assert number == by_id[other].page_start
    driver.save_screenshot(str(SHOTS / "ask-answer-source.png"))

    driver.find_element(By.XPATH, "//button[.//p[text()='Next ▶']]").click()   # page navigation
    wait(driver, lambda d: shown_page(d, other)[0] == number + 1)
    driver.find_element(By.XPATH, "//button[.//p[text()='Back to the passage']]").click()
    wait(driver, lambda d: shown_page(d, other)[0] == number)
    requested += requested_urls(driver)


def test_nothing_was_fetched_from_outside_the_machine(reader):
    driver, _, requested = reader
    requested += requested_urls(driver)
    remote = sorted({url for url in requested if url.startswith(("http", "ws")) and urlparse(url).hostname not in LOCAL})
    assert requested and remote == []
