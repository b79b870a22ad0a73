"""Compare papers: the engine's table (each cell through its paper's tree), its CSV and Markdown,
the `forest compare` command as a subprocess, the compare_papers tool through a real MCP client
and REST, and the Compare page under AppTest."""
import asyncio
import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from testkit.processes import forest_env, free_port
from testkit.topics import topic_text, TOPICS
from forest import InvalidInput, MemoryForest, NotFound, load_settings
from forest.limits import MAX_CELLS, MAX_QUESTIONS
from forest.recall.compare import FOUND_THRESHOLD, NOT_FOUND, Cell, ComparedPaper, Comparison
from forest.views.comparison_table import comparison_csv, comparison_markdown

FOREST = str(Path(sys.executable).parent / "forest")
PAPERS = {"music": "## Jazz\n\n" + topic_text("jazz"), "earth": "## Volcanoes\n\n" + topic_text("volcanoes"),
          "plants": "## Photosynthesis\n\n" + topic_text("photosynthesis")}
BEBOP, ERUPTIONS = "Who played bebop?", "How do geologists forecast eruptions?"
NOBODY = "What is the tensile strength of titanium alloys?"


@pytest.fixture(scope="module")
def papers(tmp_path_factory, embedder):
    """A forest of three one-topic papers (one tree each: the walk must drill down) and another
    model_id's paper, built once: the tests only read it."""
    settings = load_settings({"data_dir": tmp_path_factory.mktemp("compare") / "store"}, environ={})
    forest = MemoryForest(settings.replace(chunk_size=300, chunk_overlap=0), embedder=embedder)
    ids = {name: forest.ingest_text("m", name, text, threshold=0.0).id for name, text in PAPERS.items()}
    ids["other"] = forest.ingest_text("someone-else", "music", PAPERS["music"], threshold=0.0).id
    library = {"title": "Jazz in the 1940s", "year": 2018, "creators": [{"last": "Buck"}, {"last": "Alt"}, {"last": "Ng"}]}
    ids["cited"] = forest.ingest_text("library", "jazz.pdf", PAPERS["music"], threshold=0.0, library=library).id
    ids["one passage"] = forest.ingest_text("short", "one passage", TOPICS["jazz"][1]).id
    yield forest, ids
    forest.close()


@pytest.mark.slow
def test_each_cell_cites_its_own_papers_passage_and_the_others_say_not_found(papers):
    forest, ids = papers
    table = forest.compare("m", [BEBOP, ERUPTIONS])
    assert [p.name for p in table.papers] == ["music", "earth", "plants"] and table.questions == [BEBOP, ERUPTIONS]
    assert table.threshold == FOUND_THRESHOLD
    assert [c.question for c in table.row(ids["music"])] == [BEBOP, ERUPTIONS]
    answers = {(c.archive_id, c.question): c for c in table.cells}
    for paper, question, words in (("music", BEBOP, "Charlie Parker"), ("earth", ERUPTIONS, "sulfur dioxide")):
        cell = answers[ids[paper], question]
        assert cell.found and cell.score >= table.threshold
        assert words in cell.text and len(cell.sentences) <= 2
        passage = forest.node("m", cell.node_id)
        assert passage.is_leaf and passage.archive_id == ids[paper]          # a passage of that paper
        assert all(sentence in passage.content for sentence in cell.sentences)
        assert cell.citation == passage.citation == f"§{'Jazz' if paper == 'music' else 'Volcanoes'}"
    for paper, question in (("earth", BEBOP), ("plants", BEBOP), ("music", ERUPTIONS), ("plants", ERUPTIONS)):
        cell = answers[ids[paper], question]
        assert not cell.found and cell.text == NOT_FOUND and cell.score < table.threshold
        assert cell.sentences == [] and cell.node_id is None and cell.citation == ""


def test_a_paper_from_a_library_is_named_as_it_is_cited(papers):
    forest, ids = papers
    table = forest.compare("library", [BEBOP])
    assert [p.label for p in table.papers] == ["Buck et al. (2018)"]
    [cell] = table.cells
    passage = forest.node("library", cell.node_id)
    assert passage.citation == "Buck et al. (2018), §Jazz" and cell.citation == "§Jazz"   # the row names the paper


def test_a_paper_of_one_passage_is_scored_by_the_drill_down_too(papers):
    forest, ids = papers
    [cell] = forest.compare("short", [BEBOP]).cells
    [passage] = forest.tree("short", ids["one passage"])      # retrieve returns the passage itself
    [reranked] = forest.retriever.rerank("short", BEBOP, [passage])
    assert cell.found and cell.node_id == passage.id and cell.score == reranked.relevance_score
    assert cell.score > forest.retrieve("short", BEBOP)[0].score   # the question's words count, as in a drill-down


