"""The workbench along a person's own paths, in a real headless Chromium against `streamlit run`:
a paper uploaded through the Library's file picker is built and an Ask citation opens it on its
page; a delete confirmation closes and is never offered for another archive; a page that fails
shows one message and no traceback; Chinese and emoji labels are drawn with real glyphs."""
import sqlite3
from urllib.parse import urlparse

import pytest

from conftest import SHARED_EVAL
from test_browser import MISSING, button, choose, chromium, open_page, selectbox, settled, streamlit_app, wait
from test_browser_reading import PAPER, assert_highlights

if not MISSING:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"BROWSER TESTS SKIPPED: {', '.join(MISSING)} missing")
SHARED_PDFS = SHARED_EVAL / "pdfs"


@pytest.fixture(scope="module")
def shelf(tmp_path_factory):
    """A store with three small archives of model_id 'shelf', a user with memories in Chinese and a
    paper asked about in a research session (model_id 'scholar'), the workbench on it, and a browser."""
    from testkit.topics import topic_text
    from forest import MemoryForest

    data_dir = tmp_path_factory.mktemp("workbench") / "store"
    forest = MemoryForest(data_dir=data_dir, chunk_size=300)
    archives = [forest.ingest_text("shelf", name, topic_text(name)) for name in ("jazz", "volcanoes", "photosynthesis")]
    forest.personal.memory_tool("add", "zhu", text=["灿灿是小朱的女儿", "灿灿还有一个弟弟，叫帅帅"])
    forest.ingest_file(PAPER, "scholar")
    forest.ask_in_session("scholar", "default", "How many tweets were collected?")
    forest.close()
    with streamlit_app(data_dir) as (_, url):
        driver = chromium(1600, 1000)
        try:
            driver.get(url)
            wait(driver, lambda d: "Archives of" in d.page_source and settled(d))
            yield driver, url, data_dir, archives
        finally:
            driver.quit()


def offered(driver) -> list[str]:
    """The delete confirmations on screen: the "Yes, ..." buttons a click would act on."""
    return [b.text for b in driver.find_elements(By.XPATH, "//button[.//p[starts-with(text(), 'Yes, delete')]]")
            if b.is_displayed()]


def use_model_id(driver, model_id: str) -> None:
    """Name a new model_id in the sidebar, as a person does on a fresh store."""
    choose(driver, "model_id", "➕ New model_id…")
    field = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "input[aria-label='Name of the new model_id']"))
    field.send_keys(model_id)
    button(driver, "Create").click()
    wait(driver, lambda d: f"Archives of {model_id}" in d.page_source and settled(d))


