"""A write sent again is done once. A client whose call failed without a reply (the server was
killed, the connection dropped) cannot tell whether the write was done before, and sends it again:
`add_document` returns the archive the first call built, and input `process_memory` (or the memory
tool) already holds word for word is not stored twice. tests/test_faults_server.py kills serve
processes right after each durable write to lose those replies for real."""
from __future__ import annotations

from conftest import topic_text
from forest.tree.build import ArchiveBuilder


def test_a_document_sent_again_under_its_name_returns_the_archive_built_before(forest):
    first = forest.ingest_text("lab", "jazz", topic_text("jazz"), once=True)
    again = forest.ingest_text("lab", "jazz", topic_text("jazz"), once=True)
    assert again.id == first.id and [a.id for a in forest.archives("lab")] == [first.id]
    # another name, or other text, is another document
    renamed = forest.ingest_text("lab", "jazz notes", topic_text("jazz"), once=True)
    other = forest.ingest_text("lab", "jazz", topic_text("volcanoes"), once=True)
    assert len({first.id, renamed.id, other.id}) == 3
    assert forest.doctor().healthy


def test_a_repeat_that_arrives_while_the_first_call_still_builds_keeps_the_first(forest, monkeypatch):
    """Both calls plan their trees at once; the one that writes second finds the other's archive
    under the writer lock, removes its own build and returns the other's."""
    plan = ArchiveBuilder.plan_document
    meanwhile = []

    def plan_while_the_repeat_is_built(self, *args, **kwargs):
        if not meanwhile:  # the first call's planning: the repeat runs whole meanwhile
            monkeypatch.setattr(ArchiveBuilder, "plan_document", plan)
            meanwhile.append(forest.ingest_text("lab", "jazz", topic_text("jazz"), once=True))
        return plan(self, *args, **kwargs)

    monkeypatch.setattr(ArchiveBuilder, "plan_document", plan_while_the_repeat_is_built)
    first = forest.ingest_text("lab", "jazz", topic_text("jazz"), once=True)
    assert first.id == meanwhile[0].id
    assert [a.id for a in forest.archives("lab")] == [first.id]
    assert forest.store.all_archives() == [forest.store.all_archives()[0]]  # no building row left
    assert forest.doctor().healthy


def test_personal_input_said_again_word_for_word_is_stored_once(personal):
    for _ in range(2):
        personal.process_memory("ann", "My sister Mia is a pediatric nurse.")
    personal.process_memory("ann", "My sister Mia is a pediatric nurse.", agent_id="travel")  # another scope
    assert personal.drain(60)
    assert [(m.memory, m.agent_id) for m in personal.memories("ann")] == [
        ("My sister Mia is a pediatric nurse.", None), ("My sister Mia is a pediatric nurse.", "travel")]
    first, repeated, _ = sorted(personal.write_queue("ann")["items"], key=lambda i: i["id"])
    assert first["decision"]["action"] == "stored" and repeated["decision"]["action"] == "repeated"
    assert repeated["decision"]["memory_id"] == first["decision"]["memory_id"]
    added = personal.memory_tool("add", "ann", text="My sister Mia is a pediatric nurse.")["payload"]["results"]
    assert added[0]["event"] == "NONE" and added[0]["memory_id"] == first["decision"]["memory_id"]
    assert len(personal.memories("ann")) == 2
