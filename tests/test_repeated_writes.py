"""A write sent again is done once. A client whose call failed without a reply (the server was
killed, the connection dropped) cannot tell whether the write was done before, and sends it again:
`add_document` returns the archive the first call built (a document is in a library once), and input `process_memory` (or the memory
tool) already holds word for word is not stored twice. tests/test_faults_server.py kills serve
processes right after each durable write to lose those replies for real."""
from __future__ import annotations

import anyio
import pytest

from testkit.topics import topic_text
from forest.errors import AlreadyInLibrary
from forest.tree.build import ArchiveBuilder


@pytest.mark.slow
def test_a_document_sent_again_is_the_archive_built_before(forest):
    first = forest.ingest_text("lab", "jazz", topic_text("jazz"))
    with pytest.raises(AlreadyInLibrary, match=f"already in the library as archive {first.id} \\(jazz\\): the same text"):
        forest.ingest_text("lab", "jazz", topic_text("jazz"))
    with pytest.raises(AlreadyInLibrary) as renamed:   # the same text under another name: the same document
        forest.ingest_text("lab", "jazz notes", topic_text("jazz"))
    assert renamed.value.archive_id == first.id and [a.id for a in forest.archives("lab")] == [first.id]
    other = forest.ingest_text("lab", "jazz", topic_text("volcanoes"))   # other text: another document
    kept = forest.ingest_text("lab", "jazz", topic_text("jazz"), on_duplicate="keep")
    assert len({first.id, other.id, kept.id}) == 3
    replaced = forest.ingest_text("lab", "jazz", topic_text("jazz"), on_duplicate="replace")
    assert first.id not in forest.archive_ids("lab") and replaced.id in forest.archive_ids("lab")
    assert forest.doctor().healthy


@pytest.mark.slow
def test_add_document_sent_again_returns_the_archive_built_before(forest):
    from forest.serving.tools import ForestTools

    tools = ForestTools(forest)
    first = anyio.run(tools.add_document, "lab", "jazz", topic_text("jazz"), _NoContext())
    again = anyio.run(tools.add_document, "lab", "jazz", topic_text("jazz"), _NoContext())
    assert again["archive"]["id"] == first["archive"]["id"] and "already_in_library" not in first
    assert again["already_in_library"].startswith(f"already in the library as archive {first['archive']['id']}")


class _NoContext:
    """What add_document reports progress to, outside an MCP request."""

    async def report_progress(self, *args) -> None:
        raise ValueError("no request")


@pytest.mark.slow
def test_a_repeat_that_arrives_while_the_first_call_still_builds_keeps_the_first(forest, monkeypatch):
    """Both calls plan their trees at once; the one that writes second finds the other's archive
    under the writer lock, removes its own build and says which archive holds the document."""
    plan = ArchiveBuilder.plan_document
    meanwhile = []

    def plan_while_the_repeat_is_built(self, *args, **kwargs):
        if not meanwhile:  # the first call's planning: the repeat runs whole meanwhile
            monkeypatch.setattr(ArchiveBuilder, "plan_document", plan)
            meanwhile.append(forest.ingest_text("lab", "jazz", topic_text("jazz")))
        return plan(self, *args, **kwargs)

    monkeypatch.setattr(ArchiveBuilder, "plan_document", plan_while_the_repeat_is_built)
    with pytest.raises(AlreadyInLibrary) as held:
        forest.ingest_text("lab", "jazz", topic_text("jazz"))
    assert held.value.archive_id == meanwhile[0].id
    assert [a.id for a in forest.archives("lab")] == [meanwhile[0].id]
    assert forest.store.all_archives() == [forest.store.all_archives()[0]]  # no building row left
    assert forest.doctor().healthy


def test_personal_input_said_again_word_for_word_is_stored_once(personal):
    for _ in range(2):
        personal.process_memory("ann", "My sister Mia is a pediatric nurse.")
    personal.process_memory("ann", "My sister Mia is a pediatric nurse.", agent_id="travel")  # another scope
    assert personal.drain(60)
    assert [(m.memory, m.agent_id) for m in personal.memories("ann")] == [
        ("My sister Mia is a pediatric nurse.", None), ("My sister Mia is a pediatric nurse.", "travel")]
    first, repeated, _ = sorted(personal.write_queue("ann").to_dict()["items"], key=lambda i: i["id"])
    assert first["decision"]["action"] == "stored" and repeated["decision"]["action"] == "repeated"
    assert repeated["decision"]["memory_id"] == first["decision"]["memory_id"]
    added = personal.memory_tool("add", "ann", text="My sister Mia is a pediatric nurse.").to_dict()["payload"]["results"]
    assert added[0]["event"] == "NONE" and added[0]["memory_id"] == first["decision"]["memory_id"]
    assert len(personal.memories("ann")) == 2
