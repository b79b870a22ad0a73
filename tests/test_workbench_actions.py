"""The workbench's actions under AppTest, on a real store: destructive actions confirm, say what they
did and never carry their confirmation to the next item; job banners, archive names and repeated
uploads; the sample on its way; messages that say what happened; no spec jargon on any page."""
import re

import httpx
import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT, shown
from testkit.processes import free_port
from testkit.topics import topic_text
from test_workbench import JAZZ, on_tab, upload, wait_for
from testkit.workbench import button, open_app, use_model_id

pytestmark = pytest.mark.slow  # every test here takes 1 s of CPU or more

PAGES = [f"workbench/{page}.py" for page in ("library", "tree", "ask", "research", "reconcile", "memory", "server")]


def texts(app: AppTest) -> list[str]:
    """Everything a page shows or says in a label, help or tooltip."""
    return [str(node.proto) for root in (app.main, app.sidebar) for node in root if hasattr(node, "proto")]


def test_no_page_names_an_internal_spec_section(workbench, monkeypatch):
    from forest import MemoryForest

    forest = MemoryForest(data_dir=workbench, chunk_size=300)
    forest.ingest_text("reader", "jazz", topic_text("jazz"))
    forest.ingest_text("reader", "volcanoes", topic_text("volcanoes"))
    forest.personal.memory_tool("add", "zhu", text=["灿灿是小朱的女儿"])
    forest.close()
    monkeypatch.setenv("FOREST_SERVER_PORT", str(free_port()))
    app = open_app()
    for page in PAGES:
        app = app.switch_page(page).run()
        if page == "workbench/memory.py":
            next(t for t in app.sidebar.text_input if t.label == "user_id").set_value("zhu").run()
        assert not app.exception, page
        shown = texts(app)
        assert len(shown) > 10, page
        assert not [t for t in shown if re.search(r"\bseed \d{3}\b", t)], page


def test_deleting_an_archive_confirms_says_so_and_leaves_the_next_one_alone(workbench):
    from forest import MemoryForest

    forest = MemoryForest(data_dir=workbench, chunk_size=300)
    jazz = forest.ingest_text("reader", "jazz", topic_text("jazz"))
    volcanoes = forest.ingest_text("reader", "volcanoes", topic_text("volcanoes"))
    forest.close()
    app = open_app()
    assert app.selectbox(key="delete_choice").value is None      # nothing to confirm until one is chosen
    assert not [b for b in app.button if b.label.startswith("Yes, delete archive")]
    app = app.selectbox(key="delete_choice").set_value(f"{jazz.id}: jazz").run()
    app = button(app, f"Yes, delete archive {jazz.id}").click().run()
    assert [shown(t.value) for t in app.toast] == [f"Deleted archive {jazz.id} (jazz)."]
    assert app.dataframe[0].value["name"].tolist() == ["volcanoes"]
    # The chosen archive is gone and nothing else is chosen: no delete is offered for the next one.
    assert app.selectbox(key="delete_choice").value is None
    assert not [b for b in app.button if b.label == f"Yes, delete archive {volcanoes.id}"]
    app = app.run()
    assert app.dataframe[0].value["name"].tolist() == ["volcanoes"] and not app.toast
    assert not any(b.value for b in app.button)


