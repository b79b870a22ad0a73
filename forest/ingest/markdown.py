"""Plain text and Markdown to passages: ATX headings (`## Results`) become sections, blank lines
separate paragraphs. Plain text without headings is one section-less run of paragraphs."""
from __future__ import annotations

import re

from forest.ingest.document import Heading, Passage

HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")


def read_markdown(text: str) -> tuple[str | None, list[Passage], list[Heading]]:
    """(title, passages, headings). A level-1 heading at the top is the title, not a section."""
    title: str | None = None
    section: str | None = None
    passages: list[Passage] = []
    headings: list[Heading] = []
    paragraph: list[str] = []
    in_fence = False

    def flush() -> None:
        body = "\n".join(paragraph).strip()
        if body:
            passages.append(Passage(body, section))
        paragraph.clear()

    for line in text.splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
        heading = None if in_fence else HEADING.match(line)
        if heading:
            flush()
            level, name = len(heading.group(1)), heading.group(2).strip()
            if level == 1 and title is None and not passages:
                title = name
            else:
                section = name
                headings.append(Heading(name, None, level))
        elif not line.strip() and not in_fence:
            flush()
        else:
            paragraph.append(line)
    flush()
    return title, passages, headings
