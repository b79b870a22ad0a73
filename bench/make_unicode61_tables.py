"""Writes forest/storage/fulltext/unicode61.py: how SQLite FTS5's unicode61 tokenizer (remove_diacritics 2)
treats each code point above ASCII, measured from the SQLite this Python links (about a minute).

Each code point c is indexed in a row "a{c}a {c}" and the tokens read back (fts5vocab): "a{c}a"
as one token means c continues a token, and its middle is what c folds to; a token from the lone
"{c}" means c also starts one. forest.storage.fulltext.lexemes tokenizes with these tables;
tests/test_lexemes.py checks every code point against FTS5 again.

    .venv/bin/python -m bench.make_unicode61_tables
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

TARGET = Path(__file__).resolve().parents[1] / "forest" / "storage" / "fulltext" / "unicode61.py"
SURROGATES = range(0xD800, 0xE000)  # not encodable: FTS5 would read each as U+FFFD, a separator


def measure() -> tuple[dict[int, int], dict[int, int]]:
    """(class of each code point: 0 separator, 1 continues a token only, 2 starts one; what each
    token character folds to, 0 for dropped)."""
    conn = sqlite3.connect(":memory:")
    conn.text_factory = bytes
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    points = [c for c in range(0x80, 0x110000) if c not in SURROGATES]
    with conn:
        conn.executemany("INSERT INTO t (rowid, body) VALUES (?, ?)", ((c, f"a{chr(c)}a {chr(c)}") for c in points))
    tokens: dict[int, list[tuple[int, bytes]]] = {}
    for term, row, offset in conn.execute("SELECT term, doc, offset FROM v"):
        tokens.setdefault(row, []).append((offset, term))
    classes, folds = {}, {}
    for c in points:
        found = [term for _, term in sorted(tokens[c])]
        if found[0] == b"a":
            assert found[1] == b"a" and len(found) == 2, (c, found)
            classes[c] = 0
            continue
        folded = found[0][1:-1].decode()
        assert len(folded) <= 1 and len(found) <= 2, (c, found)
        folds[c] = ord(folded) if folded else 0
        classes[c] = 2 if len(found) == 2 else 1
        assert classes[c] == 1 or found[1] == found[0][1:-1], (c, found)
    assert all(folds[c] == 0 for c in classes if classes[c] == 1), "a mark that FTS5 keeps"
    assert all(folds[c] != 0 for c in classes if classes[c] == 2), "a token character that FTS5 drops"
    for c in SURROGATES:
        classes[c] = 0
    return classes, folds


def ranges(points: list[int]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for c in sorted(points):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return [(a, b) for a, b in out]


def runs(folds: dict[int, int]) -> list[tuple[int, int, int, int]]:
    """(first, count, step, delta): code points first, first + step, ... fold to themselves + delta."""
    out: list[list[int]] = []
    for c, target in sorted(folds.items()):
        if target in (0, c):
            continue
        delta = target - c
        if out:
            first, count, step, last_delta = out[-1]
            gap = c - (first + (count - 1) * step)
            if last_delta == delta and ((count == 1 and gap in (1, 2)) or (count > 1 and gap == step)):
                out[-1] = [first, count + 1, gap, delta]
                continue
        out.append([c, 1, 1, delta])
    return [tuple(r) for r in out]


def lines(items: list[tuple], per_line: int) -> str:
    rows = [", ".join(repr(i) for i in items[k:k + per_line]) for k in range(0, len(items), per_line)]
    return "".join(f"    {row},\n" for row in rows)


def main() -> None:
    classes, folds = measure()
    separators = ranges([c for c, k in classes.items() if k == 0])
    marks = ranges([c for c, k in classes.items() if k == 1])
    TARGET.write_text(f'''"""How SQLite FTS5's unicode61 tokenizer (remove_diacritics 2) treats the code points above
ASCII, measured from SQLite {sqlite3.sqlite_version} by bench/make_unicode61_tables.py (do not edit: run it).

Every code point not listed as a separator or a mark is a token character.
"""

# Separators, as inclusive ranges (surrogates included: FTS5 reads one as U+FFFD, a separator).
SEPARATORS = (
{lines(separators, 6)})
# Combining marks that continue a token but never start one; remove_diacritics drops them.
MARKS = (
{lines(marks, 6)})
# Case and diacritic folding of token characters, (first, count, step, delta): the code points
# first, first + step, ... (count of them) fold to themselves + delta; the rest fold to themselves.
FOLDS = (
{lines(runs(folds), 4)})
''')
    print(f"wrote {TARGET}: {len(separators)} separator ranges, {len(marks)} mark ranges")


if __name__ == "__main__":
    main()
