"""The tokens SQLite FTS5 indexes for a text, in pure Python, so a second database can index and
query exactly the same lexemes.

FTS5's unicode61 tokenizer (remove_diacritics 2): a token starts at a token character and runs on
over token characters and combining marks; each character is case- and diacritic-folded (a mark
is dropped). ASCII letters and digits are the ASCII token characters; above ASCII the tables of
forest.storage.fulltext.unicode61 say which code points separate and how each folds. The porter tokenizer
(personal memory) stems each token of 3 to 64 bytes with fts5_tokenize.c's Porter stemmer, which
works on UTF-8 bytes: ported here byte for byte. FTS5 keeps a token's first 32768 bytes.

A token that is not valid UTF-8 (a cut multi-byte character) comes back with its stray bytes as
lone surrogates (errors="surrogateescape"), so distinct tokens stay distinct.
"""
from __future__ import annotations

import re
from functools import lru_cache

from forest.storage.fulltext.unicode61 import FOLDS, MARKS, SEPARATORS

MAX_TOKEN_BYTES = 32768   # FTS5_MAX_TOKEN_SIZE
PORTER_MAX_BYTES = 64     # FTS5_PORTER_MAX_TOKEN: longer tokens pass through unstemmed


def _class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)


# One token: a token character, then token characters or marks. Each position is tried once and
# the run is a single greedy class: linear time on any text.
_NOT_ASCII_TOKEN = "\x00-/:-@\\[-`{-\x7f"
_NOT_TOKEN = _NOT_ASCII_TOKEN + _class(SEPARATORS)
_TOKEN = re.compile(f"[^{_NOT_TOKEN}{_class(MARKS)}][^{_NOT_TOKEN}]*")
_ASCII_TOKEN = re.compile("[0-9A-Za-z]+")
_FOLD = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_FOLD.update({first + k * step: first + k * step + delta for first, count, step, delta in FOLDS for k in range(count)})
_FOLD.update({c: None for a, b in MARKS for c in range(a, b + 1)})


def lexemes(text: str, porter: bool = False) -> list[str]:
    """The tokens FTS5 indexes for `text`, in order: tokenize = 'unicode61 remove_diacritics 2', or
    'porter unicode61 remove_diacritics 2' if `porter`."""
    if text.isascii():
        tokens = [_cut(t) for t in _ASCII_TOKEN.findall(text.lower())]
    else:
        tokens = [_cut(m.group().translate(_FOLD)) for m in _TOKEN.finditer(text)]
    return [_stem(t) for t in tokens] if porter else tokens


def _cut(token: str) -> str:
    """FTS5 keeps a token's first MAX_TOKEN_BYTES bytes, even if that cuts a character."""
    if len(token) * 4 <= MAX_TOKEN_BYTES:
        return token
    return token.encode()[:MAX_TOKEN_BYTES].decode(errors="surrogateescape")


def _stem(token: str) -> str:
    return token if len(token) > PORTER_MAX_BYTES else _stem_short(token)


@lru_cache(maxsize=65536)
def _stem_short(token: str) -> str:
    word = token.encode(errors="surrogateescape")
    if not 3 <= len(word) <= PORTER_MAX_BYTES:
        return token
    return porter_stem(word).decode(errors="surrogateescape")


# --- fts5_tokenize.c's Porter stemmer ---------------------------------------------------------
# Bytes throughout: a byte of a multi-byte character is a consonant, as in C.

def _vowel(c: int, y_is_vowel: bool) -> bool:
    return c in b"aeiou" or (y_is_vowel and c == 0x79)  # y


def _gobble_vc(stem: bytes, previous_consonant: bool) -> int:
    """fts5PorterGobbleVC: the length of the first vowels-then-consonant run, 0 if there is none."""
    consonant = previous_consonant
    i = 0
    while i < len(stem):
        consonant = not _vowel(stem[i], consonant)
        if not consonant:
            break
        i += 1
    i += 1
    while i < len(stem):
        consonant = not _vowel(stem[i], consonant)
        if consonant:
            return i + 1
        i += 1
    return 0


def _m_gt0(stem: bytes) -> bool:
    return _gobble_vc(stem, False) > 0


def _m_gt1(stem: bytes) -> bool:
    n = _gobble_vc(stem, False)
    return n > 0 and _gobble_vc(stem[n:], True) > 0


def _m_eq1(stem: bytes) -> bool:
    n = _gobble_vc(stem, False)
    return n > 0 and _gobble_vc(stem[n:], True) == 0


def _o_star(stem: bytes) -> bool:
    """(*o): ends consonant-vowel-consonant, the last consonant not w, x or y."""
    if stem[-1] in b"wxy":
        return False
    mask, consonant = 0, False
    for c in stem:
        consonant = not _vowel(c, consonant)
        mask = (mask << 1) + consonant
    return mask & 7 == 5


def _m_gt1_s_or_t(stem: bytes) -> bool:
    return stem[-1] in b"st" and _m_gt1(stem)


