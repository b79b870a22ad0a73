"""forest.storage.fulltext.lexemes gives exactly the tokens SQLite FTS5 indexes (read back through an
fts5vocab table, with the column sizes bm25() reads), with and without the porter stemmer: on
every code point, on real corpora run through our tokenizer as the indexes are, and on random
mixed-script text."""
from __future__ import annotations

import random
import sqlite3

import pytest

from eval_corpus import locomo_turns, qasper_leaves
from forest.storage.fulltext.lexemes import MAX_TOKEN_BYTES, lexemes
from forest.text import tokenize

TOKENIZERS = {False: "unicode61 remove_diacritics 2", True: "porter unicode61 remove_diacritics 2"}


def fts5_tokens(texts: list[str], porter: bool) -> list[list[str]]:
    """Each text's tokens as FTS5 indexes them, in order (bytes that are not UTF-8 as surrogates);
    checks that FTS5's column size of each row is its number of tokens."""
    conn = sqlite3.connect(":memory:")
    conn.text_factory = bytes
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(body, tokenize = '{TOKENIZERS[porter]}')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    with conn:
        conn.executemany("INSERT INTO t (rowid, body) VALUES (?, ?)", enumerate(texts, 1))
    found: list[list[tuple[int, bytes]]] = [[] for _ in texts]
    for term, row, offset in conn.execute("SELECT term, doc, offset FROM v"):
        found[row - 1].append((offset, term))
    for row, size in conn.execute("SELECT id, sz FROM t_docsize"):
        assert _varint(size) == len(found[row - 1])
    return [[term.decode(errors="surrogateescape") for _, term in sorted(tokens)] for tokens in found]


def _varint(data: bytes) -> int:
    value = 0
    for i, byte in enumerate(data[:9]):  # SQLite varint: 7 bits a byte, big-endian; a 9th byte gives 8
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            break
    return value


def mismatches(texts: list[str], porter: bool) -> list[tuple[str, list[str], list[str]]]:
    return [(text, want, lexemes(text, porter)) for text, want in zip(texts, fts5_tokens(texts, porter))
            if lexemes(text, porter) != want]


@pytest.mark.slow
def test_every_code_point():
    """Whether each code point separates, starts or continues a token, and what it folds to."""
    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    texts = ["".join(f"a{p}a {p}b {p} " for p in points[i:i + 4096]) for i in range(0, len(points), 4096)]
    assert mismatches(texts, porter=False) == []


@pytest.mark.slow
@pytest.mark.parametrize("porter", [False, True])
def test_real_corpora_as_indexed(porter):
    """All QASPER leaves and LoCoMo turns, as the indexes get them (our tokens joined by spaces)
    and as written."""
    texts = list(qasper_leaves()) + list(locomo_turns())
    assert mismatches([" ".join(tokenize(t)) for t in texts] + texts, porter) == []


RANDOM_PIECES = (list("aeiouy bcdfghklmnprstvwxz AEIOUY BCDFGZ 0123456789 '-_.,;:!?\"()[]{}<>/\\|&*@#$%^~`+=")
                 + ["é", "É", "ü", "ñ", "ç", "ß", "ø", "œ", "İ", "ı", "ǅ", "ﬁ", "Ω", "σ", "ς", "д", "Ж", "ё", "ア",
                    "中", "文", "火", "山", "가", "①", "²", "½", "٣", "\u0301", "\u0308", "\u0345", "\u200b",
                    "\u00a0", "\t", "\n", "\U0001f600", "\U00010400", "\U000e0001", "\ufffe", "\u0820", "ed",
                    "ing", "ies", "sses", "ational", "ization", "ness", "ement", "ll", "yy"])


def random_text(rng: random.Random) -> str:
    pieces = [rng.choice(RANDOM_PIECES) if rng.random() < 0.9 else chr(rng.choice(
        [rng.randrange(0x80, 0x800), rng.randrange(0x800, 0xD800), rng.randrange(0xE000, 0x110000)]))
        for _ in range(rng.randint(0, 80))]
    return "".join(pieces)


@pytest.mark.slow
@pytest.mark.parametrize("porter", [False, True])
def test_random_mixed_script_text(porter):
    rng = random.Random(61)
    texts = [random_text(rng) for _ in range(30_000)]
    assert mismatches(texts + [" ".join(tokenize(t)) for t in texts], porter) == []


@pytest.mark.slow
def test_porter_on_words_with_other_scripts_inside():
    """The stemmer works on UTF-8 bytes (a byte of a multi-byte character is a consonant to it), so
    its rules meet other scripts' bytes: words mixing them with English endings."""
    rng = random.Random(5)
    others = ["é", "ж", "ア", "ࠠ", "\U0001f600", "ß", "ø"]
    endings = ["", "s", "es", "ies", "sses", "ed", "eed", "ing", "y", "ational", "tional", "izer", "bli",
               "alli", "ousli", "ization", "ation", "iveness", "biliti", "icate", "ative", "alize", "ical",
               "ness", "ful", "ement", "ment", "ion", "sion", "tion", "ance", "able", "ize", "e", "ll", "at", "bl",
               "iz"]
    words = ["".join(rng.choice("aeiouybcdlmnrstwx" + "".join(others)) for _ in range(rng.randint(1, 9)))
             + rng.choice(endings) for _ in range(50_000)]
    assert mismatches(words, porter=True) == []


@pytest.mark.parametrize("porter", [False, True])
def test_tokens_over_the_size_limit_are_cut_as_fts5_cuts_them(porter):
    """FTS5 keeps a token's first 32768 bytes, even when that cuts a character in two."""
    texts = [ch * (MAX_TOKEN_BYTES // len(ch.encode()) + extra) + tail
             for ch in ("a", "é", "中", "\U0001f600", "ä") for extra in (-1, 0, 1, 7) for tail in ("", "x", " b")]
    texts.append("é" + "a" * MAX_TOKEN_BYTES)  # the cut falls after 32767 bytes and one of 'a'
    assert mismatches(texts, porter) == []
    assert len(lexemes("x" * 40_000, porter)[0]) == MAX_TOKEN_BYTES
