"""Hybrid retrieval of personal memories and the write path's hardening
(leases, worker state, embedder tags, fact-level superseding), on real SQLite and the real embedder."""
from __future__ import annotations

import sqlite3

import pytest

from forest.personal.memory_store import EmbedderMismatch
from forest.personal.timeframe import periods_in

DISTRACTORS = ["Tom's brother Max works at Initech as a tester.", "My wife works at a bakery downtown.",
               "Where people work matters a lot to Tom, he says.", "Tom went skiing in the Alps last winter.",
               "Tom likes old jazz records.", "I work from home on Fridays.", "Globex makes cheap umbrellas."]


def _texts(reply):
    return [r["memory"] for r in reply["payload"]["results"]]


def test_the_graph_route_answers_a_two_hop_question_no_single_memory_answers(personal, monkeypatch):
    personal.memory_tool("add", "u1", text=["Tom is married to Anna.", "Anna works at Pinewood Labs.", *DISTRACTORS])
    question = "Where does Tom's wife work?"
    found = _texts(personal.memory_tool("search", "u1", query=question, top_k=9).to_dict())
    assert {"Tom is married to Anna.", "Anna works at Pinewood Labs."} <= set(found[:4])
    # Without the graph route the second hop (Anna's job shares only "work" with the question)
    # falls behind distractors that share more words.
    monkeypatch.setattr(personal.recall, "_graph_memories", lambda user_id, query: {})
    flat = _texts(personal.memory_tool("search", "u1", query=question, top_k=9).to_dict())
    assert flat.index("Anna works at Pinewood Labs.") > found.index("Anna works at Pinewood Labs.")


def test_hybrid_search_finds_an_exact_rare_term_and_a_paraphrase(personal):
    personal.memory_tool("add", "u1", text=["My locker code word is XQ-77 at the gym.", "I adore Sichuan food.",
                                            *DISTRACTORS])
    assert _texts(personal.memory_tool("search", "u1", query="XQ-77", top_k=1).to_dict()) == ["My locker code word is XQ-77 at the gym."]
    assert _texts(personal.memory_tool("search", "u1", query="spicy Chinese cuisine", top_k=1).to_dict()) == \
        ["I adore Sichuan food."]


@pytest.mark.slow
def test_time_in_the_question_prefers_what_was_said_then(personal):
    may, june = 1683500000.0, 1686200000.0  # 8 May 2023, 8 June 2023
    personal.process_memory("u1", "I went to a pottery class with my friends.", observed_at=may)
    personal.process_memory("u1", "I went to a pottery class with my cousin.", observed_at=june)
    for n, text in enumerate(DISTRACTORS):
        personal.process_memory("u1", text, observed_at=may - 86400 * (n + 40))
    assert personal.drain(60)
    assert periods_in("What did I do in June 2023?") == [(2023, 6, None)]
    for month, expected in (("May", "friends"), ("June", "cousin")):
        top = _texts(personal.memory_tool("search", "u1", query=f"pottery class in {month} 2023", top_k=1).to_dict())
        assert expected in top[0]


def test_process_memory_context_uses_the_same_retrieval(personal):
    personal.memory_tool("add", "u1", text=["Tom is married to Anna.", "Anna works at Pinewood Labs.", *DISTRACTORS])
    context = personal.process_memory("u1", "Where does Tom's wife work?").to_dict()
    assert {"Tom is married to Anna.", "Anna works at Pinewood Labs."} <= {c["memory"] for c in context["vector_chunks"][:5]}


def test_queue_items_are_claimed_once_and_finishing_checks_the_claim(personal):
    store = personal.store
    personal.stop()
    ids = [store.enqueue("u1", f"note {n}", {}, {}, 1.0, 1.0) for n in range(4)]
    first = store.claim(10.0, 3, "worker-a", 60)
    assert [q.id for q in first] == ids[:3]
    # u1's fourth note waits for worker-a: written before the three, it would be out of order
    assert store.claim(10.0, 3, "worker-b", 60) == []
    # worker-a's lease runs out; worker-c takes the items in order and worker-a can no longer finish them
    again = store.claim(100.0, 3, "worker-c", 60)
    assert [q.id for q in again] == ids[:3]
    with personal.db.transaction() as conn:
        assert not store.holds(conn, first[0], 100.0)
        assert store.finish(conn, first[0], {"action": "stored"}) is False
        assert store.finish(conn, again[0], {"action": "stored"}) is True
    assert store.queue_state("u1")["done"] == 1