def test_library_names_archives_by_title_refuses_a_repeat_and_clears_its_banners(workbench):
    paper = b"# Notes on Jazz and Volcanoes\n\n" + JAZZ
    app = upload(open_app(), "draft-v2.md", paper, "text/markdown")
    app = wait_for(app, lambda a: a.dataframe and len(a.dataframe[0].value) == 1)
    assert app.dataframe[0].value["name"].tolist() == ["Notes on Jazz and Volcanoes"]
    assert [s.value for s in app.success] == ["draft-v2.md: archive 1 (Notes on Jazz and Volcanoes) is ready"]
    app = upload(app, "copy.md", paper, "text/markdown")
    app = wait_for(app, lambda a: a.info)
    assert [shown(i.value) for i in app.info] == [
        "copy.md: already in the library as archive 1 (Notes on Jazz and Volcanoes): the same text. Not added again: "
        "choose “Replace its archive” or “Keep both” to add it."]
    assert len(app.dataframe[0].value) == 1 and not app.error
    app = button(app, "Clear these messages").click().run()
    assert not app.info and not app.success
    # A banner for an archive deleted since goes with it.
    app = upload(app, "volcanoes.md", topic_text("volcanoes").encode(), "text/markdown")
    app = wait_for(app, lambda a: a.success)
    app = app.selectbox(key="delete_choice").set_value("2: volcanoes").run()
    app = button(app, "Yes, delete archive 2").click().run()
    assert not app.success and any("Deleted archive 2" in shown(t.value) for t in app.toast)


def test_while_the_sample_builds_every_page_says_it_is_coming(workbench, tmp_path, monkeypatch):
    from workbench.shared import get_forest

    samples = tmp_path / "samples"
    samples.mkdir()
    (samples / "sample notes.md").write_bytes(JAZZ)
    monkeypatch.setenv("FOREST_SAMPLES_DIR", str(samples))
    with get_forest()._build_lock:  # the app's own engine (st.cache_resource): its build waits
        app = open_app()
        assert app.sidebar.selectbox(key="model_id_pick").value == "demo"
        assert any("Building the sample paper" in i.value for i in app.info)
        assert not any("Type a model_id" in i.value for i in app.info)
        app = app.switch_page("workbench/tree.py").run()
        assert any("'demo' are being built" in i.value for i in app.info)
    app = wait_for(app, lambda a: not a.info and a.selectbox)
    assert not app.exception


def test_clearing_a_users_memory_asks_first_and_says_what_it_did(workbench):
    from forest import MemoryForest

    forest = MemoryForest(data_dir=workbench)
    forest.personal.memory_tool("add", "zhu", text=["灿灿是小朱的女儿", "灿灿还有一个弟弟，叫帅帅", "小朱住在杭州"])
    forest.close()
    app = open_app().switch_page("workbench/memory.py").run()
    next(t for t in app.sidebar.text_input if t.label == "user_id").set_value("zhu").run()
    app = on_tab(app, "memory_tab", "Memories")
    assert app.caption[0].value == "3 memories"
    # No agent, run or metadata was set: nothing is said about them ("agent None, run None · metadata {}").
    assert not [m.value for m in app.markdown if "None" in m.value or "metadata" in m.value]
    app = button(app, "Yes, delete memory #1").click().run()
    assert [shown(t.value) for t in app.toast] == ["Deleted memory #1."] and app.caption[0].value == "2 memories"
    app = app.run()  # the confirmation did not pass to memory #2, nor to clearing everything
    assert app.caption[0].value == "2 memories" and not app.toast
    app = button(app, "Yes, clear all of this user's memory").click().run()
    assert [shown(t.value) for t in app.toast] == ["Cleared the memory of 'zhu': 2 memories removed."]
    assert app.caption[0].value == "0 memories"


def test_process_memory_reads_as_a_table_with_the_json_behind_an_expander(workbench):
    from forest import MemoryForest

    forest = MemoryForest(data_dir=workbench)
    # ranked by words and meaning together, these come out of similarity order for the message below
    forest.personal.memory_tool("add", "zhu", text=[
        "灿灿是小朱的女儿", "小朱住在北京，喜欢游泳", "My sister Mia is a pediatric nurse.",
        "I live in Berlin and work at the Max Planck Institute.", "My favourite food is ramen.",
        "Mia lives in Munich with her cat."])
    forest.close()
    app = open_app().switch_page("workbench/memory.py").run()
    next(t for t in app.sidebar.text_input if t.label == "user_id").set_value("zhu").run()
    next(t for t in app.text_area if t.label == "Message").set_value("What does my sister do?")
    app = button(app, "Process").click().run()
    assert app.markdown[0].value.startswith("**What the agent is told**")
    assert app.dataframe[0].value["memory"].tolist()[0] == "My sister Mia is a pediatric nurse."
    scores = app.dataframe[0].value["score"].tolist()
    assert len(scores) > 1 and scores == sorted(scores, reverse=True)
    assert [e.label for e in app.expander] == ["As the agent receives it (JSON)"]
    assert app.expander[0].json[0].value  # the raw context stays one click away


