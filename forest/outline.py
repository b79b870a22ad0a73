"""A document's outline as the tree builder needs it: the heading path above every chunk, and the
text a document node's summary starts from (its abstract, else its opening paragraph)."""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from forest.document import Heading
from forest.text import content_terms, split_sentences

HEADING_JOIN = " › "
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
    headings above it, outermost first. The document's headings are walked in order alongside,
    so a heading that holds only subsections (no text of its own) is still an ancestor."""
    paths: list[tuple[str, ...]] = []
    stack: list[Heading] = []
    position = 0
    for section in sections:
        if section is not None and (not stack or stack[-1].title != section):
            found = next((k for k in range(position, len(headings)) if headings[k].title == section), None)
            if found is None:
                stack = [Heading(section)]
            else:
                for heading in headings[position : found + 1]:
                    while stack and stack[-1].level >= heading.level:
                        stack.pop()
                    stack.append(heading)
                position = found + 1
        paths.append(tuple(h.title for h in stack) if section is not None else ())
    return paths


def is_abstract(heading: str) -> bool:
    return bool(_ABSTRACT.match(heading.strip()))


def document_lead(texts: Sequence[str], paths: Sequence[tuple[str, ...]]) -> str:
    """The authors' own summary: the abstract's text; failing that the opening paragraph (the
    first text of real sentences, not a title, author or affiliation line)."""
    abstract = [t for t, p in zip(texts, paths) if p and is_abstract(p[0])]
    if abstract:
        return "\n\n".join(abstract)
    for text in texts:
        prose = [s for s in split_sentences(text) if len(content_terms(s)) >= 6]
        if len(prose) >= 2:
            return " ".join(prose)
    return texts[0] if texts else ""
