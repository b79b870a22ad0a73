"""Updates as people say them: a later statement about the same attribute of the same person
supersedes the earlier one ("Actually I moved: I live in Munich now." ends "I live in Berlin").

Three kinds of update are read from the new statement:
- a new value of a single-valued attribute (lives in, works at, is married to, a name, an age
  ...; "moved to X" is "lives in X"): every live fact of that person and attribute with another value is ended,
  found by key in SQL, not by similarity (a long memory about Berlin and work is far from a short
  "I live in Munich now");
- an ending said outright ("I no longer live in Berlin", "I quit my job at Google", "we broke up",
  "我不再住在柏林"): the statement with its ending words taken out is read for the facts it ends;
- the same sentence with a new value, said as a change ("My favourite food is pizza these days"
  after "My favourite food is sushi", "我最喜欢的颜色现在是绿色"): the words around the value, the
  frame, are the earlier statement's, and the later says "now", "actually", "instead" ... or the
  frame names a favourite, which is one at a time (see new_value_in_same_frame); the write path
  compares it with the person's closest memories (forest.personal.policy).

A statement that only adds ("I also live part-time in Munich", "我也住在慕尼黑") ends nothing.
When an LLM is configured it decides: of the memories the rules propose and the same person's
closest others, which the statement replaces ("Can we instead try 19:00?" after "a table at
20:00", which no rule reads). The rules are the offline default. Every pattern here reads an input
one way only (alternations of words, bounded repetition): linear on any input."""
from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable

from forest.models.llm import LLMError, StructuredLLM
from forest.models.prompts import update_prompt
from forest.models.replies import UpdateReply
from forest.personal.graph import Triple, entity_key, names_a_person
from forest.personal.turns import words_of

log = logging.getLogger("forest.personal.updates")

Fact = tuple[str, str, str]   # (source_key, relationship, target_key), as stored

# Relations a person has one value of at a time: a new value ends the old one.
SINGLE_VALUED = frozenset(["lives in", "works at", "works for", "works as", "is married to", "born in", "is from", "is called",
                           "is aged", "住在", "工作于", "结婚", "来自", "出生于", "名叫", "年龄"])
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
# Words that say a statement changes what was said before ("My favourite food is pizza these days").
_CHANGE = re.compile(r"\b(?:now|nowadays|these days|actually|instead|anymore|any more|no longer|switched|"
                     r"changed|new|currently|lately|recently)\b|现在|如今|其实|改成|换成|改为|换了|最近|目前",
                     re.IGNORECASE)
# Frames of a value a person has one of at a time, said as a change or not.
_ONE_AT_A_TIME = re.compile(r"\b(?:favou?rite|best-loved)\b|最喜欢|最爱", re.IGNORECASE)
# A token: a CJK character, or a run of letters and digits with the marks inside an address or a
# time ("ann@new.com", "19:00"): a value stays one token.
_TOKEN = re.compile(r"[\u4e00-\u9fff]|[^\W_](?:[\w@.:'+-]*[^\W_])?")
# A value is short (a place, a food, a time); the frame around it says most of the statement.
MOST_VALUE_TOKENS = 4
LEAST_FRAME_SHARE = 0.6
LEAST_FRAME_TOKENS = 3
# "I changed my number to 555-1234" says "my number is 555-1234" (each part bounded: no backtracking
# beyond it); "把我的手机号改成…" says "我的手机号是…".
_CHANGED_TO = re.compile(r"\b(?:i\s+(?:have\s+|'ve\s+)?)?(?:changed|switched|updated|moved)\s+my\s+([^\W\d][\w' -]{0,40}?)"
                         r"\s+to\b", re.IGNORECASE)
_ZH_CHANGED_TO = re.compile(r"我?把(我的[^，。,.\s]{1,20}?)(?:改成|换成|改为|改到)")
# The words that negate a statement: a statement and its negation are the negated-statement rule's
# (forest.personal.policy), and a span that differs by one is no new value.
NEGATION = re.compile(r"\b(?:not|no longer|don't|doesn't|didn't|never|stopped|quit)\b|不再|不|没有|没|别", re.I)
_BROKE_UP = re.compile(r"\b(?:broke up|split up|divorced|separated)\b|分手|离婚", re.IGNORECASE)


def attribute(relationship: str) -> str:
    return SAME_ATTRIBUTE.get(relationship, relationship)


def additive(text: str) -> bool:
    """The statement only adds to what is known ("also", "part-time", "也")."""
    return bool(_ADDITIVE.search(text))


def without_change_words(text: str) -> str:
    """The statement without the words that say it is a change ("Actually", "now", "现在")."""
    return _CHANGE.sub(" ", text)


def says_a_change(text: str) -> bool:
    """Whether a statement may give a new value in an earlier one's frame: it says a change ("now",
    "actually", "现在") or names a favourite, and adds nothing ("also")."""
    return not additive(text) and bool(_CHANGE.search(text) or _ONE_AT_A_TIME.search(text))


def new_value_in_same_frame(earlier: str, later: str) -> bool:
    """Whether `later` is `earlier` with another value in the same frame, said as a change: with
    the change words and the statement's "[when] speaker:" taken out ("I changed my X to Y" read
    as "my X is Y"), the two share a prefix and a
    suffix (the frame: LEAST_FRAME_SHARE of each, at least LEAST_FRAME_TOKENS tokens) around one
    short span that differs on both sides (the values), naming no one (another person is another
    subject). Negation is the negated-statement rule's, and an addition ("also") ends nothing.
    Linear in the statements' length."""
    if not says_a_change(later):
        return False
    restated = _ZH_CHANGED_TO.sub(r"\1是", _CHANGED_TO.sub(r"my \1 is", words_of(later)))
    a, b = (_TOKEN.findall(without_change_words(text).lower()) for text in (words_of(earlier), restated))
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(a), len(b)) - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    frame, old, new = prefix + suffix, a[prefix:len(a) - suffix], b[prefix:len(b) - suffix]
    if not (0 < len(old) <= MOST_VALUE_TOKENS and 0 < len(new) <= MOST_VALUE_TOKENS and frame >= LEAST_FRAME_TOKENS
            and frame >= LEAST_FRAME_SHARE * max(len(a), len(b))):
        return False
    # a span that names someone is another subject ("my son eats eggs" after "my daughter eats oatmeal")
    spans = [joined for span in (old, new) for joined in (" ".join(span), "".join(span))]
    return not any(NEGATION.search(text) or names_a_person(text) for text in spans)


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
        """What a configured LLM decides, asked once before the write (never inside its transaction)
        about the memories the rules `proposed` and those `alike` (the same person's closest): the
        memories it answered for (no rule may replace one it did not name), and those it named as
        replaced, in the order asked. Offline, or when the LLM fails, the rules decide: (nothing
        answered for, nothing named)."""
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
        named = {asked[n - 1] for n in reply.replaces}
        return set(asked), [m for m in asked if m in named]