def test_workers_share_the_queue_by_user_and_write_each_users_input_in_order(personal):
    """Two workers claim at once: each takes users the other does not hold, oldest first, and a
    user's later input is claimed only once the earlier is written."""
    store = personal.store
    personal.stop()
    queued = {user: [store.enqueue(user, f"{user} note {n}", {}, {}, 1.0 + n, 1.0) for n in range(2)]
              for user in ("u1", "u2", "u3")}
    a = store.claim(10.0, 1, "worker-a", 60)
    b = store.claim(10.0, 1, "worker-b", 60)
    assert [q.id for q in a] == [queued["u1"][0]] and [q.id for q in b] == [queued["u2"][0]]
    c = store.claim(10.0, 10, "worker-c", 60)  # u1 and u2 are held: only u3's, both, in order
    assert [q.id for q in c] == queued["u3"]
    with personal.db.transaction() as conn:
        assert store.finish(conn, a[0], {"action": "stored"})
    assert [q.id for q in store.claim(10.0, 10, "worker-b", 60)] == [queued["u1"][1]]


def test_the_worker_survives_any_exception_and_reports_its_state(personal, monkeypatch):
    calls = {"n": 0}
    real_claim = personal.store.claim

    def flaky_claim(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise sqlite3.OperationalError("database is locked")
        return real_claim(*args, **kwargs)

    monkeypatch.setattr(personal.store, "claim", flaky_claim)
    personal.process_memory("u1", "I keep bees on my balcony.")
    assert personal.drain(30)
    state = personal.worker_state().to_dict()
    assert state["running"] and state["failures"] == 1 and "database is locked" in state["last_error"]
    assert state["queue"]["done"] == 1 and state["queue"]["pending"] == 0
    assert [m.memory for m in personal.memories("u1")] == ["I keep bees on my balcony."]


def test_vectors_of_another_embedder_are_refused_with_a_clear_message(personal):
    personal.memory_tool("add", "u1", text="I play the cello.")
    with personal.db.transaction() as conn:
        conn.execute("UPDATE personal_memories SET embedder = 'other/model'")
    reply = personal.memory_tool("search", "u1", query="cello").to_dict()
    assert reply["status"] == "fallback" and "other/model" in reply["payload"]["error"] and "re-embed" in \
        reply["payload"]["error"].lower()
    with pytest.raises(EmbedderMismatch):
        personal.store.vectors("u1", personal.embedder.name)
    assert personal.reembed("u1") == 1
    assert _texts(personal.memory_tool("search", "u1", query="cello").to_dict()) == ["I play the cello."]


def test_superseding_retires_the_fact_not_the_whole_memory(personal):
    personal.memory_tool("add", "ann", text="I live in Berlin, and my sister Mia lives with me.")
    personal.memory_tool("add", "ann", text="I live in Paris now, my sister Mia does not.")
    relations = {(r["source"], r["relationship"], r["target"]) for r in personal.user_graph("ann").to_dict()["relations"]}
    assert ("ann", "lives in", "Paris") in relations and ("ann", "sister", "Mia") in relations
    assert ("ann", "lives in", "Berlin") not in relations


def test_a_fact_shared_by_two_memories_survives_deleting_one(personal):
    first = personal.memory_tool("add", "ann", text="My sister Mia works at Globex.").to_dict()["payload"]["results"][0]
    personal.memory_tool("add", "ann", text="I have a sister, my sister Mia is great at chess.")
    personal.memory_tool("delete", "ann", memory_id=first["memory_id"])
    relations = {(r["source"], r["relationship"], r["target"]) for r in personal.user_graph("ann").to_dict()["relations"]}
    assert ("ann", "sister", "Mia") in relations
    assert ("Mia", "works at", "Globex") not in relations