def test_a_question_no_paper_answers_is_not_found_everywhere(papers):
    forest, _ = papers
    table = forest.compare("m", [NOBODY])
    assert len(table.cells) == 3 and not any(c.found for c in table.cells)
    # a lower threshold fills the same cells: "not found" is the threshold's verdict, not a lack of passages
    assert all(c.found and c.sentences for c in forest.compare("m", [NOBODY], threshold=0.0).cells)


def test_an_overview_question_is_answered_by_each_papers_opening(papers):
    forest, ids = papers
    table = forest.compare("m", ["What is this paper about?"])
    assert all(c.found for c in table.cells)
    assert table.row(ids["music"])[0].sentences[0].startswith("Jazz began in New Orleans")


def test_the_table_keeps_to_the_papers_chosen_and_refuses_another_model_ids(papers):
    forest, ids = papers
    table = forest.compare("m", [BEBOP], archive_ids=[ids["earth"], ids["music"]])
    assert [p.archive_id for p in table.papers] == [ids["music"], ids["earth"]]
    assert [c.archive_id for c in table.cells] == [ids["music"], ids["earth"]]
    with pytest.raises(NotFound, match="not found for model_id 'm'"):
        forest.compare("m", [BEBOP], archive_ids=[ids["music"], ids["other"]])
    assert forest.compare("m", [BEBOP, f" {BEBOP} "], archive_ids=[ids["music"]]).questions == [BEBOP]  # one column
    # the other model_id compares its own paper only
    [cell] = forest.compare("someone-else", [BEBOP]).cells
    assert cell.archive_id == ids["other"] and cell.found


@pytest.mark.parametrize("questions, message", [
    ([], "at least one question"),
    (["  "], "question 1: the query is empty"),
    ([BEBOP, ""], "question 2: the query is empty"),
    (BEBOP, "a list of questions"),
    ([BEBOP, 42], "question 2: the query is empty"),
    (["x" * 4001], "question 1: the query has 4,001 characters"),
    ([f"question {i}?" for i in range(MAX_QUESTIONS + 1)], f"a comparison takes at most {MAX_QUESTIONS}"),
])
def test_bad_questions_are_refused_with_a_reason(make_forest, questions, message):
    forest = make_forest()   # questions are checked before anything is read
    with pytest.raises(InvalidInput, match=message):
        forest.compare("m", questions)


def test_bad_scopes_are_refused_with_a_reason(papers, monkeypatch):
    forest, ids = papers
    with pytest.raises(InvalidInput, match="archive_ids must be a list"):
        forest.compare("m", [BEBOP], archive_ids=["1"])
    with pytest.raises(InvalidInput, match="no ready archive"):
        forest.compare("nobody", [BEBOP])
    with pytest.raises(InvalidInput, match="model_id is required"):
        forest.compare(" ", [BEBOP])
    monkeypatch.setattr("forest.recall.compare.MAX_CELLS", 5)
    with pytest.raises(InvalidInput, match="3 papers × 2 questions is 6 cells, over the limit of 5"):
        forest.compare("m", [BEBOP, ERUPTIONS])
    assert MAX_CELLS >= 10 * 3   # the table the feature is made for


def test_one_search_for_every_paper_gives_each_papers_own_retrieve(papers):
    forest, ids = papers
    chosen = [ids["music"], ids["earth"], ids["plants"]]
    each = forest.retriever.retrieve_each("m", [BEBOP, NOBODY], 4, chosen)
    for question, found in zip([BEBOP, NOBODY], each):
        for archive_id in chosen:
            alone = forest.retriever.retrieve("m", question, 4, "vector", [archive_id])
            assert [(r.node.id, r.kind, r.score, r.hit_ids) for r in found[archive_id]] == \
                [(r.node.id, r.kind, r.score, r.hit_ids) for r in alone]


# --- CSV and Markdown ------------------------------------------------------------------------
def hostile_table() -> Comparison:
    papers = [ComparedPaper(1, "=cmd|' /C calc'!A0", None), ComparedPaper(2, "plain name", "Buck et al. (2018)")]
    questions = ["@SUM(1+1)", "Which | pipes?\nand lines"]
    cells = [Cell(1, questions[0], ["+1 is more | than\nzero \\"], 7, "p. 3, §2 Method", 0.8, True),
             Cell(1, questions[1], [], None, "", 0.1, False),
             Cell(2, questions[0], ["-2 ![x](http://evil.example/x.png) <b>bold</b>"], 9, "p. 1, §[1] Intro", 0.7, True),
             Cell(2, questions[1], ["Tabs\tand\r\nreturns."], 11, "", 0.6, True)]
    return Comparison("m", questions, papers, cells, 0.3)


