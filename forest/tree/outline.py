"""A document's outline as the tree builder needs it: the heading path above every chunk, and the
text a document node's summary starts from (its abstract, else its opening paragraph)."""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from forest.ingest.document import Heading
from forest.text import STOPWORDS, cjk_ratio, content_terms, split_sentences, tokenize

HEADING_JOIN = " › "
OPENING_LEAVES = 5          # where a paper's abstract can be, when no heading says so
PROSE_STOPWORD_SHARE = 0.25   # English prose runs at 40-50% function words; an author list near 0
# Blanks bounded: "^\s*" at every line start of a run of empty lines would rescan the run (quadratic).
_INLINE_ABSTRACT = re.compile(r"^[ \t]{0,8}(?:abstract|摘[ \t]{0,3}要)[ \t]{0,8}[—–:：.-]\s{0,8}",
                              re.IGNORECASE | re.MULTILINE)
_ABSTRACT = re.compile(r"^\W*(?:\d+(?:\.\d+)*\.?\s*)?(abstract|summary|摘要|概要)\W*$", re.IGNORECASE)


@dataclass(frozen=True)
class DocumentOutline:
    """One document of a build: its title and, for each of its chunks, the headings above it."""

    title: str
    heading_paths: list[tuple[str, ...]]

    @property
    def has_headings(self) -> bool:
        return any(self.heading_paths)


def heading_paths(sections: Sequence[str | None], headings: Sequence[Heading]) -> list[tuple[str, ...]]:
    """For each item (passage or chunk, in reading order, named by its nearest heading), the
    headings above it, outermost first, from the document's outline: a heading that holds only
    subsections (no text of its own) is still an ancestor. An item is matched to the next heading
    of its name, else to the last one before (text that reading order puts after a later
    heading, as two-column pages can), else it stands alone."""
    outline: list[tuple[str, ...]] = []
    stack: list[Heading] = []
    for heading in headings:
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        stack.append(heading)
        outline.append(tuple(h.title for h in stack))
    paths: list[tuple[str, ...]] = []
    position = 0
    for section in sections:
        if section is None:
            paths.append(())
            continue
        if paths and paths[-1] and paths[-1][-1] == section:
            paths.append(paths[-1])
            continue
        ahead = next((k for k in range(position, len(headings)) if headings[k].title == section), None)
        if ahead is not None:
            position = ahead + 1
            paths.append(outline[ahead])
        else:
            behind = next((k for k in range(min(position, len(headings)) - 1, -1, -1)
                           if headings[k].title == section), None)
            paths.append(outline[behind] if behind is not None else (section,))
    return paths


def is_abstract(heading: str) -> bool:
    return bool(_ABSTRACT.match(heading.strip()))


def document_lead(texts: Sequence[str], paths: Sequence[tuple[str, ...]]) -> str:
    """The authors' own summary: the abstract's text; failing that the opening paragraph (the
    first text of real sentences, not a title, author or affiliation line)."""
    abstract = [t for t, p in zip(texts, paths) if p and is_abstract(p[0])]
    if abstract:
        return "\n\n".join(abstract)
    for text in texts[:OPENING_LEAVES]:
        inline = _INLINE_ABSTRACT.search(text)   # "Abstract—In this work, ..." (IEEE, ACM styles)
        if inline:
            return text[inline.end():]
    for text in texts:
        if _is_prose(text):
            return text
    return texts[0] if texts else ""


def _is_prose(text: str) -> bool:
    """Two sentences of six content words or more, and (outside CJK) the function words of running
    text: author lists and affiliations have almost none."""
    if sum(len(content_terms(s)) >= 6 for s in split_sentences(text)) < 2:
        return False
    if cjk_ratio(text) > 0.5:
        return True
    tokens = tokenize(text)
    return sum(t in STOPWORDS for t in tokens) >= PROSE_STOPWORD_SHARE * len(tokens)
