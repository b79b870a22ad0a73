"""A researcher's place in the workbench, in a real headless Chromium against `streamlit run`: the
model_id and the archive survive page switches, a reload and the browser's Back; a citation's link,
copied from its source panel, opens its passage in a fresh page; a model_id the store does not hold is said, never swapped for another; the Ask
page's step-through takes three steps, one of them chosen by the person, and draws the path."""
import re
import shutil
from urllib.parse import parse_qs, urlparse

import pytest

from testkit.topics import topic_text
from test_browser import MISSING, button, choose, chromium, open_page, selected, settled, streamlit_app, wait

if not MISSING:
    from selenium.webdriver.common.by import By

pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"BROWSER TESTS SKIPPED: {', '.join(MISSING)} missing")


@pytest.fixture(scope="module")
def library(tmp_path_factory, request):
    """model_id 'm': the AQA paper (the suite's shared 15-page store) and a volcano note; 'demo': a
    jazz note, first in the list, the one a fresh visit opens on. The workbench on it."""
    from forest import MemoryForest

    data_dir = tmp_path_factory.mktemp("place") / "store"
    shutil.copytree(request.getfixturevalue("aqa_store"), data_dir)
    forest = MemoryForest(data_dir=data_dir)
    volcanoes = forest.ingest_text("m", "volcano notes", "## Volcanoes\n\n" + topic_text("volcanoes"), chunk_size=300)
    forest.ingest_text("demo", "jazz notes", "## Jazz\n\n" + topic_text("jazz"), chunk_size=300)
    paper = next(a for a in forest.archives("m") if a.id != volcanoes.id)
    forest.close()
    with streamlit_app(data_dir) as (_, url):
        yield url, paper, volcanoes


@pytest.fixture
def driver():
    """A fresh browser: a new session, which knows only what the URL says."""
    browser = chromium(1600, 1000)
    yield browser
    browser.quit()


def query(driver) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(driver.current_url).query).items()}


def on_page(driver, header: str) -> None:
    wait(driver, lambda d: settled(d) and header in [h.text for h in d.find_elements(
        By.CSS_SELECTOR, "[data-testid=stHeading] h2")], 90)


def test_the_model_id_and_archive_survive_page_switches_a_reload_and_back(library, driver):
    url, _, volcanoes = library
    driver.get(f"{url}/library")
    on_page(driver, "Library")
    wait(driver, lambda d: selected(d, "model_id") == "demo")
    assert query(driver)["model_id"] == "demo"
    choose(driver, "model_id", "m")
    assert query(driver)["model_id"] == "m"
    open_page(driver, "Forest")
    on_page(driver, "Forest")
    choose(driver, "Archive", f"{volcanoes.id}: volcano notes")
    assert query(driver)["archive"] == str(volcanoes.id)
    for title in ("Ask", "Research memory"):
        open_page(driver, title)
        on_page(driver, title)
        assert selected(driver, "model_id") == "m", title
        assert query(driver)["model_id"] == "m" and query(driver)["archive"] == str(volcanoes.id), title
    driver.refresh()
    on_page(driver, "Research memory")
    assert selected(driver, "model_id") == "m" and query(driver)["archive"] == str(volcanoes.id)
    open_page(driver, "Forest")
    on_page(driver, "Forest")
    assert selected(driver, "Archive").startswith(f"{volcanoes.id}: volcano notes")
    driver.back()   # to the Research memory page, in the same place
    on_page(driver, "Research memory")
    assert selected(driver, "model_id") == "m" and query(driver)["archive"] == str(volcanoes.id)


