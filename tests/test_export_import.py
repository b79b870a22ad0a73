"""Export an archive to JSON and import it elsewhere: same tree, new ids, nothing on bad input."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import forest_env, topic_text
from forest import InvalidInput


def shape(forest, model_id, archive_id):
    """The tree with ids replaced by leaf ranges, so two copies compare equal."""
    nodes = {n.id: n for n in forest.tree(model_id, archive_id)}
    return sorted((n.node_type, n.first_leaf, n.last_leaf, n.depth, n.summary, n.content,
                   None if n.parent_id is None else (nodes[n.parent_id].first_leaf, nodes[n.parent_id].last_leaf))
                  for n in nodes.values())


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
])
def test_bad_exports_are_refused_and_write_nothing(forest, corrupt, message):
    archive = forest.ingest_text("m", "notes", topic_text("jazz"))
    document = forest.export_archive("m", archive.id)
    corrupt(document)
    before = forest.db.query("SELECT COUNT(*) FROM memory_nodes")[0][0]
    with pytest.raises(InvalidInput, match=message):
        forest.import_archive("other", document)
    assert forest.db.query("SELECT COUNT(*) FROM memory_nodes")[0][0] == before
    assert forest.archives("other") == []


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
    assert bad.returncode == 1 and "not a JSON export" in bad.stderr


def test_imports_over_the_size_or_node_limit_are_refused_and_write_nothing(forest, monkeypatch, tmp_path):
    from forest import archive_io

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
    with pytest.raises(InvalidInput, match="not a JSON export"):
        archive_io.read_export(b"\xff{", "upload.json")
    assert forest.db.query("SELECT COUNT(*) FROM memory_nodes")[0][0] == before
    assert len(forest.archives("m")) == 1