def test_compact_now_says_when_there_was_nothing_to_compact(workbench):
    from forest import MemoryForest

    forest = MemoryForest(data_dir=workbench)
    forest.research.add_message("reader", "default", "user", "Does fusion help?")
    forest.research.add_message("reader", "default", "assistant", "At 5-shot, yes.")
    forest.close()
    app = use_model_id(open_app().switch_page("workbench/research.py").run(), "reader")
    app = on_tab(app, "research_tab", "Conversation")
    app = button(app, "Compact now").click().run()
    assert [shown(t.value) for t in app.toast] == [
        "Nothing to compact: all 2 messages (9 tokens) are recent enough to stay as they are."]
    assert app.session_state["research_tab"] == "Conversation"


def test_a_verdict_without_a_conflict_cannot_be_saved_as_a_finding(workbench):
    from forest import MemoryForest

    forest = MemoryForest(data_dir=workbench, chunk_size=300)
    forest.ingest_text("reader", "jazz", topic_text("jazz"))
    forest.ingest_text("reader", "volcanoes", topic_text("volcanoes"))
    forest.close()
    app = open_app().switch_page("workbench/reconcile.py").run()
    for side, query in (("A", "jazz"), ("B", "volcanoes")):
        next(t for t in app.text_input if t.label == f"Passage {side}: search the papers").set_value(query)
        app = button(app, f"Search for passage {side}").click().run()
    app = button(app, "Reconcile the two passages").click().run()
    assert any(m.value.startswith("The offline rules find no contradiction between jazz") for m in app.markdown)
    assert any("no finding to save" in i.value for i in app.info)
    assert "Save as finding" not in [b.label for b in app.button]


def test_server_page_lists_openai_calls_and_why_calls_failed(workbench, monkeypatch):
    from forest import MemoryForest

    forest = MemoryForest(data_dir=workbench, chunk_size=300)
    forest.ingest_text("reader", "jazz", topic_text("jazz"))
    forest.close()
    port = free_port()
    monkeypatch.setenv("FOREST_SERVER_PORT", str(port))
    app = open_app().switch_page("workbench/server.py").run()
    url = f"http://127.0.0.1:{port}"
    httpx.post(f"{url}/v1/chat/completions", timeout=60,
               json={"model": "reader", "messages": [{"role": "user", "content": "Who played bebop?"}]})
    httpx.post(f"{url}/tools/get_memory_node", json={"model_id": "reader", "node_id": 9999}, timeout=60)
    calls = next(d.value for d in app.run().dataframe if "tool" in d.value.columns)  # after the models in use
    assert calls["tool"].tolist() == ["get_memory_node", "/v1/chat/completions"]
    assert calls["ok"].tolist() == [False, True]
    assert "not found" in calls["error"].iloc[0]


def test_a_page_opened_first_runs_inside_the_app(workbench):
    """The very first script run opens a page by its URL, as a fresh server's first request does:
    app.py's shell comes with it (tests/test_browser_navigation.py does the same in a browser)."""
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).switch_page("workbench/memory.py").run()
    assert not app.exception and [h.value for h in app.header] == ["Personal memory"]
    assert [c.value for c in app.sidebar.caption] == ["Agent endpoint not running: disabled (server_port = 0)"]
    assert [p.label for p in app.sidebar.text_input] == ["user_id"]
