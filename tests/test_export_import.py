"""Export an archive to JSON and import it elsewhere: same tree, new ids, nothing on bad input."""
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.processes import forest_env
from testkit.topics import topic_text
from forest import InvalidInput


def shape(forest, model_id, archive_id):
    """The tree with ids replaced by leaf ranges, so two copies compare equal."""
    nodes = {n.id: n for n in forest.tree(model_id, archive_id)}
    return sorted((n.node_type, n.first_leaf, n.last_leaf, n.depth, n.summary, n.content,
                   None if n.parent_id is None else (nodes[n.parent_id].first_leaf, nodes[n.parent_id].last_leaf))
                  for n in nodes.values())


@pytest.mark.slow
@pytest.mark.parametrize("with_vectors", [True, False])
def test_round_trip_into_another_store_and_model_id(make_forest, tmp_path, with_vectors):
    source = make_forest(data_dir=tmp_path / "a", chunk_size=300)
    original = source.ingest_text("alice", "notes", topic_text("volcanoes", "jazz"))
    document = json.loads(json.dumps(source.export_archive("alice", original.id, with_vectors=with_vectors)))
    assert ("vectors" in document) == with_vectors
    assert all("content" not in n for n in document["nodes"] if n["node_type"] == "SUMMARY_NODE")

    target = make_forest(data_dir=tmp_path / "b")
    target.ingest_text("bob", "already there", topic_text("photosynthesis"))
    copy = target.import_archive("bob", document)
    assert copy.name == "notes" and copy.nodes == original.nodes and copy.leaves == original.leaves
    assert shape(target, "bob", copy.id) == shape(source, "alice", original.id)
    assert target.doctor().healthy
    # Paths are rebuilt with the new ids; search finds the copy's nodes.
    copied = target.tree("bob", copy.id)
    assert all(n.path.endswith(f"{n.id}/") for n in copied)
    best = target.search("bob", "Charlie Parker bebop", top_k=1)[0]
    assert best.node.archive_id == copy.id and "Parker" in best.node.content
    if with_vectors:
        old = source.vectors.get_vectors("alice", [n.id for n in source.tree("alice", original.id)])
        new = target.vectors.get_vectors("bob", [n.id for n in copied])
        assert sorted(round(float(v.sum()), 3) for v in old.values()) == \
               sorted(round(float(v.sum()), 3) for v in new.values())


@pytest.mark.parametrize("corrupt, message", [
    (lambda d: d.update(format="zip"), "not a Memory Forest archive"),
    (lambda d: d.update(version=99), "unsupported export version"),
    (lambda d: d.update(nodes=[]), "no nodes"),
    (lambda d: d["nodes"][-1].update(parent_ref=424242), "not in the export"),
    (lambda d: d["nodes"].append(dict(d["nodes"][-1])), "appears twice"),
    (lambda d: next(n for n in d["nodes"] if n["node_type"] == "LEAF_CHUNK").update(content=""), "has no content"),
    (lambda d: d["nodes"][0].update(parent_ref=d["nodes"][-1]["ref"]), "loop|summary nodes must have children"),
    # Every field is checked: types, ranges, uniqueness, text without NUL, names on one line.
    (lambda d: d["archive"]["settings"].update(documents=["x"]), "documents entry 1 must be an object"),
    (lambda d: d["archive"]["settings"]["documents"][0].update(last_leaf=10**6), "within the archive's"),
    (lambda d: d["archive"]["settings"]["documents"][0].update(file="../../etc/passwd"), "kept file"),
    (lambda d: d["archive"]["settings"].update(chunk_size="big"), "chunk_size must be an integer"),
    (lambda d: d["archive"]["settings"].update(merge_threshold=float("nan")), "merge_threshold must be 0-1"),
    (lambda d: d["archive"].update(name="notes\nrm -rf"), "control characters"),
    (lambda d: d["archive"].update(name=["a list"]), "archive name must be text"),
    (lambda d: d["nodes"][0].update(ref=True), "needs a 'ref'"),
    (lambda d: d["nodes"][1].update(ref=str(d["nodes"][0]["ref"])), "appears twice"),
    (lambda d: _leaf(d).pop("summary_source"), "summary_source is missing"),
    (lambda d: _leaf(d).update(content="bebop\x00"), "without NUL"),
    (lambda d: _leaf(d).update(page_start="3"), "page_start must be a non-negative integer"),
    (lambda d: _leaf(d).update(merge_similarity=float("inf")), "finite number"),
    (lambda d: _leaf(d).update(heading_path="[unclosed"), "heading_path is not JSON"),
    (lambda d: _leaf(d).update(title="two\nlines"), "control characters"),
    (lambda d: _leaf(d, 1).update(leaf_index=0, first_leaf=0, last_leaf=0), "leaf_index values"),
    (lambda d: _summary(d).update(last_leaf=_summary(d)["last_leaf"] + 1), "children span"),
    (lambda d: d.update(merges=[{"merge_order": 1, "first_leaf": 0, "split_leaf": 0, "last_leaf": 1}]), "merge step"),
    (lambda d: d.update(merges=[{"merge_order": 1, "first_leaf": 0, "split_leaf": 1, "last_leaf": 1,
                                 "node_ref": _leaf(d)["ref"]}]), "not a summary node"),
    (lambda d: d["vectors"][str(d["nodes"][0]["ref"])].pop(), "one length"),
    (lambda d: d["vectors"][str(d["nodes"][0]["ref"])].__setitem__(0, float("nan")), "NaN"),
    (lambda d: d["vectors"][str(d["nodes"][0]["ref"])].__setitem__(0, "x"), "lists of numbers"),
    (lambda d: d.update(vectors={str(n["ref"]): [0.5] * 3 for n in d["nodes"]}), "must each have 384 numbers"),
])
def test_bad_exports_are_refused_and_write_nothing(forest, corrupt, message):
    archive = forest.ingest_text("m", "notes", topic_text("jazz"))
    document = json.loads(json.dumps(forest.export_archive("m", archive.id, with_vectors=True)))
    corrupt(document)
    before = forest.db.query("SELECT COUNT(*) FROM memory_nodes")[0][0]
    with pytest.raises(InvalidInput, match=message):
        forest.import_archive("other", document)
    assert forest.db.query("SELECT COUNT(*) FROM memory_nodes")[0][0] == before
    assert forest.archives("other") == []


