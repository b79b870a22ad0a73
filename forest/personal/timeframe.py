"""Periods a question names ("in May 2023", "on 8 May", "2022", "2023年5月"), to match against
when memories were said. A period is (year, month, day), any part None when not given; a memory
said at time t (UTC) is within it when every given part agrees. And questions that ask when
something happened, with the memories that say when (a date, "last Saturday", "two weeks ago")."""
from __future__ import annotations

import re

from forest.personal.turns import words_of
from datetime import datetime, timezone

MONTHS = {name: n for n, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
    ("november", "nov"), ("december", "dec")), 1) for name in names}
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_YEAR = r"(?:19|20)\d\d"
_EN = re.compile(rf"\b(?:(?P<day1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?)?(?P<month>{_MONTH})\.?"
                 rf"(?:\s+(?P<day2>\d{{1,2}})(?:st|nd|rd|th)?\b)?(?:,?\s+(?P<year>{_YEAR}))?\b", re.I)
# Starts at a digit: a leading "\s*" would be tried from every blank of a run (quadratic).
_ZH = re.compile(rf"(?:(?P<year>{_YEAR})\s*年\s*)?(?P<month>1[0-2]|0?[1-9])\s*月(?:\s*(?P<day>[12]\d|3[01]|0?[1-9])\s*[日号])?")
_BARE_YEAR = re.compile(rf"\b(?:in|of|during|since|from|year)\s+(?P<year>{_YEAR})\b|(?P<zh>{_YEAR})\s*年", re.I)

Period = tuple[int | None, int | None, int | None]


def periods_in(text: str) -> list[Period]:
    """Every period the text names; "may" alone counts only capitalised ("in May"), not the verb."""
    periods: list[Period] = []
    for match in _EN.finditer(text):
        word = match.group("month")
        if word.lower() == "may" and not word[0].isupper():
            continue
        if word.lower() in ("mar", "jun", "jan", "oct", "dec", "sep", "nov", "aug", "apr", "feb", "jul") and \
                not (match.group("year") or match.group("day1") or match.group("day2")):
            continue  # a bare abbreviation is too often a word ("mar", "jun" in names)
        day = match.group("day1") or match.group("day2")
        periods.append((int(match.group("year")) if match.group("year") else None, MONTHS[word.lower()],
                        int(day) if day else None))
    for match in _ZH.finditer(text):
        periods.append((int(match.group("year")) if match.group("year") else None, int(match.group("month")),
                        int(match.group("day")) if match.group("day") else None))
    named_years = {p[0] for p in periods}
    for match in _BARE_YEAR.finditer(text):
        year = int(match.group("year") or match.group("zh"))
        if year not in named_years:
            periods.append((year, None, None))
    return periods


def within(at: float | None, periods: list[Period]) -> bool:
    if at is None:
        return False
    day = datetime.fromtimestamp(at, tz=timezone.utc)
    return any(all(want is None or want == got for want, got in zip(p, (day.year, day.month, day.day)))
               for p in periods)


_ASKS_WHEN = re.compile(r"\bwhen\b|\bwhat (?:date|day|time|year|month|week)\b|\bhow long ago\b|\bwhich "
                        r"(?:year|month|day|week)\b|什么时候|哪天|哪一天|哪年|哪一年|几月|几号|何时", re.I)
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?"
_SAYS_WHEN = re.compile(
    rf"\b(?:yesterday|today|tonight|tomorrow|ago|recently|lately|(?:last|next|this|past|previous|coming) "
    rf"(?:{_WEEKDAY}|week(?:end)?|month|year|summer|winter|spring|fall|autumn|night|morning|evening|time)|"
    rf"(?:on|since|until|every) {_WEEKDAY}|the other day|(?:a|one|two|three|few|couple of) (?:days?|weeks?|months?|"
    rf"years?) (?:ago|back|before)|in (?:{_YEAR})\b)"
    rf"|昨天|今天|明天|前天|上周|上个?月|去年|前年|上星期|最近|刚才|周末|天前|年前", re.I)


def asks_when(question: str) -> bool:
    """Whether the question asks when something happened ("When did Caroline go ...?", "什么时候")."""
    return bool(_ASKS_WHEN.search(question))


def says_when(memory: str) -> bool:
    """Whether the memory's own words say when (a date, a period, "last week", "yesterday"): the
    leading "[date]" of a conversation turn is when it was said, which every turn has."""
    words = words_of(memory)
    return bool(_SAYS_WHEN.search(words) or periods_in(words))