def test_a_citations_link_opens_its_passage_and_an_unknown_model_id_is_said(library, driver):
    url, paper, _ = library
    driver.get(f"{url}/ask?model_id=m&q=How+many+question%2Fanswer+pairs+does+SearchQA+contain%3F")
    on_page(driver, "Ask")   # a link's question is answered again (offline)
    panel = wait(driver, lambda d: next(iter(d.find_elements(By.CSS_SELECTOR, ".st-key-ask-source")), None), 120)
    cited = int(re.search(r"node (\d+)", panel.text).group(1))
    panel.find_element(By.XPATH, ".//button[.//p[contains(., 'Link')]]").click()
    link = wait(driver, lambda d: next((c.text for c in d.find_elements(By.CSS_SELECTOR, "[data-testid=stCode] code")
                                        if "/tree?" in c.text), None))
    assert link == f"{url}/tree?model_id=m&archive={paper.id}&node={cited}"
    driver.get(link)   # the link copied, opened in a fresh page: the passage, chosen and in view
    on_page(driver, "Forest")
    wait(driver, lambda d: d.execute_script("return window.memoryForestView && window.memoryForestView.selected")
         == cited)
    assert f"node {cited}" in driver.find_element(By.CSS_SELECTOR, ".st-key-tree-detail").text
    assert selected(driver, "Archive").startswith(f"{paper.id}:")
    driver.get(f"{url}/ask?model_id=nobody")
    on_page(driver, "Ask")
    page = driver.find_element(By.CSS_SELECTOR, "[data-testid=stMain]").text
    assert "This store has no model_id 'nobody'" in page and "Nothing was switched for you" in page
    assert selected(driver, "model_id") == ""
    assert not driver.find_elements(By.CSS_SELECTOR, "input[aria-label=Question]")   # no question to the wrong forest
    driver.get(f"{url}/ask?model_id=" + "bad%20name/../%3Cx%3E")
    on_page(driver, "Ask")
    assert "cannot be" in driver.find_element(By.CSS_SELECTOR, "[data-testid=stMain]").text


def test_stepping_through_three_steps_with_one_chosen_by_hand_draws_the_path(library, driver):
    url, paper, _ = library
    driver.get(f"{url}/ask?model_id=m")
    on_page(driver, "Ask")
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "input[aria-label=Question]")).send_keys(
        "How many question/answer pairs does SearchQA contain?")
    button(driver, "Step through").click()
    wait(driver, lambda d: settled(d) and d.find_elements(By.XPATH, "//button[.//p[text()='Next step']]"), 120)
    offered = [o for o in _options(driver, "Node to explore")]
    assert offered, "nothing to explore at the start"
    choose(driver, "Node to explore", offered[-1])   # not the policy's first choice: the last one offered
    button(driver, "Explore this node instead").click()
    wait(driver, lambda d: settled(d) and len(_steps(d)) == 1, 120)
    button(driver, "Next step").click()
    wait(driver, lambda d: settled(d) and len(_steps(d)) == 2, 120)
    steps = _steps(driver)
    assert steps[0].startswith("1. Opened") and "Chosen by you." in steps[0]
    assert "Chosen by the offline policy" in steps[1]
    opened = [int(n) for s in steps for n in re.findall(r"^\d+\. Opened .*?node (\d+)\)", s)]
    lit = driver.execute_script("return window.memoryForestView.data.nodes.filter(n => n.lit).map(n => n.id)")
    assert opened and set(opened) <= set(lit)            # the path so far, drawn on the paper's tree
    button(driver, "Next step").click()
    wait(driver, lambda d: settled(d) and len(_steps(d)) == 3, 120)
    # the Forest page draws the same path on the same archive
    open_page(driver, "Forest")
    on_page(driver, "Forest")
    wait(driver, lambda d: "the agent's path from the Ask page" in d.find_element(
        By.CSS_SELECTOR, "[data-testid=stMain]").text, 60)
    assert query(driver)["archive"] == str(paper.id)


def _options(driver, label: str) -> list[str]:
    box = next(b for b in driver.find_elements(By.CSS_SELECTOR, "[data-testid=stSelectbox]")
               if b.find_element(By.TAG_NAME, "label").text.strip() == label)
    box.find_element(By.TAG_NAME, "input").click()
    options = wait(driver, lambda d: [o.text.strip() for o in d.find_elements(By.CSS_SELECTOR, "[role=option]")])
    box.find_element(By.TAG_NAME, "input").click()
    return options


def _steps(driver) -> list[str]:
    """The steps said so far (also those folded under an answer, hence their text content)."""
    said = [" ".join(p.get_attribute("textContent").split())
            for p in driver.find_elements(By.CSS_SELECTOR, "[data-testid=stMarkdownContainer] p")]
    return [s for s in said if re.match(r"^\d+\. (Opened|Answered)", s)]
