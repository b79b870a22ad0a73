"""The workbench under AppTest along a person's path: the place in the URL (a deep link opens its
archive and node, a page switch keeps them, an unknown archive is said), the Ask page's
step-through (Next step, Explore this node instead, Run to answer, remembered in the session), and
what a person types that the pages must show as written or flag at its field."""
from __future__ import annotations

import pytest

from conftest import shown
from testkit.topics import topic_text
from forest.errors import InvalidInput
from test_workbench import wait_for
from testkit.workbench import button

pytestmark = pytest.mark.slow  # every test here takes 1 s of CPU or more

NOTES = "## Jazz\n\n" + topic_text("jazz") + "\n\n## Volcanoes\n\n" + topic_text("volcanoes")


@pytest.fixture
def notes(workbench):
    """model_id 'reader' with the notes (archive 1) and a second archive; 'other' with one."""
    from forest import MemoryForest

    forest = MemoryForest(data_dir=workbench, chunk_size=300)
    archive = forest.ingest_text("reader", "notes", NOTES, threshold=0.0)
    forest.ingest_text("reader", "plants", topic_text("photosynthesis"))
    forest.ingest_text("other", "volcanoes", topic_text("volcanoes"))
    nodes = forest.tree("reader", archive.id)
    forest.close()
    return archive, nodes


def opened(**query: str):
    """The app opened on a link with `query` (a fresh session: only the URL says where it is)."""
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT

    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for key, value in query.items():
        app.query_params[key] = value
    return app.run()


def test_a_deep_link_opens_its_archive_and_node_and_a_page_switch_keeps_them(notes):
    archive, nodes = notes
    leaf = next(n for n in nodes if n.is_leaf)
    app = opened(model_id="reader", archive=str(archive.id), node=str(leaf.id)).switch_page("workbench/tree.py").run()
    assert not app.exception and not app.warning
    assert app.sidebar.selectbox(key="model_id_pick").value == "reader"
    assert app.selectbox(key="tree_archive").value == archive.id and app.selectbox(key="tree_node").value == leaf.id
    assert app.subheader[0].value == f"Passage {leaf.id}"
    app = app.switch_page("workbench/ask.py").run()   # a page switch drops the query; the place puts it back
    assert dict(app.query_params) == {"model_id": "reader", "archive": str(archive.id), "node": str(leaf.id),
                                      "session": "default"}
    app = app.switch_page("workbench/tree.py").run()
    assert app.selectbox(key="tree_node").value == leaf.id
    # choosing another model_id leaves the old one's archive and node behind
    app = app.sidebar.selectbox(key="model_id_pick").set_value("other").run()
    assert app.query_params["model_id"] == "other" and app.selectbox(key="tree_archive").value != archive.id


def test_a_link_to_an_archive_or_node_the_model_id_lacks_is_said_not_replaced(notes):
    archive, _ = notes
    app = opened(model_id="reader", archive="99").switch_page("workbench/tree.py").run()
    assert [shown(w.value) for w in app.warning] == ["model_id 'reader' has no archive 99: choose one of its archives."]
    assert app.selectbox(key="tree_archive").value is None and not app.subheader   # nothing drawn meanwhile
    app = opened(model_id="reader", archive=str(archive.id), node="nonsense").switch_page("workbench/tree.py").run()
    assert "The link's node 'nonsense' is not an id: it was left out." in [shown(w.value) for w in app.warning]
    app = opened(model_id="nobody").switch_page("workbench/ask.py").run()
    assert any("This store has no model_id 'nobody'" in shown(w.value) for w in app.warning)
    assert app.sidebar.selectbox(key="model_id_pick").value is None and not app.text_input   # nothing asked


