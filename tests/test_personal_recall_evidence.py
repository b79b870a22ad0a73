"""Search that brings all of a question's evidence (issue 34, items 2 and 3): a diverse top k
(near repeats of one memory do not fill it), questions that ask "when" find the memories that say
when, and the session date stays on every memory; on real SQLite and the real embedder."""
from __future__ import annotations

import numpy as np
import pytest

from forest.personal.recall import diverse
from forest.personal.timeframe import asks_when, says_when

MAY_8 = 1683504960.0  # 1:56 pm on 8 May 2023 (UTC)


def _texts(reply):
    return [r["memory"] for r in reply["payload"]["results"]]


def test_diverse_takes_the_next_best_memory_over_a_near_repeat_of_one_chosen():
    relevance = np.array([3.0, 2.9, 2.2, 0.5])
    redundancy = np.array([[1.0, 0.98, 0.1, 0.1], [0.98, 1.0, 0.1, 0.1], [0.1, 0.1, 1.0, 0.1], [0.1, 0.1, 0.1, 1.0]])
    assert diverse(np.arange(4), relevance, redundancy, 2) == [0, 2]
    # unlike memories keep the order of their relevance
    assert diverse(np.arange(4), relevance, np.eye(4), 3) == [0, 1, 2]
    assert diverse(np.arange(2), relevance, redundancy[:2, :2], 5) == [0, 1]


def test_near_repeats_leave_room_for_the_other_evidence_of_a_question(personal):
    repeats = [f"Caroline went to the LGBTQ support group{tail}" for tail in
               (".", " again.", " once more.", " today.", " this week.", " on Friday.")]
    other = "Caroline's support group friends encouraged her to visit an adoption agency."
    personal.memory_tool("add", "u1", text=[*repeats, other, "Melanie painted a lake at sunrise.",
                                            "Melanie's kids love the beach.", "Tom likes old jazz records."])
    question = "What did Caroline do with the support group?"
    ids, combined, _, _ = personal.recall._scores("u1", question)
    # by score alone the six repeats come first and fill the top five
    seventh = ids[int(np.argsort(-combined)[6])]
    assert personal.store.said("u1", [seventh])[seventh] == other
    found = _texts(personal.memory_tool("search", "u1", query=question, top_k=5).to_dict())
    assert other in found
    assert sum(text in repeats for text in found) == 4
    # another user's memories are never among them
    personal.memory_tool("add", "u2", text=repeats)
    assert set(_texts(personal.memory_tool("search", "u2", query="support group", top_k=5).to_dict())) <= set(repeats)


def test_when_questions_and_the_memories_that_say_when():
    assert asks_when("When did Caroline go to the support group?")
    assert asks_when("How long ago was Caroline's 18th birthday?")
    assert asks_when("我什么时候去的北京？")
    assert not asks_when("What did Caroline research?")
    assert says_when("[1:56 pm on 8 May, 2023] Caroline: I went to a support group yesterday.")
    assert says_when("We moved here in 2019.")
    assert says_when("我上周去了北京。")
    # the leading session date is when it was said, which every turn has
    assert not says_when("[1:56 pm on 8 May, 2023] Caroline: The support group was so powerful.")


def test_a_when_question_lifts_the_memories_that_say_when(personal, monkeypatch):
    said = ["[1:56 pm on 8 May, 2023] Caroline: Going to the LGBTQ support group changed me, Melanie.",
            "[1:56 pm on 8 May, 2023] Caroline: When I go to the LGBTQ support group, I feel at home.",
            "[1:56 pm on 8 May, 2023] Caroline: Yesterday I could go to the LGBTQ support group.",
            "[1:56 pm on 8 May, 2023] Melanie: I painted a lake at sunrise."]
    for n, text in enumerate(said):   # an hour apart: no answer follows a question here
        personal.process_memory("caroline", text, observed_at=MAY_8 + n * 3600)
    assert personal.drain(60)
    question = "When did Caroline go to the LGBTQ support group?"
    _, lifted, _, _ = personal.recall._scores("caroline", question)
    monkeypatch.setattr("forest.personal.recall.asks_when", lambda query: False)
    _, plain, _, _ = personal.recall._scores("caroline", question)
    assert list(np.round(lifted - plain, 6)) == [0.0, 0.0, 1.0, 0.0]
    monkeypatch.undo()
    top = _texts(personal.memory_tool("search", "caroline", query=question, top_k=1).to_dict())
    assert top == [said[2]]


