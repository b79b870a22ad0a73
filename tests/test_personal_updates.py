"""Updates as people say them supersede the earlier statement (forest.personal.updates): along the
person's path over MCP, and for additive, Chinese, ending and compound statements."""
from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import httpx
import pytest

from testkit.processes import free_port


def _say(personal, user: str, *texts: str) -> None:
    for text in texts:
        personal.process_memory(user, text)
        assert personal.drain(60)


def _memories(personal, user: str) -> list[str]:
    return [m.memory for m in personal.store.memories(user)]


def _live_places(personal, user: str) -> set[str]:
    return {t for s, r, t in personal.store.triples(user) if r in ("lives in", "住在")}


def _mcp(url: str, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def run():
        client = create_mcp_http_client()
        async with client, streamable_http_client(url + "/mcp", http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return [await session.call_tool(name, args) for name, args in calls]

    replies = asyncio.run(run())
    assert not any(r.is_error for r in replies), [r.content for r in replies]
    return [json.loads(r.content[0].text) for r in replies]


@pytest.mark.slow
def test_the_berlin_munich_exchange_over_mcp_leaves_munich_only(make_forest):
    from forest.serving.http import ThreadServer

    forest = make_forest()
    server = ThreadServer(forest, port=free_port()).start()
    try:
        _mcp(server.url, [("process_memory", {"user_id": "ann", "input": text}) for text in (
            "I live in Berlin and I work at the Max Planck Institute.", "Actually I moved: I live in Munich now.")])
        assert forest.personal.drain(60)
        found = forest.personal.memory_tool("search", "ann", query="Where do I live?").to_dict()["payload"]["results"]
        texts = " ".join(r["memory"] for r in found)
        assert "Munich" in texts and "Berlin" not in texts, texts
        assert any("Max Planck" in m for m in _memories(forest.personal, "ann"))   # the unaffected part stays
        history = forest.personal.memory_tool("history", "ann").to_dict()["payload"]["history"]
        update = [e for e in history if e["event"] == "UPDATE"]
        assert update and "Berlin" in update[0]["old_value"] and "supersedes" in update[0]["reason"]
        assert "Berlin" not in (update[0]["new_value"] or "")
        assert _live_places(forest.personal, "ann") == {"Munich"}   # the edge to Berlin is ended
        now, then = _mcp(server.url, [("get_user_graph", {"user_id": "ann"}),
                                      ("get_user_graph", {"user_id": "ann", "include_ended": True})])
        assert {r["target"] for r in now["relations"] if r["relationship"] == "lives in"} == {"Munich"}
        assert "Berlin" not in now["entities"]
        places = {r["target"]: r for r in then["relations"] if r["relationship"] == "lives in"}
        assert set(places) == {"Berlin", "Munich"}
        # closed, not erased: Berlin held until the statement that moved ann to Munich
        assert places["Berlin"]["valid_to"] == places["Munich"]["valid_from"] and places["Munich"]["valid_to"] is None
        assert places["Berlin"]["valid_from"] <= places["Berlin"]["valid_to"]
        # the same over REST (GET: read-only), and a flag that is no boolean is a one-line 400
        rest = httpx.get(f"{server.url}/tools/get_user_graph", params={"user_id": "ann", "include_ended": "true"})
        assert rest.status_code == 200 and rest.json()["relations"] == then["relations"]
        bad = httpx.get(f"{server.url}/tools/get_user_graph", params={"user_id": "ann", "include_ended": "maybe"})
        assert bad.status_code == 400 and "include_ended" in bad.json()["error"] and "Traceback" not in bad.text
    finally:
        server.stop()
        forest.personal.stop()


def test_moving_back_reopens_the_closed_fact(personal):
    _say(personal, "eve", "I live in Berlin.", "I moved to Munich.", "I moved back: I live in Berlin now.")
    assert _live_places(personal, "eve") == {"Berlin"}
    spans = {r["target"]: r["valid_to"] for r in personal.user_graph("eve", include_ended=True).to_dict()["relations"]
             if r["relationship"] in ("lives in", "moved to")}   # "moved to Munich" is kept as said
    assert spans["Berlin"] is None and spans.get("Munich") is not None, spans


def test_a_fact_two_memories_state_is_closed_once_for_both(personal):
    _say(personal, "fay", "I live in Berlin.", "I live in Berlin and I love jazz.", "I moved to Munich.")
    assert not any("Berlin" in m for m in _memories(personal, "fay")), _memories(personal, "fay")
    facts = {(r["relationship"], r["target"]): r["valid_to"]
             for r in personal.user_graph("fay", include_ended=True).to_dict()["relations"]}
    assert facts[("lives in", "Berlin")] is not None and facts[("moved to", "Munich")] is None, facts
    assert _live_places(personal, "fay") == set()


def test_an_additive_statement_supersedes_nothing(personal):
    _say(personal, "bo", "I live in Berlin.", "I also live part-time in Munich.")
    assert any("Berlin" in m for m in _memories(personal, "bo"))
    assert "Berlin" in _live_places(personal, "bo")


def test_a_chinese_move_supersedes(personal):
    _say(personal, "li", "我住在柏林。", "我搬到慕尼黑了。")
    assert not any("柏林" in m for m in _memories(personal, "li"))
    assert _live_places(personal, "li") == set()   # "搬到" is kept as said; 住在 柏林 is ended


@pytest.mark.parametrize("earlier, later, relation, value", [
    ("I'm 34 years old.", "I just turned 35.", "is aged", "35"),
    ("I work as a nurse.", "Since last month I work as a teacher.", "works as", "teacher"),
    ("My name is Ann Smith.", "I got married, so my name is Ann Jones.", "is called", "Ann Jones"),
    ("我是四川的。", "我是湖北人，在武汉上学。", "来自", "湖北"),
    ("我今年十八岁。", "我已经21岁了。", "年龄", "21")])
def test_a_new_job_name_age_or_hometown_ends_the_old(make_forest, earlier, later, relation, value):
    personal = make_forest(memory_privacy_filter=False).personal
    try:
        _say(personal, "ann", earlier, later)
        assert earlier not in _memories(personal, "ann")
        assert [t for s, r, t in personal.store.triples("ann") if r == relation] == [value]
    finally:
        personal.stop()


def test_the_same_age_said_again_ends_nothing(make_forest):
    personal = make_forest(memory_privacy_filter=False).personal
    try:
        _say(personal, "ann", "我今年十八岁。", "我今年刚满18岁，你呢？")
        assert len(_memories(personal, "ann")) == 2
    finally:
        personal.stop()


def test_an_ending_said_outright_ends_the_fact_and_keeps_the_rest(personal):
    _say(personal, "cy", "I work at Google and I live in Paris.", "I quit my job at Google.")
    memories = _memories(personal, "cy")
    assert not any("work at Google" in m and "quit" not in m for m in memories), memories
    assert any("I live in Paris" in m for m in memories)
    assert ("cy", "works at", "Google") not in personal.store.triples("cy")


def test_another_user_is_untouched(personal):
    _say(personal, "ann", "I live in Berlin.")
    _say(personal, "bob", "I moved to Munich.")
    assert _live_places(personal, "ann") == {"Berlin"}


def test_each_speaker_of_a_transcript_updates_only_their_own_facts(personal):
    # LoCoMo keeps two people's turns in one user's memory: Melanie's "I live in Denver now" is not
    # Caroline's move, and Caroline's later move ends her fact, not Melanie's
    _say(personal, "conv", "[8 May, 2023] Caroline: I live in Boston.", "[9 May, 2023] Melanie: I live in Denver now.")
    assert any("Boston" in m for m in _memories(personal, "conv")), _memories(personal, "conv")
    _say(personal, "conv", "[1 June, 2023] Caroline: I moved, I live in Austin now.")
    memories = _memories(personal, "conv")
    assert not any("Boston" in m for m in memories) and any("Denver" in m for m in memories), memories
    assert {(s, t) for s, r, t in personal.store.triples("conv") if r == "lives in"} == \
        {("Melanie", "Denver"), ("Caroline", "Austin")}


def test_chat_turns_alike_to_an_embedder_do_not_take_each_other_back(make_forest):
    # In LoCoMo an embedder finds all of a chat's turns alike, so any turn with a "not" or "never"
    # was taken for the negation of one before it: 228 turns of five conversations were superseded
    personal = make_forest(memory_privacy_filter=False).personal
    chat = ["[8 May, 2023] Gina: Thanks! Keep going for your dreams and don't quit!",
            "[9 May, 2023] Gina: Keep it up!",
            "[9 May, 2023] Melanie: Wow, that's cool! What happened that was so awesome? Did you hear any stories?",
            "[10 May, 2023] Melanie: Nope, never been to something like that. What was it about? What made it so special?",
            "[10 May, 2023] Jon: I like jazz records."]
    _say(personal, "chat", *chat)
    assert _memories(personal, "chat") == chat
    _say(personal, "chat", "[11 May, 2023] Gina: I don't like jazz records.")   # Gina's, not Jon's
    assert chat[-1] in _memories(personal, "chat")
    _say(personal, "chat", "[12 May, 2023] Jon: I don't like jazz records.")    # the same statement negated
    assert chat[-1] not in _memories(personal, "chat")
    personal.stop()


def test_a_turn_asking_about_me_reads_its_own_speaker_s_facts(personal):
    # the read path takes "I" as the write path does: Caroline's "my" is Caroline, not the user_id
    _say(personal, "conv", "[8 May, 2023] Caroline: I live in Boston and I love jazz.",
         "[8 May, 2023] Melanie: I live in Denver.")
    _, relations = personal.recall.graph("conv", "[9 May, 2023] Caroline: Do you remember where I live?")
    # what the question asks of its speaker, not all that is known of her, nor Melanie's
    assert [(t.source, t.relationship, t.target) for t in relations] == [("Caroline", "lives in", "Boston")]


@pytest.mark.parametrize("earlier, later", [
    ("My favourite food is sushi.", "My favourite food is pizza these days."),
    ("I prefer tea in the morning.", "Actually I prefer coffee in the morning."),
    ("My phone number is 555-9876.", "I changed my phone number to 555-1234."),
    ("我最喜欢的颜色是蓝色。", "我最喜欢的颜色现在是绿色。"),
    ("我的手机号是123456。", "我把我的手机号改成654321了。"),
    ("[8 May, 2023] Jon: My email is jon@old.org.", "[9 May, 2023] Jon: My new email is jon@new.org.")])
def test_a_new_value_said_as_a_change_supersedes_and_is_found_alone(make_forest, earlier, later):
    """The same sentence with another value, said as a change (or of a favourite), replaces the
    earlier memory; its history keeps what it said."""
    personal = make_forest(memory_privacy_filter=False).personal
    try:
        _say(personal, "ann", "I walk my dog every evening.", earlier, later)
        assert sorted(_memories(personal, "ann")) == sorted(["I walk my dog every evening.", later])
        old = [e for m in personal.store.memories("ann") for e in personal.store.history("ann", m.id)
               if e.event == "UPDATE"]
        assert len(old) == 1 and old[0].old_value == earlier
    finally:
        personal.stop()


@pytest.mark.parametrize("earlier, later", [
    ("My son is at school.", "My daughter is at home now."),           # another person's frame
    ("I prefer tea in the morning.", "I also prefer coffee in the evening now."),   # adds
    ("I like dogs.", "Now I like cats."),                               # too little frame to tell
    ("My favourite book is Dune.", "My favourite book is still Dune, and I love it."),   # the same value, more said
    ("[8 May, 2023] Jon: My favourite band is Queen.", "[9 May, 2023] Gina: My favourite band is Abba."),   # another speaker
    ("For breakfast my daughter eats oatmeal every day.", "For breakfast my son eats eggs every day now."),   # another person
])
def test_what_is_not_a_new_value_in_the_same_frame_supersedes_nothing(make_forest, earlier, later):
    personal = make_forest(memory_privacy_filter=False).personal
    try:
        _say(personal, "ann", earlier, later)
        assert sorted(_memories(personal, "ann")) == sorted([earlier, later])
    finally:
        personal.stop()


@pytest.mark.parametrize("read", [
    lambda text: __import__("forest.personal.updates", fromlist=["x"]).ended_statement(text),
    lambda text: __import__("forest.personal.updates", fromlist=["x"]).new_value_in_same_frame(text, "now " + text),
    lambda text: __import__("forest.personal.graph", fromlist=["x"]).TripleExtractor().extract(text[:2000], "ann")])
@pytest.mark.parametrize("text", ["no longer " * 2000, "I quit " + "my " * 3000, "从" * 4000 + "辞职",
                                  "I changed my " + "a " * 3000 + "x", "a@" * 5000, "把我的" + "号" * 4000,
                                  "我" + "刚满" * 2000 + "岁", "我是北京" + "大" * 4000 + "人", "我叫" + "小" * 4000,
                                  "When " * 2000 + "I turned 5 today"])
def test_hostile_input_is_read_in_linear_time(read, text):
    import time

    began = time.process_time()
    read(text)
    assert time.process_time() - began < 0.05


def test_a_store_from_before_validity_dates_gets_them_when_it_upgrades(tmp_path, make_forest):
    import sqlite3

    old = make_forest(data_dir=tmp_path / "store", memory_privacy_filter=False)
    if old.db.dialect != "sqlite":
        old.personal.stop()
        pytest.skip("rewinds a SQLite file to schema 12")
    _say(old.personal, "ann", "I live in Berlin.")
    old.personal.stop()
    old.close()
    raw = sqlite3.connect(tmp_path / "store" / "forest.sqlite3")
    raw.executescript("DROP INDEX idx_triples_user_open; ALTER TABLE personal_triples DROP COLUMN valid_to; "
                      "ALTER TABLE personal_triples DROP COLUMN valid_from; PRAGMA user_version = 12;")
    raw.close()
    upgraded = make_forest(data_dir=tmp_path / "store", memory_privacy_filter=False)
    try:
        created = upgraded.db.query("SELECT created_at FROM personal_triples")[0][0]
        (fact,) = upgraded.personal.user_graph("ann", include_ended=True).to_dict()["relations"]
        assert fact["target"] == "Berlin" and fact["valid_to"] is None
        assert upgraded.db.query("SELECT valid_from FROM personal_triples")[0][0] == created
        _say(upgraded.personal, "ann", "I moved to Munich.")   # and closes it as a new store does
        assert upgraded.personal.user_graph("ann", include_ended=True).to_dict()["relations"][0]["valid_to"] is not None
    finally:
        upgraded.personal.stop()


def test_an_llm_decides_an_update_before_the_write_transaction_and_can_keep_both(make_forest):
    """With an LLM configured it decides whether a statement replaces an earlier one; it is asked
    while no write transaction holds the store (a model call must never hold the writer lock),
    and its 'no' keeps both memories."""
    import sqlite3

    from testkit.fake_openai import FakeOpenAI

    locked_when_asked: list[bool] = []

    def respond(prompt: str) -> str:
        if "Earlier:" in prompt and "Later:" in prompt:
            probe = sqlite3.connect(forest.db.path, timeout=0)
            try:
                probe.execute("BEGIN IMMEDIATE")
                probe.rollback()
                locked_when_asked.append(False)
            except sqlite3.OperationalError:   # database is locked: a write transaction is open
                locked_when_asked.append(True)
            finally:
                probe.close()
            return json.dumps({"replaces": [], "reason": "the later adds a second home"})
        city = "Munich" if "Munich" in prompt else "Berlin"
        return json.dumps({"triples": [{"source": "ann", "relationship": "lives in", "target": city}]})

    with FakeOpenAI() as fake:
        fake.respond = respond
        forest = make_forest(llm="openai", llm_base_url=fake.url, llm_model="test-chat", llm_retries=0)
        for text in ("I live in Berlin.", "I live in Munich now."):
            reply = forest.personal.memory_tool("add", "ann", text=text).to_dict()
            assert reply["status"] == "success", reply
        assert locked_when_asked == [False]
        assert sorted(_memories(forest.personal, "ann")) == ["I live in Berlin.", "I live in Munich now."]


def _earlier_statements(prompt: str) -> list[str]:
    """The numbered earlier statements of an update prompt, in order."""
    return re.findall(r"^\[\d+\] (.*)$", prompt.split("Later:")[0], re.M)


def test_an_llm_replaces_a_statement_no_rule_reads_and_only_that_one(make_forest):
    """With an LLM configured it is also asked about the person's closest memories that no rule
    proposes, and the one it names is superseded wholly (its history says who judged), while the
    others stay. An answer naming a statement it was not shown, or none, leaves the offline rules to
    decide; and only the writing user's memories are ever shown."""
    from testkit.fake_openai import FakeOpenAI

    asked: list[list[str]] = []

    def respond(prompt: str) -> str:
        if "Later:" not in prompt:
            city = "Munich" if "Munich" in prompt else "Berlin" if "Berlin" in prompt else None
            return json.dumps({"triples": [{"source": "bob", "relationship": "lives in", "target": city}]
                               if city else []})
        earlier, later = _earlier_statements(prompt), prompt.split("Later:")[1]
        asked.append(earlier)
        if "19:00" in later:   # reads as a model would: the booking time changed
            return json.dumps({"replaces": [n for n, e in enumerate(earlier, 1) if "20:00" in e], "reason": "new time"})
        if "four people" in later:
            return json.dumps({"replaces": [len(earlier) + 1], "reason": "a number it was not shown"})
        return json.dumps({"reason": "no decision"})   # the decision left out

    with FakeOpenAI() as fake:
        fake.respond = respond
        forest = make_forest(llm="openai", llm_base_url=fake.url, llm_model="test-chat", llm_retries=0)
        tool = forest.personal.memory_tool
        try:
            for text in ("I booked a table for two at 20:00 on Sunday.", "My daughter is allergic to peanuts.",
                         "Can we instead try booking the table at 19:00?"):
                assert tool("add", "bob", text=text).to_dict()["status"] == "success"
            assert "I booked a table for two at 20:00 on Sunday." in asked[-1]
            assert sorted(_memories(forest.personal, "bob")) == ["Can we instead try booking the table at 19:00?",
                                                                 "My daughter is allergic to peanuts."]
            update = [e for e in tool("history", "bob").to_dict()["payload"]["history"] if e["event"] == "UPDATE"]
            assert len(update) == 1 and "20:00" in update[0]["old_value"]
            assert "judged by openai:test-chat" in update[0]["reason"]
            # an invalid answer (a statement it was not shown): the offline rules decide, nothing is replaced
            assert tool("add", "bob", text="Please make the booking for four people.").to_dict()["status"] == "success"
            assert len(_memories(forest.personal, "bob")) == 3
            # an answer without the decision is no "replaces nothing": the rules decide, and end Berlin
            for text in ("I live in Berlin.", "I live in Munich."):
                assert tool("add", "bob", text=text).to_dict()["status"] == "success"
            assert "I live in Berlin." not in _memories(forest.personal, "bob")
            update = [e for e in tool("history", "bob").to_dict()["payload"]["history"]
                      if e["event"] == "UPDATE" and "Berlin" in (e["old_value"] or "")]
            assert update and "judged by" not in update[0]["reason"]   # the rules decided, and say so
            # eve is shown eve's memories only, and an agent's write those of its own scope
            tool("add", "eve", text="I booked a table at 18:30 on Friday.")
            tool("add", "eve", text="Can we instead try booking the table at 19:00?")
            assert asked[-1] == ["I booked a table at 18:30 on Friday."]
            tool("add", "eve", text="I booked a table at 17:00 on Monday.", agent_id="planner")
            tool("add", "eve", text="Can we instead try booking the table at 19:00 please?", agent_id="planner")
            assert asked[-1] == ["I booked a table at 17:00 on Monday."]
        finally:
            forest.personal.stop()


def test_memory_llm_updates_off_leaves_the_decision_to_the_rules(make_forest):
    """A small local model replaces too readily: with memory_llm_updates off it is never asked
    about updates (it still reads facts), and the offline rules decide."""
    from testkit.fake_openai import FakeOpenAI

    prompts: list[str] = []

    def respond(prompt: str) -> str:
        prompts.append(prompt)
        if "Later:" in prompt:
            return json.dumps({"replaces": [1]})
        city = "Munich" if "Munich" in prompt else "Berlin" if "Berlin" in prompt else None
        return json.dumps({"triples": [{"source": "bob", "relationship": "lives in", "target": city}] if city else []})

    with FakeOpenAI() as fake:
        fake.respond = respond
        forest = make_forest(llm="openai", llm_base_url=fake.url, llm_model="test-chat", llm_retries=0,
                             memory_llm_updates=False)
        tool = forest.personal.memory_tool
        try:
            for text in ("I booked a table for two at 20:00 on Sunday.", "Can we instead try booking the table at 19:00?",
                         "I live in Berlin.", "I live in Munich."):
                assert tool("add", "bob", text=text).to_dict()["status"] == "success"
            assert prompts and not any("Later:" in prompt for prompt in prompts)
            assert sorted(_memories(forest.personal, "bob")) == ["Can we instead try booking the table at 19:00?",
                                                                 "I booked a table for two at 20:00 on Sunday.",
                                                                 "I live in Munich."]
        finally:
            forest.personal.stop()


def test_an_llm_decision_is_applied_to_the_memory_as_it_saw_it(make_forest):
    """Two statements planned together may both have the LLM name one memory; the first rewrites
    it, and the second then leaves the rewritten memory alone (it never saw that text)."""
    from forest.personal.policy import WritePlan
    from testkit.fake_openai import FakeOpenAI

    def respond(prompt: str) -> str:
        if "Later:" not in prompt:
            return json.dumps({"triples": []})
        return json.dumps({"replaces": [n for n, e in enumerate(_earlier_statements(prompt), 1) if "sushi" in e]})

    with FakeOpenAI() as fake:
        fake.respond = respond
        forest = make_forest(llm="openai", llm_base_url=fake.url, llm_model="test-chat", llm_retries=0,
                             memory_privacy_filter=False)
        personal = forest.personal
        try:
            personal.memory_tool("add", "u", text="My favourite food is sushi.")
            texts = ["My favourite food is pizza these days.", "No more sushi for me, I'm allergic to fish."]
            plans = [WritePlan("u", text, {}, {}, 100.0 + n, "process_memory", {"label": "PRIVATE"})
                     for n, text in enumerate(texts)]
            for plan, vector in zip(plans, personal.recall.embedder.embed_passages(texts)):
                personal.policy.plan_write(plan, vector)
            assert all(plan.named for plan in plans)   # both named the sushi memory
            for plan in plans:
                with personal.store.writing("u") as conn:
                    personal.policy.add_or_supersede(conn, plan)
            assert sorted(_memories(personal, "u")) == sorted(texts)
        finally:
            personal.stop()
