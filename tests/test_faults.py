"""Fault injection on real processes, SQLite and Chroma (the machinery is testkit/faults.py;
bench/bench_faults.py runs it with 200+ kills): a writer SIGKILLed in the middle of an ingest,
append, join, personal writes or compaction leaves a store that `forest doctor` finds healthy or
repairs, with nothing lost, written twice or half-written; two writer processes share one write
queue; a Claude call that hangs does not hold up other writes."""
from __future__ import annotations

import json
import signal
import time
from multiprocessing.connection import wait

import pytest

from testkit.fake_anthropic import FakeAnthropic
from testkit import faults
from forest.personal.memory_store import PersonalStore


@pytest.fixture(scope="module")
def ctx():
    return faults.context()


@pytest.mark.parametrize("operation", list(faults.OPERATIONS))
def test_a_writer_killed_anywhere_leaves_a_whole_store(ctx, tmp_path, operation):
    """Killed right after each of its durable writes in turn (every state a crash can leave), and
    at random moments: afterwards the store is the one before or the one after, never between."""
    line = faults.baseline(ctx, operation, tmp_path)
    assert faults.kill_anywhere(ctx, line, tmp_path, operation) == []


def test_two_worker_processes_share_the_queue_and_take_over_a_killed_ones_claim(ctx, tmp_path, make_forest):
    """Both take items from one queue at once, never the same one and never one user's at once
    (each user's input is written in order); when one is killed holding a claim, the other writes
    its items at once (not when the lease runs out): each input is written exactly once."""
    forest = make_forest(tmp_path / "store")
    users = {f"{faults.USER}-{name.lower()}": [f"My friend {name} plays the {instrument} on weekends."
                                               for instrument in ("piano", "cello", "oboe", "harp", "tuba", "banjo",
                                                                  "flute", "drums")]
             for name in ("Ada", "Bo", "Cy", "Di", "Ed", "Flo")}
    queue = PersonalStore(forest.db)
    queued = [(user, texts[position]) for position in range(8) for user, texts in users.items()]
    for user, text in queued:
        queue.enqueue(user, text, {"agent_id": None, "run_id": None}, {}, time.time(), time.time())
    workers = [faults.start_queue_worker(ctx, faults.Store(str(tmp_path / "store"))) for _ in range(2)]
    for _, channel in workers:
        channel.send("go")
    claimed: list[int] = []
    while len(set(claimed)) < 2:  # until both have taken items
        for ready in wait([channel for _, channel in workers]):
            message = ready.recv()
            assert message[0] == "claimed", message
            claimed.append(next(i for i, (_, c) in enumerate(workers) if c is ready))
    victim, _ = workers[claimed[-1]]  # the last to claim holds its fresh lease
    victim.kill()
    victim.join()
    assert victim.exitcode == -signal.SIGKILL
    survivor, channel = workers[1 - claimed[-1]]
    while (message := channel.recv())[0] == "claimed":
        pass
    assert message == ("drained", True)
    survivor.kill()
    survivor.join()
    rows = forest.db.query("SELECT user_id, status, decision FROM personal_write_queue ORDER BY id")
    assert [r["status"] for r in rows] == ["done"] * len(queued)
    for user, texts in users.items():
        memories = {m.id: m.memory for m in forest.personal.memories(user)}
        decisions = [json.loads(r["decision"]) for r in rows if r["user_id"] == user]
        stored = [d["memory_id"] for d in decisions if d["action"] == "stored"]
        assert sorted(stored) == sorted(memories)  # each stored item is one memory, none twice
        assert sorted(memories.values()) == sorted(t for t, d in zip(texts, decisions) if d["action"] == "stored")
        assert stored == sorted(stored)  # the user's input written in the order it came


def test_a_claude_call_that_hangs_holds_up_no_other_write(make_forest, monkeypatch):
    """The write worker's Claude call hangs (the API stalls 60 s; the client's timeout is 4 s):
    meanwhile other writes commit at once; the hung input stays in the queue, and is written
    exactly once when the retry gets an answer."""
    with FakeAnthropic() as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        # only its privacy check hangs, and only the first time
        fake.hang = lambda prompt: "Lisbon" in prompt and "PRIVATE" in prompt and fake.held == 0
        fake.respond = lambda prompt: json.dumps({"label": "PRIVATE", "reason": "about the user"}
                                                 if "PRIVATE" in prompt else {"triples": []})
        forest = make_forest(anthropic_api_key="test-key", summarizer="textrank", llm_retries=0,
                             llm_timeout_seconds=4.0)
        personal, research = forest.personal, forest.research  # loaded before the hang: only writes in it
        forest.embedder.embed_query("warm up")
        personal.process_memory("ann", "My grandmother grew up in Lisbon.")
        assert fake.hung.wait(60)
        personal.process_memory("ann", "I am allergic to peanuts.")
        added = personal.memory_tool("add", "ann", text="I drive a blue Volvo.").to_dict()
        research.add_note("m", "s", "finding", "Fusion adds 8% inference time.")
        research.update_knowledge("m", "feature fusion", "Helps at 5-shot.")
        # The hung call is still open: nothing waited for it.
        assert fake.holding == 1 and added["status"] == "success"
        deadline = time.monotonic() + 60  # drain waits for what is due; the retry is due 2 s after the failure
        while any(i["status"] == "pending" for i in personal.write_queue("ann").to_dict()["items"]) and time.monotonic() < deadline:
            assert personal.drain(60)
            time.sleep(0.2)
    assert fake.held == 1 and fake.holding == 0  # llm_retries=0 and the SDK retries nothing: the queue does
    memories = [m.memory for m in personal.memories("ann")]
    assert sorted(memories) == sorted(["My grandmother grew up in Lisbon.", "I am allergic to peanuts.",
                                       "I drive a blue Volvo."])
    decisions = {i["input"]: i for i in personal.write_queue("ann").to_dict()["items"]}
    hung = decisions["My grandmother grew up in Lisbon."]
    assert hung["status"] == "done" and hung["attempts"] == 2 and "did not answer" in hung["error"]
    assert hung["decision"]["privacy"]["decided_by"] == "claude:claude-sonnet-4-5"
    assert [n.text for n in research.workspace("m", "s")] == ["Fusion adds 8% inference time."]