def _has_vowel(stem: bytes) -> bool:
    return any(_vowel(c, i > 0) for i, c in enumerate(stem))


def _rules(*rules: tuple) -> dict[int, list[tuple]]:
    """A step's rules, (suffix, condition on the stem, replacement), by their suffix's next-to-last
    byte, in order: as C's switch and else-if chains, only the first suffix the word ends with
    (and is longer than) is tried."""
    table: dict[int, list[tuple]] = {}
    for rule in rules:
        table.setdefault(rule[0][-2], []).append(rule)
    return table


_STEP1B = _rules((b"eed", _m_gt0, b"ee"), (b"ed", _has_vowel, b""), (b"ing", _has_vowel, b""))
_STEP1B2 = _rules((b"at", None, b"ate"), (b"bl", None, b"ble"), (b"iz", None, b"ize"))
_STEP2 = _rules(
    (b"ational", _m_gt0, b"ate"), (b"tional", _m_gt0, b"tion"), (b"enci", _m_gt0, b"ence"),
    (b"anci", _m_gt0, b"ance"), (b"izer", _m_gt0, b"ize"), (b"logi", _m_gt0, b"log"), (b"bli", _m_gt0, b"ble"),
    (b"alli", _m_gt0, b"al"), (b"entli", _m_gt0, b"ent"), (b"eli", _m_gt0, b"e"), (b"ousli", _m_gt0, b"ous"),
    (b"ization", _m_gt0, b"ize"), (b"ation", _m_gt0, b"ate"), (b"ator", _m_gt0, b"ate"),
    (b"alism", _m_gt0, b"al"), (b"iveness", _m_gt0, b"ive"), (b"fulness", _m_gt0, b"ful"),
    (b"ousness", _m_gt0, b"ous"), (b"aliti", _m_gt0, b"al"), (b"iviti", _m_gt0, b"ive"),
    (b"biliti", _m_gt0, b"ble"))
_STEP3 = _rules(
    (b"ical", _m_gt0, b"ic"), (b"ness", _m_gt0, b""), (b"icate", _m_gt0, b"ic"), (b"iciti", _m_gt0, b"ic"),
    (b"ful", _m_gt0, b""), (b"ative", _m_gt0, b""), (b"alize", _m_gt0, b"al"))
_STEP4 = _rules(
    (b"al", _m_gt1, b""), (b"ance", _m_gt1, b""), (b"ence", _m_gt1, b""), (b"er", _m_gt1, b""),
    (b"ic", _m_gt1, b""), (b"able", _m_gt1, b""), (b"ible", _m_gt1, b""), (b"ant", _m_gt1, b""),
    (b"ement", _m_gt1, b""), (b"ment", _m_gt1, b""), (b"ent", _m_gt1, b""), (b"ion", _m_gt1_s_or_t, b""),
    (b"ou", _m_gt1, b""), (b"ism", _m_gt1, b""), (b"ate", _m_gt1, b""), (b"iti", _m_gt1, b""),
    (b"ous", _m_gt1, b""), (b"ive", _m_gt1, b""), (b"ize", _m_gt1, b""))


def _step(word: bytes, rules: dict[int, list[tuple]]) -> tuple[bytes, bytes | None]:
    """The word after the step, and the suffix of the rule that changed it (None if none did)."""
    for suffix, condition, replacement in rules.get(word[-2], ()) if len(word) > 1 else ():
        if len(word) > len(suffix) and word.endswith(suffix):
            stem = word[: -len(suffix)]
            if condition is None or condition(stem):
                return stem + replacement, suffix
            return word, None
    return word, None


def porter_stem(word: bytes) -> bytes:
    """fts5PorterCb's stemming of a token of 3 to 64 bytes."""
    if word[-1] == 0x73:                                    # step 1a: s
        if word[-2] == 0x65:                                # e
            sses_or_ies = (len(word) > 4 and word[-4:-2] == b"ss") or (len(word) > 3 and word[-3] == 0x69)
            word = word[:-2] if sses_or_ies else word[:-1]
        elif word[-2] != 0x73:
            word = word[:-1]
    word, suffix = _step(word, _STEP1B)
    if suffix in (b"ed", b"ing"):                           # removed (eed -> ee is not)
        word, suffix = _step(word, _STEP1B2)
        if suffix is None:
            last = word[-1]
            if not _vowel(last, False) and last not in b"lsz" and len(word) > 1 and last == word[-2]:
                word = word[:-1]
            elif _m_eq1(word) and _o_star(word):
                word += b"e"
    if word[-1] == 0x79 and _has_vowel(word[:-1]):          # step 1c: y -> i
        word = word[:-1] + b"i"
    word = _step(_step(_step(word, _STEP2)[0], _STEP3)[0], _STEP4)[0]
    if word[-1] == 0x65:                                    # step 5a: e
        stem = word[:-1]
        if _m_gt1(stem) or (_m_eq1(stem) and not _o_star(stem)):
            word = stem
    if len(word) > 1 and word[-2:] == b"ll" and _m_gt1(word[:-1]):  # step 5b
        word = word[:-1]
    return word