def test_the_csv_reads_back_and_no_field_starts_a_formula():
    rows = list(csv.reader(io.StringIO(comparison_csv(hostile_table()))))
    assert rows[0] == ["paper", "'@SUM(1+1)", "'@SUM(1+1) (source)", "Which | pipes?\nand lines",
                       "Which | pipes?\nand lines (source)"]
    assert rows[1] == ["'=cmd|' /C calc'!A0", "'+1 is more | than\nzero \\", "p. 3, §2 Method (node 7)", NOT_FOUND, ""]
    assert rows[2][0] == "Buck et al. (2018)"          # the row named as the paper is cited
    assert rows[2][1].startswith("'-2 ") and rows[2][4] == "node 11"
    assert not any(field.startswith(("=", "+", "-", "@", "\t", "\r")) for row in rows for field in row)


def unescaped_pipes(line: str) -> int:
    count, escaped = 0, False
    for ch in line:
        count += ch == "|" and not escaped
        escaped = ch == "\\" and not escaped
    return count


def test_the_markdown_table_keeps_its_columns_whatever_the_text_holds():
    markdown = comparison_markdown(hostile_table(), link=lambda node_id: f"#cite-{node_id}")
    lines = markdown.splitlines()
    table = lines[:4]
    assert all(unescaped_pipes(line) == 4 for line in table)       # 3 columns on every line
    assert table[0].startswith("| Paper | @SUM(1+1) | Which \\| pipes? and lines |")
    assert "| _not found_ |" in table[2]
    assert "more \\| than zero \\\\ _([p. 3, §2 Method](#cite-7))_" in table[2]
    assert "![x](" not in markdown and "\\<b>bold\\</b>" in table[3]  # no image, no raw HTML
    assert "_([p. 1, §(1) Intro](#cite-9))_" in table[3]              # brackets would end the link text
    assert "Tabs and returns. _([node 11](#cite-11))_" in table[3]
    plain = comparison_markdown(hostile_table())
    assert "#cite-" not in plain and "_(p. 3, §2 Method)_" in plain
    assert lines[-1].startswith("_not found_: no passage") and "(0.3)" in lines[-1]


# --- the faces ------------------------------------------------------------------------------
def run(data_dir, *args, ok=True):
    done = subprocess.run([FOREST, *args], env=forest_env(data_dir), capture_output=True, text=True, timeout=300)
    if ok:
        assert done.returncode == 0, done.stderr
    return done