def test_a_pdf_uploaded_through_the_library_opens_on_its_page_from_an_ask_citation(shelf):
    driver, _, data_dir, _ = shelf
    open_page(driver, "Library")
    use_model_id(driver, "reader")
    assert "model_id 'reader' is new and has no archives yet" in driver.page_source
    picker = driver.find_element(By.CSS_SELECTOR, "[data-testid=stFileUploader] input[type=file]")
    picker.send_keys(str(PAPER))
    wait(driver, lambda d: PAPER.name in d.find_element(By.CSS_SELECTOR, "[data-testid=stFileUploader]").text)
    button(driver, "Ingest").click()
    banner = wait(driver, lambda d: next((e.text for e in d.find_elements(By.CSS_SELECTOR, "[data-testid=stAlert]")
                                          if PAPER.name in e.text), None), 600)   # its build, done or failed
    assert "is ready" in banner, banner

    open_page(driver, "Ask")
    question = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "input[aria-label=Question]"))
    question.send_keys("How many tweets were collected?")
    question.send_keys(Keys.ENTER)
    # The Ask page answers in one go or after "Run to answer": either way, citations come.
    links = wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-testid=stMarkdown] a[href^='#cite-']")
                 or [b.click() for b in d.find_elements(By.XPATH, "//button[.//p[text()='Run to answer']]")
                     if b.is_enabled()] and None, 180)
    cited = int(links[-1].get_attribute("href").rsplit("-", 1)[1])
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", links[-1])
    links[-1].click()

    def click_again(d) -> None:
        """A click that landed while the page was still being redrawn went to a link that is gone."""
        for link in d.find_elements(By.CSS_SELECTOR, f"[data-testid=stMarkdown] a[href='#cite-{cited}']")[-1:]:
            d.execute_script("arguments[0].click();", link)

    panel = wait(driver, lambda d: next((e for e in d.find_elements(By.CSS_SELECTOR, ".st-key-ask-source")
                                         if f"node {cited}" in e.text), None) or click_again(d))
    assert "not in this store" not in panel.text

    from forest import MemoryForest   # the store the app wrote, read as it is now

    store = MemoryForest(data_dir=data_dir)
    uploaded = store.archives("reader")[0]
    nodes = store.tree("reader", uploaded.id)
    store.close()
    entry = uploaded.settings["documents"][0]
    assert (data_dir / "sources" / entry["file"]).read_bytes() == PAPER.read_bytes()   # kept in the store
    assert uploaded.source is None and entry["source"] is None                        # no temporary path
    passage = next(n for n in nodes if n.id == cited)
    page = assert_highlights(driver, passage, [n for n in nodes if n.is_leaf and n.id != cited])
    assert page == passage.page_start
    # named and cited from its own first page, not from its file name
    assert uploaded.name == "Offensive Language Detection: A Comparative Analysis" and uploaded.cite_as == "T et al. (2020)"


def test_a_paper_uploaded_then_met_in_a_bib_and_a_folder_is_one_archive(shelf, tmp_path):
    """The upload above, then a .bib whose `file` is the same PDF (its metadata wins), then a folder
    holding it and another paper (the other named and cited from its own first page)."""
    from forest import MemoryForest

    driver, _, data_dir, _ = shelf
    other = SHARED_PDFS / "1810.08699.pdf"
    if not other.exists():
        pytest.skip("shared/eval is not beside the project")
    library = tmp_path / "library"
    library.mkdir()
    (library / PAPER.name).write_bytes(PAPER.read_bytes())
    (library / other.name).write_bytes(other.read_bytes())
    bib = tmp_path / "refs.bib"
    bib.write_text("@inproceedings{vyshnav2020, author = {M T, Vyshnav and Kumar S, Sachin}, year = {2020},\n"
                   "  title = {Offensive Language Detection: A Comparative Analysis},\n"
                   f"  booktitle = {{Proc. of a Workshop}}, file = {{library/{PAPER.name}}}}}\n", encoding="utf-8")
    open_page(driver, "Library")
    use_model_id(driver, "reader")
    for source, said in ((bib, "1 updated"), (library, "1 imported, 1 unchanged")):
        importer = wait(driver, lambda d: d.find_element(
            By.XPATH, "//details[.//summary[contains(., 'Import a library')]]"))
        if importer.get_attribute("open") is None:
            importer.find_element(By.TAG_NAME, "summary").click()
        path = wait(driver, lambda d: next((e for e in d.find_elements(By.CSS_SELECTOR, "input[aria-label=Path]")
                                            if e.is_displayed()), None))
        path.send_keys(Keys.CONTROL, "a")
        path.send_keys(str(source), Keys.TAB)
        button(driver, "Import library").click()
        banner = wait(driver, lambda d, n=source.name: next((e.text for e in d.find_elements(
            By.CSS_SELECTOR, "[data-testid=stAlert]") if e.text.startswith(f"{n}: ")), None), 600)
        assert banner == f"{source.name}: {said}", banner
        button(driver, "Clear these messages").click()
    store = MemoryForest(data_dir=data_dir)
    papers = {a.name: a for a in store.archives("reader")}
    store.close()
    assert len(papers) == 2   # the upload, once; and the folder's other paper
    uploaded = papers["Offensive Language Detection: A Comparative Analysis"]
    assert uploaded.cite_as == "M T and Kumar S (2020)" and uploaded.library["venue"] == "Proc. of a Workshop"
    assert papers["pioNER: Datasets and Baselines for Armenian Named Entity Recognition"].cite_as == \
        "Ghukasyan et al. (2018)"


