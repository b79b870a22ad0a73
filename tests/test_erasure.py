"""Deleted text leaves the disk: after clear_user_memory, a delete through the memory tool, an
archive delete, and for input the privacy filter discarded, no byte of that text is in any file
under the data directory (SQLite and its WAL, the FTS index's segments, Chroma's files, kept
PDFs), while the store is open and after it is closed. Real SQLite, Chroma and PDFs; the words
searched for are unique, so a hit can only be the deleted text."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pymupdf
import pytest

from conftest import ROOT

# A made-up word no other text contains, its stem as the BM25 index keeps it (lower case), and a
from testkit.topics import topic_text
# piece of its end (an FTS segment may store a term after the prefix it shares with the one before).
WORD = "Qzvorblethian"
PIECES = (WORD, WORD.lower(), WORD.lower()[3:])


def files_holding(data_dir: Path, pieces: tuple[str, ...] = PIECES) -> list[str]:
    """Every file under `data_dir` that holds one of `pieces` (UTF-8), with the piece."""
    needles = [p.encode() for p in pieces]
    found = []
    for path in sorted(data_dir.rglob("*")):
        if path.is_file():
            content = path.read_bytes()
            found += [f"{path.relative_to(data_dir)}: {n.decode()}" for n in needles if n in content]
    return found


def test_clear_user_memory_leaves_no_byte_of_the_users_words(make_forest, tmp_path):
    forest = make_forest(tmp_path / "store")
    personal = forest.personal
    personal.process_memory("ann", f"My grandmother's village {WORD} is where I grew up.")
    personal.process_memory("ann", f"I spent every summer in {WORD} with my cousins.")
    personal.memory_tool("add", "ann", text=f"My dog is called {WORD}.", metadata={"place": WORD})
    assert personal.drain()
    memory_id = personal.memories("ann")[-1].id
    personal.memory_tool("update", "ann", memory_id=memory_id, text=f"My cat is called {WORD}.")
    personal.process_memory("bob", "I like espresso.")
    assert personal.drain()
    assert files_holding(tmp_path / "store"), "the words were stored (else this test proves nothing)"

    assert personal.clear_user_memory("ann").to_dict()["memories_removed"] == 3
    assert files_holding(tmp_path / "store") == []       # open: the WAL was checkpointed and truncated
    assert [m.memory for m in personal.memories("bob")] == ["I like espresso."]
    assert personal.memory_tool("search", "bob", query="espresso").to_dict()["payload"]["results"]
    personal.stop()
    forest.close()
    assert files_holding(tmp_path / "store") == []


def test_a_memory_deleted_with_the_memory_tool_leaves_no_byte_behind(make_forest, tmp_path):
    forest = make_forest(tmp_path / "store", memory_privacy_filter=False)
    personal = forest.personal
    at = 1_700_000_000.0
    personal.process_memory("ann", f"Our summer house is in {WORD}, by the lake.", observed_at=at,
                            metadata={"note": f"near {WORD}"})
    personal.process_memory("ann", "We go there every August with the kids.", observed_at=at + 5)
    assert personal.drain()
    doomed, kept = personal.memories("ann")
    # the second was said right after the first: the first is its conversation context
    assert forest.db.query_one("SELECT context_id FROM personal_memories WHERE id = ?", (kept.id,))[0] == doomed.id
    personal.memory_tool("update", "ann", memory_id=doomed.id, text=f"Our summer house is near {WORD}.")

    reply = personal.memory_tool("delete", "ann", memory_id=doomed.id).to_dict()
    assert reply["status"] == "success"
    assert [(h["event"], h["old_value"], h["new_value"]) for h in reply["payload"]["history"]] == [
        ("ADD", None, None), ("UPDATE", None, None), ("DELETE", None, None)]  # what happened, not what it said
    assert files_holding(tmp_path / "store") == []
    # the memory said after it is still found by its own words, no longer by the deleted context
    found = personal.memory_tool("search", "ann", query="every August kids").to_dict()["payload"]["results"]
    assert [r["id"] for r in found] == [kept.id]
    personal.stop()
    forest.close()
    assert files_holding(tmp_path / "store") == []


@pytest.mark.slow
def test_input_the_privacy_filter_discards_is_not_kept_nor_lent_as_context(make_forest, tmp_path):
    forest = make_forest(tmp_path / "store")
    personal = forest.personal
    at = 1_700_000_000.0
    personal.process_memory("ann", f"{WORD} is the capital city of the republic of Xandria.", observed_at=at)
    personal.process_memory("ann", "My sister Mia lives in Lisbon.", observed_at=at + 5)
    assert personal.drain()
    first, second = sorted(personal.write_queue("ann").to_dict()["items"], key=lambda i: i["id"])
    assert first["decision"]["action"] == "discarded" and second["decision"]["action"] == "stored"
    assert [m.memory for m in personal.memories("ann")] == ["My sister Mia lives in Lisbon."]
    assert forest.db.query_one("SELECT context FROM personal_memories WHERE user_id = 'ann'")[0] is None
    assert files_holding(tmp_path / "store") == []


def _pdf(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    for n, line in enumerate([f"The {WORD} reactor runs on molten salt.", *topic_text("volcanoes").split(". ")]):
        page.insert_text((50, 80 + 16 * n), line[:90], fontname="helv", fontsize=10)
    doc.save(path)
    return path


@pytest.mark.slow
def test_a_deleted_archive_leaves_no_byte_of_its_document(make_forest, tmp_path):
    forest = make_forest(tmp_path / "store", chunk_size=300, chunk_overlap=0)
    kept = forest.ingest_text("m", "jazz", topic_text("jazz"))
    text = forest.ingest_text("m", "notes", f"The {WORD} expedition mapped the glacier.\n\n" + topic_text("photosynthesis"))
    pdf = forest.ingest_file(_pdf(tmp_path / "reactor.pdf"), "m")
    sources = tmp_path / "store" / "sources"
    assert list(sources.iterdir()) and files_holding(tmp_path / "store")

    for archive in (text, pdf):
        forest.delete_archive("m", archive.id)
    assert files_holding(tmp_path / "store") == []
    assert list(sources.iterdir()) == []  # the kept PDF is gone too
    assert [a.id for a in forest.archives("m")] == [kept.id] and forest.search("m", "bebop")
    forest.close()
    assert files_holding(tmp_path / "store") == []


def test_an_erasure_a_killed_process_left_half_done_is_finished_at_the_next_open(make_forest, tmp_path):
    """A process deletes a memory and is killed before merging the index and truncating the WAL:
    the mark it left in the deleting transaction makes the next open of the store finish it."""
    forest = make_forest(tmp_path / "store")
    forest.personal.memory_tool("add", "ann", text=f"My boat is named {WORD}.")
    memory_id = forest.personal.memories("ann")[0].id
    forest.close()
    killed = ("import os, sys\nfrom forest.storage.sql.sqlite import SQLiteDatabase as Database\nfrom forest.personal.memory_store import PersonalStore\n"
              "db = Database(sys.argv[1])\nwith db.transaction() as conn:\n"
              f"    PersonalStore(db).delete(conn, 'ann', {memory_id}, 1.0, 'test')\nos._exit(0)\n")
    subprocess.run([sys.executable, "-c", killed, str(tmp_path / "store" / "forest.sqlite3")], check=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert files_holding(tmp_path / "store")  # the index's old segment, the WAL: the words are still there
    reopened = make_forest(tmp_path / "store")
    assert reopened.db.query("SELECT * FROM pending_erasures") == []
    assert files_holding(tmp_path / "store") == []


@pytest.mark.parametrize("question", ["My card PIN number's 4471: which paper covers bebop?"])
def test_a_research_question_is_remembered_without_its_secrets(make_forest, tmp_path, question):
    forest = make_forest(tmp_path / "store", chunk_size=300, chunk_overlap=0)
    forest.ingest_text("m", "jazz", topic_text("jazz"))
    forest.ask_in_session("m", "s1", question)
    stored = json.dumps([dict(r) for r in forest.db.query("SELECT content FROM session_messages")] +
                        [dict(r) for r in forest.db.query("SELECT content FROM episodic_events")])
    assert "[PIN]" in stored and "4471" not in stored
    forest.close()
    assert files_holding(tmp_path / "store", ("4471",)) == []
