"""Deleted text leaves PostgreSQL's files too (issue 36, item 11): after an archive delete and a
memory deleted through the memory tool, on PostgreSQL + pgvector, no byte of that text is in any
file under the server's data directory (heap, TOAST, indexes, the WAL). The same grep the embedded
store passes (test_erasure.py), over a real PostgreSQL 18 configured as docs/server-stack.md says
(wal_recycle = off, which `forest postgres start` sets for its own server)."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import new_database
from testkit.topics import topic_text
from test_erasure import files_holding

pytestmark = pytest.mark.slow  # every test here takes 1 s of CPU or more

# Made-up words no other test writes: a hit can only be the deleted text.
DOCUMENT_WORD = "Vrellquistadorine"
MEMORY_WORD = "Plonkvistaberry"


def pieces(word: str) -> tuple[str, ...]:
    """The word, its lower case (as the full-text lexemes hold it) and a piece of its end."""
    return word, word.lower(), word.lower()[4:]


def test_deleted_text_leaves_no_byte_in_the_postgres_data_directory(make_forest, postgres, tmp_path):
    forest = make_forest(tmp_path / "store", database_url=new_database(postgres), vector_store="pgvector",
                         chunk_size=300, chunk_overlap=0)
    kept = forest.ingest_text("m", "jazz", topic_text("jazz"))
    doomed = forest.ingest_text("m", "notes", f"The {DOCUMENT_WORD} expedition mapped the glacier.\n\n"
                                + topic_text("photosynthesis"))
    personal = forest.personal
    personal.memory_tool("add", "ann", text=f"My boat is named {MEMORY_WORD}.", metadata={"harbour": MEMORY_WORD})
    personal.memory_tool("add", "ann", text="I sail every Sunday in summer.")
    memory_id = next(m.id for m in personal.memories("ann") if MEMORY_WORD in m.memory)
    personal.memory_tool("update", "ann", memory_id=memory_id, text=f"My yacht is named {MEMORY_WORD}.")
    pgdata = Path(postgres.directory)
    assert files_holding(pgdata, pieces(DOCUMENT_WORD)) and files_holding(pgdata, pieces(MEMORY_WORD)), \
        "the words were written (else this test proves nothing)"

    forest.delete_archive("m", doomed.id)
    assert personal.memory_tool("delete", "ann", memory_id=memory_id).to_dict()["status"] == "success"
    assert files_holding(pgdata, pieces(DOCUMENT_WORD)) == []
    assert files_holding(pgdata, pieces(MEMORY_WORD)) == []
    # what was kept is still found, by words and by meaning
    assert [a.id for a in forest.archives("m")] == [kept.id] and forest.search("m", "bebop")
    found = personal.memory_tool("search", "ann", query="sailing on Sundays").to_dict()["payload"]["results"]
    assert [r["memory"] for r in found] == ["I sail every Sunday in summer."]
