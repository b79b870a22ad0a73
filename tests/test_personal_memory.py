"""The personal memory service (NeuroMemory v2 and mem0 memory-tool specs) on real stores:
process_memory's two paths, the durable write queue (retries, restarts, a killed process), the
memory tool with history and scoping, contradictions superseding, the graph walk, clearing,
isolation between users."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from testkit.processes import forest_env


def test_process_memory_answers_at_once_and_remembers_in_the_background(personal):
    first = personal.process_memory("zhu", "灿灿是小朱的女儿").to_dict()
    assert first["status"] == "success" and first["metadata"]["has_memory"] is False
    assert set(first) == {"status", "vector_chunks", "graph_relations", "metadata"}
    personal.process_memory("zhu", "灿灿还有一个弟弟，叫帅帅")
    personal.process_memory("zhu", "北京是中国的首都")  # public knowledge: not stored
    assert personal.drain()
    context = personal.process_memory("zhu", "小朱的孩子叫什么？").to_dict()
    assert context["metadata"]["has_memory"] is True and context["metadata"]["retrieval_time_ms"] >= 0
    memories = [c["memory"] for c in context["vector_chunks"]]
    assert "灿灿是小朱的女儿" in memories and "北京是中国的首都" not in memories
    relations = {(r["source"], r["relationship"], r["target"]) for r in context["graph_relations"]}
    assert ("小朱", "女儿", "灿灿") in relations and ("灿灿", "弟弟", "帅帅") in relations  # two hops
    daughter, _, capital = sorted(personal.store.decisions("zhu"), key=lambda d: d.id)[:3]
    assert capital.decision["action"] == "discarded" and capital.decision["privacy"]["label"] == "PUBLIC"
    assert capital.input == ""  # what the privacy filter discarded is not kept, in the queue either
    assert daughter.decision["action"] == "stored" and daughter.input == "灿灿是小朱的女儿"


@pytest.mark.slow
def test_each_input_is_embedded_once_and_input_queued_without_a_vector_is_embedded_by_the_worker(
        personal, monkeypatch):
    embedded: list[str] = []
    real = personal.embedder.embed_passages
    monkeypatch.setattr(personal.embedder, "embed_passages", lambda texts: embedded.extend(texts) or real(texts))
    monkeypatch.setattr(personal.embedder, "embed_query", lambda text: pytest.fail("a second, query embedding"))
    texts = ["I adopted a cat named Miso last spring", "Miso likes to sleep on my keyboard",
             "My sister Ana lives in Lisbon"]
    for text in texts:
        personal.process_memory("ana", text)
    assert personal.drain()
    # once each, alone (what was said before it goes to BM25): the context's vector is the stored one
    assert embedded == texts
    # what an older version queued (no vector) is embedded by the worker, and found like the rest
    personal.store.enqueue("ana", "Ana plays the cello on Sundays", {}, {}, time.time(), time.time())
    assert personal.drain() and embedded[-1] == "Ana plays the cello on Sundays"
    stored = {m.memory for m in personal.memories("ana")}
    assert stored == set(texts) | {"Ana plays the cello on Sundays"}
    context = personal.process_memory("ana", "Who plays the cello?").to_dict()
    assert context["vector_chunks"][0]["memory"] == "Ana plays the cello on Sundays"


def test_a_memory_is_found_by_what_was_said_just_before_it_in_the_same_conversation(make_forest):
    personal = make_forest(memory_privacy_filter=False).personal   # a question is kept too
    start = 1_700_000_000.0
    personal.process_memory("mel", "Caroline: How was the camping trip with the kids?", observed_at=start)
    personal.process_memory("mel", "Melanie: It was awesome, we roasted marshmallows by the fire.",
                            observed_at=start + 5)
    # an hour later, another conversation: what was said then is not this one's context
    personal.process_memory("mel", "Melanie: Loved the concert yesterday.", observed_at=start + 3600)
    personal.process_memory("mel", "Melanie: The band played until midnight.", observed_at=start + 3605)
    assert personal.drain()
    found = [r["memory"] for r in personal.memory_tool("search", "mel", query="camping trip", top_k=2).to_dict()
             ["payload"]["results"]]
    assert set(found) == {"Caroline: How was the camping trip with the kids?",
                          "Melanie: It was awesome, we roasted marshmallows by the fire."}
    stored = {m.memory: m for m in personal.memories("mel")}
    contexts = dict(personal.store.db.query("SELECT memory, context FROM personal_memories WHERE user_id = 'mel'"))
    assert contexts["Melanie: The band played until midnight."] == "Melanie: Loved the concert yesterday."
    assert contexts["Melanie: Loved the concert yesterday."] is None and len(stored) == 4
    # another user's conversation never lends context
    personal.process_memory("ana", "Ana: I moved to Porto.", observed_at=start + 6)
    assert personal.drain()
    assert personal.store.db.query_one("SELECT context FROM personal_memories WHERE user_id = 'ana'")[0] is None
    personal.stop()


def test_a_failing_write_is_retried_and_never_fails_the_retrieval(personal, monkeypatch):
    clock = [1_800_000_000.0]
    personal.clock = lambda: clock[0]
    calls = {"n": 0}
    real = personal.extractor.extract

    def flaky(text, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("graph store unavailable")
        return real(text, *args, **kwargs)

    monkeypatch.setattr(personal.extractor, "extract", flaky)
    reply = personal.process_memory("ann", "I love hiking in the Alps with my sister Mia").to_dict()
    assert reply["status"] == "success"
    assert personal.drain(timeout=5) is True  # nothing is due: the retry waits for its backoff
    state = personal.store.decisions("ann")[0]
    assert state.status == "pending" and state.attempts == 1 and "graph store unavailable" in state.error
    assert personal.memory_tool("search", "ann", query="hiking").to_dict()["payload"]["results"] == []
    clock[0] += 60
    assert personal.drain()
    assert personal.store.decisions("ann")[0].status == "done"
    found = personal.memory_tool("search", "ann", query="hiking").to_dict()["payload"]["results"]
    assert [r["memory"] for r in found] == ["I love hiking in the Alps with my sister Mia"]


@pytest.mark.slow
def test_queued_input_survives_a_killed_process(tmp_path, make_forest):
    data_dir = tmp_path / "store"
    script = ("import os\nfrom forest import MemoryForest\n"
              "forest = MemoryForest()\n"
              "forest.personal.process_memory('kim', 'My daughter Lena starts school in Zurich next week')\n"
              "os._exit(0)  # killed: no drain, no close\n")
    subprocess.run([sys.executable, "-c", script], env=forest_env(data_dir), check=True, timeout=300)
    forest = make_forest(data_dir=data_dir)
    forest.personal.start()
    assert forest.personal.drain()
    memories = forest.personal.store.memories("kim")
    assert [m.memory for m in memories] == ["My daughter Lena starts school in Zurich next week"]  # exactly once
    assert forest.personal.store.queue_state("kim") == {"pending": 0, "done": 1, "failed": 0}


def test_a_server_resumes_queued_input_when_it_starts(make_forest, tmp_path):
    from testkit.processes import free_port
    from forest.serving.http import ThreadServer

    forest = make_forest(data_dir=tmp_path / "store")
    forest.personal.store.enqueue("lee", "I moved to Lisbon last spring", {}, {}, 1_700_000_000.0, 0.0)
    server = ThreadServer(forest, port=free_port()).start()  # as `forest serve` and the workbench do
    try:
        deadline = time.monotonic() + 60  # no drain(): the server's start alone must set the writer going
        while forest.personal.store.queue_state("lee")["done"] == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [m.memory for m in forest.personal.store.memories("lee")] == ["I moved to Lisbon last spring"]
    finally:
        server.stop()


def test_memory_tool_crud_history_scoping_and_batch(personal):
    added = personal.memory_tool("add", "ann", text=["I prefer window seats on long flights",
                                                     "My cat Miso is afraid of the vacuum cleaner"],
                                 agent_id="pre-trip", run_id="trip-7", metadata={"scene": "travel"}).to_dict()
    assert added["operation"] == "add" and added["status"] == "success"
    seat, cat = (r["memory_id"] for r in added["payload"]["results"])
    personal.memory_tool("add", "ann", text="I am allergic to peanuts", agent_id="on-trip")
    hits = personal.memory_tool("search", "ann", query="seat preference on planes", filters={"scene": "travel"}).to_dict()
    assert [r["id"] for r in hits["payload"]["results"]][:1] == [seat]
    assert all(r["metadata"].get("scene") == "travel" for r in hits["payload"]["results"])
    scoped = personal.memory_tool("search", "ann", query="allergy", filters={"agent_id": "on-trip"}).to_dict()
    assert [r["memory"] for r in scoped["payload"]["results"]] == ["I am allergic to peanuts"]
    updated = personal.memory_tool("update", "ann", memory_id=seat, text="I prefer aisle seats on long flights",
                                   agent_id="post-trip").to_dict()
    assert updated["status"] == "success"
    history = updated["payload"]["history"]
    assert [h["event"] for h in history] == ["ADD", "UPDATE"]
    assert history[1]["old_value"] == "I prefer window seats on long flights" and history[1]["actor"] == "post-trip"
    assert personal.memory_tool("delete", "ann", memory_id=cat).to_dict()["status"] == "success"
    assert all(r["id"] != cat for r in personal.memory_tool("search", "ann", query="cat Miso").to_dict()["payload"]["results"])
    everything = personal.memory_tool("history", "ann").to_dict()["payload"]["history"]
    assert [h["event"] for h in everything if h["memory_id"] == cat] == ["ADD", "DELETE"]
    missing = personal.memory_tool("update", "ann", memory_id=999_999, text="x").to_dict()
    assert missing["status"] == "fallback" and "not found" in missing["payload"]["error"]
    assert personal.memory_tool("forget", "ann").to_dict()["status"] == "fallback"
    assert personal.memory_tool("add", "ann", text=[]).to_dict()["status"] == "fallback"
    bad = personal.memory_tool("search", "ann", query="x", filters={"bad key!": 1}).to_dict()
    assert bad["status"] == "fallback" and "metadata key" in bad["payload"]["error"]


def test_a_contradicting_memory_supersedes_the_old_one(personal):
    personal.memory_tool("add", "ann", text="I live in Paris")
    result = personal.memory_tool("add", "ann", text="I live in Berlin").to_dict()
    assert result["payload"]["results"][0]["event"] == "UPDATE"
    live = [m.memory for m in personal.store.memories("ann")]
    assert live == ["I live in Berlin"]
    history = personal.memory_tool("history", "ann").to_dict()["payload"]["history"]
    assert [(h["event"], h["old_value"], h["new_value"]) for h in history][-1] == \
        ("UPDATE", "I live in Paris", "I live in Berlin")
    personal.memory_tool("add", "ann", text="I love jazz")
    assert len(personal.store.memories("ann")) == 2  # another subject: kept side by side



def test_a_write_extracts_only_its_own_facts_and_reads_no_similar_memory_without_a_fact(personal, monkeypatch):
    # A chat says much about one subject; re-extracting each similar memory made a write's cost
    # grow with the conversation (44 ms a turn by turn 400 of a LoCoMo conversation; with Claude,
    # a request per similar memory). Old memories' facts are the stored ones.
    said = [f"I went hiking with my dog on day {n} and we saw the lake" for n in range(12)]
    for text in said:
        personal.memory_tool("add", "hiker", text=text)
    extracted: list[str] = []
    real = personal.extractor.extract
    monkeypatch.setattr(personal.extractor, "extract", lambda text, **kw: extracted.append(text) or real(text, **kw))
    personal.memory_tool("add", "hiker", text="I went hiking with my dog on day 12 and we saw the lake")
    assert extracted == ["I went hiking with my dog on day 12 and we saw the lake"]
    # a negation still finds the statement it takes back, and a single-valued fact its old value
    personal.memory_tool("add", "hiker", text="I did not go hiking with my dog on day 3 and we saw the lake")
    personal.memory_tool("add", "hiker", text="I live in Oslo")
    extracted.clear()
    assert personal.memory_tool("add", "hiker", text="I live in Bergen").to_dict()["payload"]["results"][0]["event"] == "UPDATE"
    assert extracted == ["I live in Bergen"]
    live = {m.memory for m in personal.store.memories("hiker")}
    assert "I went hiking with my dog on day 3 and we saw the lake" not in live and "I live in Oslo" not in live


def test_disabled_memory_writes_nothing(make_forest):
    forest = make_forest(memory_enabled=False)
    assert forest.personal.process_memory("ann", "I love jazz").to_dict()["status"] == "disabled"
    assert forest.personal.memory_tool("add", "ann", text="I love jazz").to_dict()["status"] == "disabled"
    assert forest.db.query("SELECT count(*) FROM personal_write_queue")[0][0] == 0
    assert forest.db.query("SELECT count(*) FROM personal_memories")[0][0] == 0


@pytest.mark.slow
def test_a_question_in_the_first_person_gets_the_users_own_relation(personal):
    personal.memory_tool("add", "ann", text=["I live in Berlin", "I love jazz", "My sister Mia is a nurse"])
    for question in ("Where do I live?", "where do i live", "我住在哪里？"):
        relations = personal.process_memory("ann", question).to_dict()["graph_relations"]
        assert relations[0] == {"source": "ann", "relationship": "lives in", "target": "Berlin"}, question
    trace = personal.debug_process_memory("ann", "Where do I live?")
    assert "[graph search] start: ann" in trace and "ann --[lives in]--> Berlin" in trace


def test_users_are_isolated_and_clearing_is_per_user(personal):
    personal.memory_tool("add", "ann", text="Lena is Ann's daughter")
    personal.memory_tool("add", "bob", text="I like espresso")
    assert personal.memory_tool("search", "bob", query="Lena daughter").to_dict()["payload"]["results"][0]["memory"] \
        == "I like espresso"
    assert personal.process_memory("bob", "Who is Lena?").to_dict()["graph_relations"] == []
    assert personal.user_graph("bob").to_dict()["relations"] and all(
        "Lena" not in (r["source"], r["target"]) for r in personal.user_graph("bob").to_dict()["relations"])
    ann_memory = personal.store.memories("ann")[0].id
    assert personal.memory_tool("delete", "bob", memory_id=ann_memory).to_dict()["status"] == "fallback"
    assert personal.memory_tool("history", "bob", memory_id=ann_memory).to_dict()["payload"]["history"] == []
    assert personal.clear_user_memory("ann").to_dict()["memories_removed"] == 1
    assert personal.store.memories("ann") == [] and personal.user_graph("ann").to_dict()["relations"] == []
    assert [m.memory for m in personal.store.memories("bob")] == ["I like espresso"]


def test_debug_process_memory_explains_every_stage(personal):
    personal.memory_tool("add", "zhu", text=["灿灿是小朱的女儿", "灿灿还有一个弟弟，叫帅帅"])
    trace = personal.debug_process_memory("zhu", "小朱的儿子叫什么")
    for section in ("=== Retrieval ===", "=== Storage decision ===", "=== Timing ===", "=== Raw data ==="):
        assert section in trace
    assert "灿灿是小朱的女儿" in trace and "小朱 --[女儿]--> 灿灿 --[弟弟]--> 帅帅" in trace
    assert "[privacy]" in trace and "total:" in trace


def test_bad_input_is_refused_with_a_clear_message(personal):
    from forest import InvalidInput

    with pytest.raises(InvalidInput, match="user_id"):
        personal.process_memory("", "hello")
    with pytest.raises(InvalidInput, match="input"):
        personal.process_memory("ann", "   ")
    with pytest.raises(InvalidInput, match="metadata"):
        personal.process_memory("ann", "I like tea", metadata={"scene": ["a", "list"]})
    assert json.dumps(personal.memory_tool("search", "ann", query="").to_dict())  # a reply, not an exception


def test_tags_dry_run_stores_nothing_and_applying_is_idempotent(personal):
    personal.memory_tool("add", "ann", text=["I love hiking", "I really love hiking, above all in the Alps",
                                             "I hate crowded beaches", "Hiking boots are my best purchase"])
    dry = personal.tags("ann", dry_run=True).to_dict()
    kinds = {t["tag"]: t["kind"] for t in dry["candidates"]}
    assert kinds.get("hiking") == "preference" and kinds.get("crowded beaches") == "dislike"
    assert dry["applied"] == [] and dry["stored"] == []
    weights = {t["tag"]: t["weight"] for t in dry["candidates"]}
    assert weights["hiking"] == 1.0 and weights["crowded beaches"] == 0.5  # in three memories, in one
    first = personal.tags("ann", dry_run=False).to_dict()
    again = personal.tags("ann", dry_run=False).to_dict()
    assert first["stored"] == again["stored"] and len(first["stored"]) == len(first["candidates"])
    assert personal.tags("bob").to_dict()["candidates"] == []


def test_cli_personal_commands(tmp_path, capsys):
    from forest.cli import main as cli

    store = ["--data-dir", str(tmp_path / "store"), "--user-id", "zhu"]
    assert cli(["personal", "add", "灿灿是小朱的女儿", "灿灿还有一个弟弟，叫帅帅", *store]) == 0
    assert cli(["personal", "process", "我喜欢爵士乐", "--json", *store]) == 0
    capsys.readouterr()
    assert cli(["personal", "graph", *store]) == 0
    graph = capsys.readouterr().out
    assert "小朱 --[女儿]--> 灿灿" in graph and "--[喜欢]--> 爵士乐" in graph  # written before the command exited
    assert cli(["personal", "search", "灿灿的弟弟", "--json", *store]) == 0
    assert "帅帅" in json.loads(capsys.readouterr().out)["payload"]["results"][0]["memory"]
    assert cli(["personal", "history", *store]) == 0 and '"ADD"' in capsys.readouterr().out
    assert cli(["personal", "process", "小朱的儿子叫什么", "--debug", *store]) == 0
    trace = capsys.readouterr().out
    assert "=== Storage decision ===" in trace and "discarded" in trace  # a question is not stored (the seed's example)
    assert cli(["personal", "clear", *store]) == 0 and "removed 3 memories" in capsys.readouterr().out
    assert cli(["personal", "add", " ", *store]) == 1 and "empty" in capsys.readouterr().err


@pytest.mark.slow
def test_input_that_cannot_be_queued_is_never_reported_as_success(personal):
    """The queue is what keeps input through a crash; input it refused is lost, and the caller must
    know. A full disk, for real: SQLite refuses to grow this connection's database past its size
    (max_page_count), so the queue's insert fails with SQLITE_FULL."""
    conn = personal.db.connection()
    conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0]}")
    try:
        reply = personal.process_memory("ann", "I grew up in a small village by the sea. " * 90).to_dict()
    finally:
        conn.execute("PRAGMA max_page_count = 1073741823")
    assert reply["status"] == "fallback" and reply["metadata"]["queued"] is False
    assert "not queued" in reply["metadata"]["error"] and "OperationalError" in reply["metadata"]["error"]
    assert personal.store.queue_state("ann") == {"pending": 0, "done": 0, "failed": 0}
    again = personal.process_memory("ann", "I grew up in a small village by the sea.").to_dict()
    assert again["status"] == "success" and again["metadata"]["queued"] is True


def test_a_contradiction_inside_one_worker_batch_supersedes_as_when_written_one_after_the_other(personal):
    batches: list[int] = []
    claim = personal.store.claim
    personal.store.claim = lambda *args, **kwargs: (lambda got: batches.append(len(got)) or got)(claim(*args, **kwargs))
    now = time.time()
    for n, text in enumerate(["I live in Paris", "I live in Berlin"]):
        personal.store.enqueue("ann", text, {}, {}, now + n, now)  # queued together: taken in one batch
    personal.start()
    assert personal.drain()
    assert 2 in batches
    assert [m.memory for m in personal.memories("ann")] == ["I live in Berlin"]
    history = personal.memory_tool("history", "ann").to_dict()["payload"]["history"]
    assert [(h["event"], h["old_value"], h["new_value"]) for h in history] == [
        ("ADD", None, "I live in Paris"), ("UPDATE", "I live in Paris", "I live in Berlin")]