def test_stepping_through_with_an_override_runs_to_an_answer_remembered_in_the_session(notes, workbench):
    from forest import MemoryForest

    archive, _ = notes
    app = opened(model_id="reader").switch_page("workbench/ask.py").run()
    app.text_input[0].set_value("Who played bebop in New York?")
    app = button(app, "Step through").click().run()
    assert not app.exception and app.query_params["q"] == "Who played bebop in New York?"
    offered = app.selectbox(key="ask_explore_choice").options
    assert offered and button(app, "Next step") and button(app, "Run to answer")
    app = app.selectbox(key="ask_explore_choice").set_value(app.selectbox(key="ask_explore_choice").options[-1]).run()
    app = button(app, "Explore this node instead").click().run()
    said = [m.value for m in app.markdown if m.value.startswith("**1.**")]
    assert said and "Chosen by you." in said[0]
    app = button(app, "Run to answer").click().run()
    assert not app.exception and any(m.value.startswith("Extractive answer") for m in app.markdown)
    assert not [b for b in app.button if b.label == "Next step"]   # done: the answer, not the controls
    forest = MemoryForest(data_dir=workbench)
    asked = forest.research.questions("reader", "default")
    forest.close()
    assert [q.get("question") for q in asked] == ["Who played bebop in New York?"]
    assert archive.id in {c.node.archive_id for c in app.session_state["ask_run"]["state"].cited}


def test_markdown_and_math_a_person_types_are_shown_as_written(notes):
    app = opened(model_id="reader").switch_page("workbench/ask.py").run()
    question = "Is **bebop** faster than $x^2$ [jazz](http://example.org)?"
    app.text_input[0].set_value(question)
    app = button(app, "Ask").click().run()
    assert shown(app.subheader[0].value) == question and "\\*\\*bebop\\*\\*" in app.subheader[0].value
    app = app.switch_page("workbench/library.py").run()
    app = app.text_input(key="library_path").set_value("/nowhere/**zotero** $x$").run()
    app = wait_for(button(app, "Import library").click().run(), lambda a: a.error)
    assert [shown(e.value) for e in app.error] == ["**zotero** $x$: /nowhere/**zotero** $x$ does not exist"]


def test_a_path_too_long_for_any_file_is_said_in_a_line(notes, make_forest, tmp_path):
    app = opened(model_id="reader").run()
    app = app.text_input(key="library_path").set_value("/" + "x" * 20_000).run()   # the field keeps 4,096
    app = wait_for(button(app, "Import library").click().run(), lambda a: a.error)
    [error] = [shown(e.value) for e in app.error]
    assert error.endswith("… cannot be read: File name too long") and len(error) < 500
    with pytest.raises(InvalidInput, match="^the path has 20,001 characters: a path has at most 4,096$"):
        make_forest(tmp_path / "elsewhere").import_library("reader", "/" + "x" * 20_000)


def test_a_session_or_user_id_that_cannot_be_is_flagged_at_its_field(notes):
    app = opened(model_id="reader").switch_page("workbench/research.py").run()
    app = app.sidebar.text_input(key="research_session_box").set_value("s" * 200).run()
    assert not app.exception and [shown(e.value) for e in app.sidebar.error] == [
        "Not a session name: session_id has 200 characters; it must be at most 100. Still in 'default'."]
    assert app.tabs and app.query_params["session"] == "default"   # the page goes on in its session
    app = app.switch_page("workbench/memory.py").run()
    app = app.sidebar.text_input(key="user_id_box").set_value("ann smith").run()
    assert not app.exception and len(app.sidebar.error) == 1 and "Not a user_id" in shown(app.sidebar.error[0].value)
    app = app.sidebar.text_input(key="user_id_box").set_value("ann").run()
    assert not app.sidebar.error and app.query_params["user_id"] == "ann" and app.tabs


def test_the_directives_editor_shows_the_defaults_until_a_core_file_is_written(notes, workbench):
    app = opened(model_id="reader").switch_page("workbench/research.py").run()
    editor = next(t for t in app.text_area if t.label == "Core directives")
    assert editor.value.startswith("# Core directives") and "cite every claim" in editor.value
    assert any("Not written yet: these are the default directives" in shown(c.value) for c in app.caption)
    app = button(editor.set_value("Cite pages.").run(), "Save directives").click().run()
    assert (workbench.parent / "CORE.md").read_text() == "Cite pages."
    assert not any("Not written yet" in shown(c.value) for c in app.caption)
