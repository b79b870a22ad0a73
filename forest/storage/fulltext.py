"""Full-text search (SQLite FTS5, BM25) over node text, with our own tokenization in front.

FTS5's unicode61 tokenizer splits "GPT-4" into "gpt" + "4" and keeps a run of Chinese characters
as one token, so "火山" would never match "大多数火山位于". The indexed body is therefore our
tokenizer's output (forest.text.tokenize: words, CJK character bigrams) joined by spaces, and a
query is built the same way: each user term becomes one phrase-quoted FTS5 phrase, so "GPT-4"
matches the adjacent tokens gpt 4 (whole) and "GPT" matches it too (part), and no user input is
ever parsed as FTS5 syntax.
"""
from __future__ import annotations

from forest.records import LEAF
from forest.text import STOPWORDS, tokenize


def index_text(node_type: str, summary: str, content: str) -> str:
    """What FTS5 indexes for a node: a leaf's text and summary; a summary node's summary only
    (its content repeats its leaves')."""
    text = f"{summary}\n{content}" if node_type == LEAF else summary
    return " ".join(tokenize(text or ""))


def query_phrases(query: str) -> list[str]:
    """The query's searchable terms, each as the space-joined tokens of one FTS5 phrase, in order,
    without repeats (a term of stopwords only is dropped)."""
    phrases = []
    for term in query.split():
        tokens = tokenize(term)
        if tokens and not all(t in STOPWORDS for t in tokens):
            phrase = " ".join(tokens)
            if phrase not in phrases:
                phrases.append(phrase)
    return phrases


def phrase_match(phrases: list[str]) -> str | None:
    """An FTS5 MATCH expression: every phrase quoted (never parsed as FTS5 syntax), joined by OR."""
    return " OR ".join('"{}"'.format(p.replace('"', '""')) for p in phrases) or None


def match_query(query: str) -> str | None:
    """An FTS5 MATCH expression: the query's terms as quoted phrases joined by OR; None if the
    query has no searchable term."""
    return phrase_match(query_phrases(query))