def test_the_session_date_stays_on_every_memory(personal):
    """A turn written as "[session date] speaker: text" keeps the date in its text and as its time."""
    text = "[1:56 pm on 8 May, 2023] Caroline: I went to a LGBTQ support group yesterday and it was so powerful."
    personal.process_memory("caroline", text, observed_at=MAY_8)
    assert personal.drain(60)
    (memory,) = personal.memories("caroline")
    assert memory.memory.startswith("[1:56 pm on 8 May, 2023] Caroline:")
    assert memory.created_at == MAY_8
    found = personal.memory_tool("search", "caroline", query="When did Caroline go to the support group?", top_k=1).to_dict()
    assert found["payload"]["results"][0]["created_at"].startswith("2023-05-08")


def test_turns_said_by_the_person_asked_about_and_answers_to_a_matching_question():
    from forest.personal.recall import _answers_follow, _said_by_the_one_asked_about
    from forest.personal.turns import speaker_of

    turns = ["[8 May, 2023] Caroline: How did your kids like the museum?",
             "[8 May, 2023] Melanie: They loved the dinosaur bones!", "Plain memory, no speaker."]
    assert [speaker_of(t) for t in turns] == ["Caroline", "Melanie", None]
    words = dict(enumerate(turns))
    assert _said_by_the_one_asked_about("What do Melanie's kids like?", words) == {1: 0.5}
    # naming everyone (or no one) who speaks prefers no one
    assert not _said_by_the_one_asked_about("What did Caroline ask Melanie?", words)
    # the answer said right after a matching question rises to one standard deviation below it
    raised = _answers_follow(np.array([4.0, 0.5, 0.0]), [MAY_8, MAY_8 + 1, MAY_8 + 2], words)
    assert list(raised) == [4.0, 3.0, 0.0]
    # not when said in another conversation (hours later), nor after a statement
    assert list(_answers_follow(np.array([4.0, 0.5, 0.0]), [MAY_8, MAY_8 + 86400, None], words)) == [4.0, 0.5, 0.0]
    assert list(_answers_follow(np.array([0.5, 4.0, 0.0]), [MAY_8, MAY_8 + 1, MAY_8 + 2], words)) == [0.5, 4.0, 0.0]


@pytest.mark.slow
def test_reading_words_only_within_reach_of_the_pool_ranks_as_reading_them_all(make_forest, monkeypatch):
    """The signals read from words are worked out for the memories they could lift into the pool:
    the pool is the same as when every memory's words are read, and fewer memories are read."""
    import forest.personal.recall as recall

    personal = make_forest(memory_privacy_filter=False).personal

    names, places = ("Caroline", "Melanie"), ("museum", "beach", "lake", "park", "library", "garden", "studio")
    turns = [f"[8 May, 2023] {names[n % 2]}: " + (f"How was the {places[n % 7]}, trip {n}?" if n % 3 == 0 else
                                                  f"The {places[n % 7]} had {n} visitors {'yesterday' if n % 4 else 'today'}.")
             for n in range(120)]
    for n, text in enumerate(turns):
        personal.process_memory("conv", text, observed_at=MAY_8 + n * 60)
    assert personal.drain(120)
    read: list[int] = []
    said = personal.store.said
    monkeypatch.setattr(personal.store, "said", lambda user, ids: read.append(len(ids)) or said(user, ids))
    for question in ("When did Melanie go to the museum?", "What did Caroline say about the beach?"):
        ids, within_reach, _, _ = personal.recall._scores("conv", question, pool_size=5)
        ids_all, every_word, _, _ = personal.recall._scores("conv", question, pool_size=len(ids))
        assert ids == ids_all and len(ids) == len(turns) and read[-2] < read[-1] == len(ids)
        best = np.argsort(-every_word, kind="stable")[:5]
        assert list(np.argsort(-within_reach, kind="stable")[:5]) == list(best)
        assert np.allclose(within_reach[best], every_word[best])
    assert recall.MOST_THE_WORDS_ADD >= recall.SAID_BY_THE_ONE_ASKED_ABOUT + recall.SAYS_WHEN
    personal.stop()

