"""Updates as people say them: a later statement about the same attribute of the same person
supersedes the earlier one ("Actually I moved: I live in Munich now." ends "I live in Berlin").

Two kinds of update are read from the new statement:
- a new value of a single-valued attribute (lives in, works at, is married to ...; "moved to X"
  is "lives in X"): every live fact of that person and attribute with another value is ended,
  found by key in SQL, not by similarity (a long memory about Berlin and work is far from a short
  "I live in Munich now");
- an ending said outright ("I no longer live in Berlin", "I quit my job at Google", "we broke up",
  "我不再住在柏林"): the statement with its ending words taken out is read for the facts it ends.

A statement that only adds ("I also live part-time in Munich", "我也住在慕尼黑") ends nothing.
When an LLM is configured it decides each (earlier, later) pair the rules propose; the rules are
the offline default. Every pattern here is a plain alternation of words (no nested repetition):
linear on any input."""
from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable

from pydantic import BaseModel

from forest.models.llm import LLMError, StructuredLLM
from forest.personal.graph import Triple, entity_key

log = logging.getLogger("forest.personal.updates")

Fact = tuple[str, str, str]   # (source_key, relationship, target_key), as stored

# Relations a person has one value of at a time: a new value ends the old one.
SINGLE_VALUED = frozenset(["lives in", "works at", "works for", "is married to", "born in", "is from", "住在",
                           "工作于", "结婚", "来自", "出生于"])
# Relations that say the same attribute as another ("I moved to Munich": lives in Munich).
SAME_ATTRIBUTE = {"moved to": "lives in", "relocated to": "lives in", "搬到": "住在", "works for": "works at"}
# Relations a break-up ends.
PARTNERS = frozenset(["is married to", "结婚", "wife", "husband", "partner", "boyfriend", "girlfriend", "fiance",
                      "fiancee", "妻子", "丈夫", "老婆", "老公", "男朋友", "女朋友"])

_ADDITIVE = re.compile(r"\b(?:also|too|as well|in addition|part[- ]time|another|second home)\b|也|还有|兼职|另外",
                       re.IGNORECASE)
# Words that say a fact ended; taking them out leaves the fact that ended ("I no longer live in X").
_ENDING = re.compile(r"\b(?:no longer|not any ?more|anymore|any more|don't|doesn't|do not|does not|"
                     r"used to|stopped)\s*|不再|已经不", re.IGNORECASE)
_QUIT = re.compile(r"\b(?:quit|resigned from|left my job)\s+(?:my\s+)?(?:job\s+|position\s+)?(?:at|with|from)?\s*",
                   re.IGNORECASE)
_ZH_QUIT = re.compile(r"从([^，。,.\s]{1,20}?)(?:辞职|离职)")
_BROKE_UP = re.compile(r"\b(?:broke up|split up|divorced|separated)\b|分手|离婚", re.IGNORECASE)


class UpdateReply(BaseModel):
    supersedes: bool
    reason: str = ""


def update_prompt(earlier: str, later: str) -> str:
    return ("Two statements a person made about themselves, the earlier first.\n"
            f"Earlier: {earlier}\nLater: {later}\n"
            "Does the later statement replace what the earlier says about the same attribute of the same "
            "person (a move, a new job, a break-up, a change), so that the earlier is no longer true? "
            "A later statement that only adds information replaces nothing. "
            'Answer as JSON: {"supersedes": true|false, "reason": "..."}')


def attribute(relationship: str) -> str:
    return SAME_ATTRIBUTE.get(relationship, relationship)


def additive(text: str) -> bool:
    """The statement only adds to what is known ("also", "part-time", "也")."""
    return bool(_ADDITIVE.search(text))


def new_values(triples: Iterable[Triple]) -> dict[tuple[str, str], str]:
    """(source_key, attribute) -> target_key of the single-valued facts a statement sets."""
    return {(entity_key(t.source), attribute(t.relationship)): entity_key(t.target) for t in triples
            if attribute(t.relationship) in SINGLE_VALUED}


def ended_statement(text: str) -> str | None:
    """The statement with its ending words taken out ("I no longer live in Berlin" -> "I live in
    Berlin", "I quit my job at Google" -> "I work at Google"); None when it ends nothing."""
    if _QUIT.search(text):
        return _QUIT.sub("I work at ", text.replace("I quit", "quit"), count=1)
    if quit_zh := _ZH_QUIT.search(text):
        return f"我在{quit_zh[1]}工作。"
    if _ENDING.search(text):
        return _ENDING.sub("", text)
    return None


class UpdateJudge:
    """Which live facts a new statement ends. `extract` reads a text's triples (the write path's
    extractor); `llm`, when configured, decides each pair the rules propose."""

    def __init__(self, extract: Callable[[str, str], list[Triple]], llm: StructuredLLM | None = None) -> None:
        self.extract = extract
        self.llm = llm

    def ended(self, text: str, triples: list[Triple], speaker: str,
              facts_of_attribute: Callable[[list[tuple[str, str]]], list[tuple[int, Fact]]],
              memory_text: Callable[[int], str]) -> dict[int, list[Fact]]:
        """Memory id -> its facts the statement ends. `facts_of_attribute` gives the live
        (memory_id, fact) of those (source_key, relationship) pairs; `memory_text` a memory's text."""
        if additive(text):
            return {}
        values = new_values(triples)
        wanted = [(source, relation) for source, attr in values
                  for relation in SINGLE_VALUED | set(SAME_ATTRIBUTE) if attribute(relation) == attr]
        ending = [] if values else self._ending_facts(text, speaker)
        wanted += [(source, relation) for source, relation, _ in ending]
        if _BROKE_UP.search(text):
            wanted += [(entity_key(speaker), relation) for relation in PARTNERS]
        ended: dict[int, list[Fact]] = {}
        for memory_id, fact in facts_of_attribute(wanted):
            source, relation, target = fact
            new = values.get((source, attribute(relation)))
            if (new is not None and new != target) or fact in ending or (relation in PARTNERS and not values
                                                                          and _BROKE_UP.search(text)):
                ended.setdefault(memory_id, []).append(fact)
        if self.llm is not None:
            ended = {m: facts for m, facts in ended.items() if self._llm_agrees(memory_text(m), text)}
        return ended

    def _ending_facts(self, text: str, speaker: str) -> list[Fact]:
        positive = ended_statement(text)
        if positive is None:
            return []
        return [(entity_key(t.source), t.relationship, entity_key(t.target)) for t in self.extract(positive, speaker)]

    def _llm_agrees(self, earlier: str, later: str) -> bool:
        """The LLM's decision; the rules' (yes) when it fails."""
        try:
            return self.llm.ask(update_prompt(earlier, later), UpdateReply, max_tokens=200).supersedes
        except LLMError as exc:
            log.warning("%s update decision failed, the offline rules decide: %s", self.llm.label, exc)
            return True