def test_every_archive_a_face_accepts_can_be_exported_and_imported_again(forest):
    # a name is one line of at most 1,000 characters on ingest as on import (a 1,200-character
    # name was accepted, and its export could not be imported)
    with pytest.raises(InvalidInput, match="at most 1,000"):
        forest.ingest_text("m", "x" * 1200, topic_text("jazz"))
    assert forest.archives("m") == []
    archive = forest.ingest_text("m", "Bebop\nand\tthe  fifties", topic_text("jazz"))
    assert archive.name == "Bebop and the fifties"
    copy = forest.import_archive("other", json.loads(json.dumps(forest.export_archive("m", archive.id))))
    assert copy.name == archive.name


def _leaf(document, number=0):
    return [n for n in document["nodes"] if n["node_type"] == "LEAF_CHUNK"][number]


def _summary(document):
    return next(n for n in document["nodes"] if n["node_type"] == "SUMMARY_NODE")


@pytest.mark.slow
def test_export_and_import_through_the_cli(tmp_path):
    forest_cli = str(Path(sys.executable).parent / "forest")
    doc = tmp_path / "jazz.txt"
    doc.write_text(topic_text("jazz"), encoding="utf-8")
    a, b = forest_env(tmp_path / "a"), forest_env(tmp_path / "b")
    subprocess.run([forest_cli, "ingest", str(doc), "--model-id", "m"], env=a, check=True, capture_output=True)
    out = tmp_path / "jazz.forest.json"
    subprocess.run([forest_cli, "export", "1", "--model-id", "m", "--vectors", "-o", str(out)], env=a, check=True,
                   capture_output=True)
    done = subprocess.run([forest_cli, "import", str(out), "--model-id", "n", "--name", "shared", "--json"], env=b,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["name"] == "shared"
    bad = subprocess.run([forest_cli, "import", str(doc), "--model-id", "n"], env=b, capture_output=True, text=True)
    assert bad.returncode == 1 and "is not JSON" in bad.stderr


def test_imports_over_the_size_or_node_limit_are_refused_and_write_nothing(forest, monkeypatch, tmp_path):
    from forest.tree import archive_io

    archive = forest.ingest_text("m", "notes", topic_text("jazz"))
    document = forest.export_archive("m", archive.id)
    text = json.dumps(document)
    before = forest.db.query("SELECT COUNT(*) FROM memory_nodes")[0][0]
    monkeypatch.setattr(archive_io, "MAX_IMPORT_NODES", len(document["nodes"]) - 1)
    with pytest.raises(InvalidInput, match="imports are limited to"):
        forest.import_archive("m", document)
    monkeypatch.setattr(archive_io, "MAX_IMPORT_BYTES", len(text) - 1)
    with pytest.raises(InvalidInput, match="bytes; imports are limited"):
        archive_io.read_export(text, "upload.json")
    with pytest.raises(InvalidInput, match="is not JSON"):
        archive_io.read_export(b"\xff{", "upload.json")
    assert forest.db.query("SELECT COUNT(*) FROM memory_nodes")[0][0] == before
    assert len(forest.archives("m")) == 1


def _chain_export(depth: int) -> dict:
    """A valid export whose tree is a chain `depth` summary nodes deep above one leaf."""
    nodes = [{"ref": i, "parent_ref": i - 1 if i else None, "node_type": "SUMMARY_NODE", "summary": f"level {i}",
              "summary_source": "test", "first_leaf": 0, "last_leaf": 0} for i in range(depth)]
    nodes.append({"ref": depth, "parent_ref": depth - 1, "node_type": "LEAF_CHUNK", "summary": "the leaf",
                  "summary_source": "test", "content": "Bebop is fast jazz.", "leaf_index": 0, "first_leaf": 0,
                  "last_leaf": 0})
    return {"format": "memory-forest-archive", "version": 1, "archive": {"name": "chain"}, "nodes": nodes}


@pytest.mark.slow
def test_cli_imports_are_bounded_and_deep_trees_are_walked_without_recursion(tmp_path):
    """`forest import /dev/zero` is refused at once (it used to read gigabytes); an export over
    max_document_chars is refused before any embedding (a 9 MB leaf used to take minutes); a
    3,000-deep chain imports and `forest tree` prints it (it died of RecursionError)."""
    forest_cli = str(Path(sys.executable).parent / "forest")
    env = forest_env(tmp_path / "store")

    def run(*args, timeout=120):
        return subprocess.run([forest_cli, *args], env=env, capture_output=True, text=True, timeout=timeout)

    zero = run("import", "/dev/zero", "--model-id", "m", timeout=30)
    assert zero.returncode == 1 and zero.stderr.strip() == "forest: /dev/zero is a character device, not a file"
    folder = run("import", str(tmp_path), "--model-id", "m")
    assert folder.returncode == 1 and "is a directory, not a file" in folder.stderr

    big = _chain_export(0)
    big["nodes"][0].update(parent_ref=None, content="word " * 1_800_000)  # 9 MB in one leaf
    (tmp_path / "big.json").write_text(json.dumps(big), encoding="utf-8")
    refused = run("import", str(tmp_path / "big.json"), "--model-id", "m", timeout=60)
    assert refused.returncode == 1 and "over the limit of 5,000,000 (setting max_document_chars)" in refused.stderr

    (tmp_path / "deep.json").write_text(json.dumps(_chain_export(3000)), encoding="utf-8")
    imported = run("import", str(tmp_path / "deep.json"), "--model-id", "m", "--json", timeout=600)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["depth"] == 3000
    tree = run("tree", str(json.loads(imported.stdout)["id"]), "--model-id", "m")
    assert tree.returncode == 0, tree.stderr
    lines = tree.stdout.splitlines()
    assert lines[0].startswith("[") and "level 0" in lines[1] and lines[-1].strip().endswith("leaf 0: the leaf")
    assert lines[-1].startswith(" " * 6000)  # the leaf, 3,000 levels in


@pytest.mark.slow
def test_an_archive_with_malformed_settings_breaks_no_other_tenants_delete(tmp_path):
    """An archive stored with settings an import now refuses (documents ["x"], as imports let in
    before) used to make every `forest delete` of every model_id fail with "malformed JSON":
    other tenants' deletes work, doctor names the archive, and --repair rewrites its settings."""
    forest_cli = str(Path(sys.executable).parent / "forest")
    env = forest_env(tmp_path / "store")
    notes = tmp_path / "notes.md"
    notes.write_text(topic_text("jazz"), encoding="utf-8")

    def run(*args):
        return subprocess.run([forest_cli, *args], env=env, capture_output=True, text=True, timeout=300)

    ids = {}
    for owner in ("mallory", "bob"):
        done = run("ingest", str(notes), "--model-id", owner, "--json")
        assert done.returncode == 0, done.stderr
        ids[owner] = json.loads(done.stdout)[0]["id"]
    exported = run("export", str(ids["mallory"]), "--model-id", "mallory")
    crafted = json.loads(exported.stdout)
    crafted["archive"]["settings"]["documents"] = ["x"]
    (tmp_path / "crafted.json").write_text(json.dumps(crafted), encoding="utf-8")
    refused = run("import", str(tmp_path / "crafted.json"), "--model-id", "mallory")
    assert refused.returncode == 1
    assert refused.stderr.strip() == "forest: the export's archive settings: documents entry 1 must be an object"

    with sqlite3.connect(tmp_path / "store" / "forest.sqlite3") as db:  # as an earlier import stored it
        db.execute("UPDATE archives SET settings = json_set(settings, '$.documents', json('[\"x\"]')) WHERE id = ?",
                   (ids["mallory"],))
    deleted = run("delete", str(ids["bob"]), "--model-id", "bob")
    assert deleted.returncode == 0, deleted.stderr
    doctor = run("doctor")
    assert doctor.returncode == 1
    assert f"archive {ids['mallory']} has malformed settings: documents entry 1 must be an object" in doctor.stdout
    assert run("doctor", "--repair").returncode == 0
    assert run("doctor").stdout.startswith("healthy")
    assert run("delete", str(ids["mallory"]), "--model-id", "mallory").returncode == 0
