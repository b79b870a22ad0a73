"""A parsed document, the contract between forest/ingest/ (which reads files) and the build.

A document is a sequence of passages in reading order. Each passage knows its section and pages,
so the chunks cut from it, and every answer built on them, can cite "p. 7, §3.2".
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

TEXT = "text"
CAPTION = "caption"   # a figure or table caption: always a chunk of its own


@dataclass(frozen=True)
class Passage:
    text: str
    section: str | None = None       # the nearest heading, e.g. "3.2 Model Architecture"
    page_start: int | None = None    # 1-based; None for documents without pages
    page_end: int | None = None
    kind: str = TEXT


@dataclass(frozen=True)
class Heading:
    title: str                 # as printed, numbering included: "3.2 Model Architecture"
    page: int | None = None
    level: int = 1


@dataclass(frozen=True)
class PaperMetadata:
    """A paper's bibliographic record as read from its PDF (forest.ingest.metadata); empty fields unknown."""

    title: str = ""
    authors: tuple[tuple[str, str], ...] = ()   # (last, first) in order; an organisation: (name, "")
    year: int | None = None
    venue: str = ""
    doi: str = ""          # bare, lower-case, e.g. "10.18653/v1/p18-1031"
    arxiv_id: str = ""     # without version: "1705.07830" or "hep-th/9901001"
    sources: Mapping[str, str] = field(default_factory=dict)  # field -> where it was read: "first page"...

    @property
    def empty(self) -> bool:
        return not (self.title or self.authors or self.year or self.venue or self.doi or self.arxiv_id)


@dataclass(frozen=True)
class Document:
    name: str
    source: str | None
    passages: list[Passage]
    title: str | None = None
    page_count: int | None = None
    headings: list[Heading] = field(default_factory=list)   # the document's structure, in order
    kept_file: str | None = None   # the original PDF's copy in the store (forest.storage.source_files), by name
    metadata: PaperMetadata | None = None   # title, authors, year... read from a PDF itself

    @property
    def text(self) -> str:
        return PASSAGE_SEPARATOR.join(p.text for p in self.passages)

    @property
    def sections(self) -> list[str]:
        return list(dict.fromkeys(p.section for p in self.passages if p.section))


PASSAGE_SEPARATOR = "\n\n"