@pytest.mark.slow
def test_the_cli_prints_the_table_as_text_json_markdown_and_csv(tmp_path):
    data_dir = tmp_path / "store"
    ids = {}
    for name in ("music", "earth"):
        path = tmp_path / f"{name}.md"
        path.write_text(PAPERS[name], encoding="utf-8")
        made = json.loads(run(data_dir, "ingest", str(path), "--model-id", "m", "--chunk-size", "300",
                              "--threshold", "0", "--json").stdout)
        ids[name] = made[0]["id"]
    table = json.loads(run(data_dir, "compare", BEBOP, ERUPTIONS, "--model-id", "m", "--json").stdout)
    assert table["questions"] == [BEBOP, ERUPTIONS] and [p["name"] for p in table["papers"]] == ["music", "earth"]
    cells = {(c["archive_id"], c["question"]): c for c in table["cells"]}
    assert cells[ids["music"], BEBOP]["found"] and "Parker" in cells[ids["music"], BEBOP]["sentences"][0]
    assert not cells[ids["earth"], BEBOP]["found"] and cells[ids["earth"], ERUPTIONS]["citation"] == "§Volcanoes"
    text = run(data_dir, "compare", BEBOP, "--model-id", "m", "--archives", str(ids["music"])).stdout
    assert text.startswith(f"music (archive {ids['music']})\n  {BEBOP}\n    ") and "[node " in text and "earth" not in text
    markdown = run(data_dir, "compare", BEBOP, "--model-id", "m", "--format", "markdown").stdout
    assert markdown.startswith(f"| Paper | {BEBOP} |") and "| earth | _not found_ |" in markdown
    rows = list(csv.reader(io.StringIO(run(data_dir, "compare", BEBOP, "--model-id", "m", "--format", "csv").stdout)))
    assert rows[0] == ["paper", BEBOP, f"{BEBOP} (source)"] and rows[2] == ["earth", NOT_FOUND, ""]
    lenient = json.loads(run(data_dir, "compare", BEBOP, "--model-id", "m", "--threshold", "0", "--json").stdout)
    assert lenient["threshold"] == 0 and all(c["found"] for c in lenient["cells"])
    # bad input: one line on stderr, a non-zero exit, no traceback
    for args, code, message in ((["", "--model-id", "m"], 1, "question 1: the query is empty"),
                                ([BEBOP, "--model-id", "m", "--archives", "1,x"], 2, "integers separated by commas"),
                                ([BEBOP, "--model-id", "other", "--archives", str(ids["music"])], 1, "not found"),
                                ([BEBOP, "--model-id", "m", "--threshold", "2"], 1, "threshold is a 0-1 relevance")):
        done = run(data_dir, "compare", *args, ok=False)
        assert done.returncode == code and message in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_the_tool_answers_over_mcp_and_rest(papers):
    from forest.serving.http import ThreadServer

    forest, ids = papers
    server = ThreadServer(forest, port=free_port()).start()
    try:
        async def calls(session):
            listed = {t.name: t for t in (await session.list_tools()).tools}
            asked = await session.call_tool("compare_papers", {"model_id": "m", "questions": [BEBOP, NOBODY],
                                                               "archive_ids": [ids["music"], ids["earth"]]})
            empty = await session.call_tool("compare_papers", {"model_id": "m", "questions": []})
            foreign = await session.call_tool("compare_papers", {"model_id": "m", "questions": [BEBOP],
                                                                 "archive_ids": [ids["other"]]})
            return listed, asked, empty, foreign

        async def session_calls():
            client = create_mcp_http_client()
            async with client, streamable_http_client(server.url + "/mcp", http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await calls(session)

        listed, asked, empty, foreign = asyncio.run(session_calls())
        schema = listed["compare_papers"].input_schema["properties"]
        assert schema["questions"]["type"] == "array" and schema["questions"]["maxItems"] == MAX_QUESTIONS
        assert not asked.is_error
        table = asked.structured_content
        assert [p["archive_id"] for p in table["papers"]] == [ids["music"], ids["earth"]]
        found = [(c["archive_id"], c["question"]) for c in table["cells"] if c["found"]]
        assert found == [(ids["music"], BEBOP)]
        assert empty.is_error and "at least one question" in empty.content[0].text
        assert foreign.is_error and "not found" in foreign.content[0].text
        with httpx.Client(base_url=server.url, timeout=120) as http:
            posted = http.post("/tools/compare_papers", json={"model_id": "m", "questions": [ERUPTIONS]})
            assert posted.status_code == 200
            assert [c["found"] for c in posted.json()["cells"]] == [False, True, False]   # music, earth, plants
            lenient = http.post("/tools/compare_papers", json={"model_id": "m", "questions": [ERUPTIONS], "threshold": 0})
            assert [c["found"] for c in lenient.json()["cells"]] == [True, True, True]
            assert http.post("/tools/compare_papers", json={"model_id": "m", "questions": [BEBOP],
                                                            "archive_ids": [ids["other"]]}).status_code == 404
            assert http.get("/tools/compare_papers", params={"model_id": "m"}).status_code == 405   # POST only
    finally:
        server.stop()


@pytest.mark.slow
def test_the_compare_page_draws_the_table_opens_a_citation_and_offers_downloads(workbench):
    from forest import MemoryForest
    from testkit.workbench import button, open_app

    engine = MemoryForest(data_dir=workbench, chunk_size=300)
    ids = {name: engine.ingest_text("reader", name, PAPERS[name], threshold=0.0).id
           for name in ("music", "earth", "plants")}
    engine.close()
    app = open_app().switch_page("workbench/compare.py").run()
    assert not app.exception and [h.value for h in app.header] == ["Compare"]
    papers = next(m for m in app.multiselect if m.label == "Papers to compare")
    assert papers.options == ["music", "earth", "plants"]
    papers.select(ids["music"]).select(ids["earth"])
    next(t for t in app.text_area if t.label == "Questions, one per line").set_value(f"{BEBOP}\n\n{ERUPTIONS}\n")
    app = button(app, "Compare").click().run()
    assert not app.exception and not app.error
    table = next(m.value for m in app.markdown if m.value.startswith("| Paper |"))
    assert table.startswith(f"| Paper | {BEBOP} | {ERUPTIONS} |") and "plants" not in table
    music = next(line for line in table.splitlines() if line.startswith("| music |"))
    assert "Charlie Parker" in music and "(#cite-" in music and "_not found_" in music
    assert {b.label for b in app.get("download_button")} == {"Download CSV", "Download Markdown"}
    cited = int(music.split("(#cite-")[1].split(")")[0])
    app.session_state["compare_source"] = cited      # what a click on the citation sets
    app = app.run()
    assert not app.exception and any("cited" in h.value for h in app.get("html"))   # the passage, marked
    # bad input stays on the page as one message
    next(t for t in app.text_area if t.label == "Questions, one per line").set_value("  \n")
    app = button(app, "Compare").click().run()
    assert not app.exception and any("at least one question" in e.value for e in app.error)
