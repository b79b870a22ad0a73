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
When an LLM is configured it decides: of the memories the rules propose and the same person's
closest others, which the statement replaces ("Can we instead try 19:00?" after "a table at
20:00", which no rule reads). The rules are the offline default. Every pattern here is a plain alternation of words (no nested repetition):
linear on any input."""
from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable

from forest.models.llm import LLMError, StructuredLLM
from forest.models.prompts import update_prompt
from forest.models.replies import UpdateReply
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

    def ending_facts(self, text: str, triples: list[Triple], speaker: str) -> list[Fact]:
        """The facts a statement says outright have ended ("I quit my job at X"), when it gives no
        new value: found before the write (with an LLM extractor, a request), passed to `ended`."""
        if additive(text) or new_values(triples):
            return []
        positive = ended_statement(text)
        if positive is None:
            return []
        return [(entity_key(t.source), t.relationship, entity_key(t.target)) for t in self.extract(positive, speaker)]

    def ended(self, text: str, triples: list[Triple], speaker: str, ending: list[Fact],
              facts_of_attribute: Callable[[list[tuple[str, str]]], list[tuple[int, Fact]]]) -> dict[int, list[Fact]]:
        """Memory id -> its facts the statement ends, by the rules: quick, run inside the write's
        transaction. `ending`: ending_facts; `facts_of_attribute` gives the live (memory_id, fact)
        of those (source_key, relationship) pairs."""
        if additive(text):
            return {}
        values = new_values(triples)
        wanted = [(source, relation) for source, attr in values
                  for relation in SINGLE_VALUED | set(SAME_ATTRIBUTE) if attribute(relation) == attr]
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
        return ended

    def decide(self, proposed: Iterable[int], alike: Iterable[int], text: str,
               memory_text: Callable[[int], str]) -> tuple[set[int], list[int]]:
        """What a configured LLM decides, asked once before the write (never inside its transaction):
        the memories the rules `proposed` that the statement does not replace, and those of the
        memories `alike` (the same person's closest, which the rules did not propose) that it does.
        Offline, or when the LLM fails, the rules decide: (nothing rejected, nothing added)."""
        proposed = list(proposed)
        alike = [m for m in alike if m not in proposed]
        asked = proposed + alike
        if self.llm is None or not asked:
            return set(), []
        try:
            reply = self.llm.ask(update_prompt([memory_text(m) for m in asked], text), UpdateReply,
                                 max_tokens=200, context={"earlier": len(asked)})
        except LLMError as exc:
            log.warning("%s update decision failed, the offline rules decide: %s", self.llm.label, exc)
            return set(), []
        replaced = {asked[n - 1] for n in reply.replaces}
        return set(proposed) - replaced, [m for m in alike if m in replaced]