def test_a_delete_confirmation_closes_and_never_offers_the_next_archive(shelf):
    driver, _, data_dir, archives = shelf
    open_page(driver, "Library")
    wait(driver, lambda d: "Archives of" in d.page_source and settled(d))
    if "Archives of shelf" not in driver.page_source:
        choose(driver, "model_id", "shelf")
    assert offered(driver) == []                   # nothing chosen, nothing to confirm
    last = archives[-1]
    choose(driver, "Archive", f"{last.id}: {last.name}")
    button(driver, f"Delete archive {last.id}").click()
    button(driver, f"Yes, delete archive {last.id}").click()
    wait(driver, lambda d: f"Deleted archive {last.id}" in d.page_source and settled(d))
    wait(driver, lambda d: f"Yes, delete archive {last.id}" not in offered(d))
    assert offered(driver) == []                   # the popover closed, and nothing else is offered
    assert selectbox(driver, "Archive").get_attribute("value") == ""
    assert not driver.find_elements(By.XPATH, f"//button[.//p[text()='Delete archive {archives[-2].id}']]")
    from forest import MemoryForest

    store = MemoryForest(data_dir=data_dir)
    assert [a.id for a in store.archives("shelf")] == [a.id for a in archives[:-1]]   # the chosen one only
    store.close()

    # A confirmation opened for one archive is not the next one's when the choice changes.
    first, second = archives[0], archives[1]
    choose(driver, "Archive", f"{first.id}: {first.name}")
    button(driver, f"Delete archive {first.id}").click()
    button(driver, f"Yes, delete archive {first.id}")
    driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    choose(driver, "Archive", f"{second.id}: {second.name}")
    button(driver, f"Delete archive {second.id}")   # the run for the new choice is drawn
    wait(driver, settled)
    assert offered(driver) == []


def test_a_research_memory_citation_names_the_paper_and_opens_its_page(shelf):
    driver, _, data_dir, _ = shelf
    open_page(driver, "Research memory")
    current = wait(driver, lambda d: settled(d) and "Briefing" in d.page_source
                   and selectbox(d, "model_id").get_attribute("value"))
    if current != "scholar":
        choose(driver, "model_id", "scholar")
    driver.find_element(By.XPATH, "//*[@role='tab'][contains(normalize-space(.), 'Conversation')]").click()
    links = wait(driver, lambda d: [a for a in d.find_elements(By.CSS_SELECTOR, "[data-testid=stChatMessage] "
                                                                               "a[href^='#cite-']") if a.is_displayed()])
    assert all(a.text.startswith("T et al. (2020), p") for a in links)   # read off the paper's first page
    cited = int(links[0].get_attribute("href").rsplit("-", 1)[1])
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", links[0])
    links[0].click()
    dialog = wait(driver, lambda d: next((e for e in d.find_elements(By.CSS_SELECTOR, "[role=dialog]")
                                          if f"node {cited}" in e.text), None))
    assert "not in this store" not in dialog.text
    from forest import MemoryForest

    store = MemoryForest(data_dir=data_dir)
    nodes = store.tree("scholar", store.archives("scholar")[0].id)
    store.close()
    passage = next(n for n in nodes if n.id == cited)
    assert assert_highlights(driver, passage, [n for n in nodes if n.is_leaf and n.id != cited]) == passage.page_start
    assert urlparse(driver.current_url).path == "/research"     # the same session, no navigation
    # a toast (top right, a few seconds) may lie over the dialog's Close button, as it would for a person
    wait(driver, lambda d: not d.find_elements(By.CSS_SELECTOR, "[data-testid=stToast]"))
    driver.find_element(By.CSS_SELECTOR, "[role=dialog] button[aria-label=Close]").click()
    wait(driver, lambda d: not d.find_elements(By.CSS_SELECTOR, "[role=dialog]"))


def glyphs(driver, element, text: str) -> dict[str, tuple[int, int]]:
    """Each character of `text` drawn in the element's own font on a canvas: a hash of its pixels
    and how many of them are coloured. A missing font draws every character as the same box."""
    return driver.execute_script("""
        const style = getComputedStyle(arguments[0]);
        const canvas = document.createElement('canvas'); canvas.width = canvas.height = 64;
        const g = canvas.getContext('2d', {willReadFrequently: true});
        const out = {};
        for (const ch of arguments[1]) {
          g.clearRect(0, 0, 64, 64);
          g.font = `40px ${style.fontFamily}`;
          g.fillStyle = 'black';
          g.fillText(ch, 4, 48);
          const px = g.getImageData(0, 0, 64, 64).data;
          let hash = 0, coloured = 0;
          for (let i = 0; i < px.length; i += 4) {
            if (!px[i + 3]) continue;
            hash = (hash * 31 + i + px[i + 3]) | 0;
            if (Math.max(px[i], px[i + 1], px[i + 2]) - Math.min(px[i], px[i + 1], px[i + 2]) > 40) coloured++;
          }
          out[ch] = [hash, coloured];
        }
        return out;""", element, text)


def test_chinese_and_emoji_labels_are_drawn_with_real_glyphs(shelf):
    driver, _, _, _ = shelf
    open_page(driver, "Personal memory")
    field = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "input[aria-label=user_id]"))
    field.send_keys("zhu\n")
    wait(driver, lambda d: d.find_elements(By.XPATH, "//*[@role='tab']") and settled(d))
    driver.find_element(By.XPATH, "//*[@role='tab'][contains(normalize-space(.), 'Memories')]").click()
    label = wait(driver, lambda d: next((e for e in d.find_elements(By.CSS_SELECTOR, "[data-testid=stExpander] summary")
                                         if "灿灿是小朱的女儿" in e.text), None))
    drawn = glyphs(driver, label, "灿是朱女儿\ue000")   # U+E000 has no glyph anywhere: the box
    box = drawn.pop("\ue000")[0]
    assert len({shape for shape, _ in drawn.values()} - {box}) == 5, drawn   # five characters, five shapes
    open_page(driver, "Library")
    sidebar = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "[data-testid=stSidebar]"))
    emoji = glyphs(driver, sidebar, "➕✅🌳\ue000")            # the new-model_id option, the toasts' icon, the app's
    assert emoji["➕"][0] != emoji["\ue000"][0]
    assert emoji["✅"][1] > 50 and emoji["🌳"][1] > 50, emoji   # colour emoji


def test_a_page_that_fails_shows_one_message_and_no_traceback(shelf):
    """A damaged store (a table gone under the running app) fails the Research memory page."""
    driver, _, data_dir, _ = shelf
    with sqlite3.connect(data_dir / "forest.sqlite3") as db:
        db.execute("ALTER TABLE workspace_items RENAME TO workspace_items_away")
    try:
        open_page(driver, "Research memory")
        alert = wait(driver, lambda d: next((e for e in d.find_elements(By.CSS_SELECTOR, "[data-testid=stAlert]")
                                             if "stopped" in e.text), None))
        assert "The Research memory page stopped on an unexpected error (OperationalError)" in alert.text
        shown = driver.find_element(By.CSS_SELECTOR, "[data-testid=stMain]").text
        assert "Traceback" not in shown and "File \"" not in shown and "workspace_items" not in shown
        assert not driver.find_elements(By.CSS_SELECTOR, "[data-testid=stException]")
        assert "Ask Google" not in driver.page_source and "Ask ChatGPT" not in driver.page_source
        open_page(driver, "Library")                # the rest of the app still works
        wait(driver, lambda d: "Archives of" in d.page_source and settled(d))
    finally:
        with sqlite3.connect(data_dir / "forest.sqlite3") as db:
            db.execute("ALTER TABLE workspace_items_away RENAME TO workspace_items")
