"""One record for a document found in a researcher's library, whatever the library is (a Zotero
data directory, a BibTeX file, a folder), and what reading a library gives back."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from forest.errors import InvalidInput

# "paper": what the document says of itself (its PDF's metadata and first page), no library behind it.
SourceKind = Literal["zotero", "bibtex", "folder", "paper"]

# Creator types that make a work's author line; Zotero also names "artist", "director", "programmer"
# ... as the primary creator of some item types, so when none of these is present, the first
# creator's type is taken as the primary one (see LibraryEntry.authors).
AUTHOR_TYPES = ("author",)


class LibraryError(InvalidInput):
    """The path is not a library that can be read (the message says what was expected)."""


@dataclass(frozen=True)
class Creator:
    """A person or an organisation credited on a work. An organisation (Zotero's one-field names,
    BibTeX's fully braced names) has its whole name in `last` and no `first`."""
    last: str
    first: str = ""
    creator_type: str = "author"

    def to_dict(self) -> dict[str, str]:
        return {"last": self.last, "first": self.first, "type": self.creator_type}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Creator:
        return cls(last=data.get("last", ""), first=data.get("first", ""),
                   creator_type=data.get("type", "author"))


@dataclass(frozen=True)
class LibraryEntry:
    """A document of a library and what the library knows about it.

    `path` is where the file should be; it may not exist (then `missing_reason` may say why, e.g. a
    linked file relative to a base directory that is not set, in which case `path` is None).
    `source_key` identifies the entry inside its source: the Zotero item key, the BibTeX citation key,
    or the path relative to the folder read.
    """
    path: Path | None
    title: str
    source_kind: SourceKind
    source_key: str = ""
    creators: tuple[Creator, ...] = ()
    year: int | None = None
    date: str = ""
    doi: str = ""
    arxiv_id: str = ""                    # "1705.07830", without its version
    venue: str = ""                       # the journal, proceedings or book it appeared in
    url: str = ""
    abstract: str = ""
    tags: tuple[str, ...] = ()
    collections: tuple[str, ...] = ()     # "Parent/Child" paths
    citation_key: str = ""
    item_type: str = ""                   # Zotero item type or BibTeX entry type, as the source names it
    missing_reason: str = ""
    notes: tuple[str, ...] = ()           # what reading changed ("field abstract cut from ... characters")

    @property
    def authors(self) -> tuple[Creator, ...]:
        """The creators a citation names: the authors, else those of the first creator's type
        (the editors of an edited volume, the artist of an artwork)."""
        authors = tuple(c for c in self.creators if c.creator_type in AUTHOR_TYPES)
        if authors or not self.creators:
            return authors
        primary = self.creators[0].creator_type
        return tuple(c for c in self.creators if c.creator_type == primary)

    def metadata(self) -> dict[str, Any]:
        """The bibliographic metadata as plain JSON values: what an archive stores and what an
        import compares to find changed metadata. The file's location is not part of it."""
        return {
            "title": self.title,
            "creators": [c.to_dict() for c in self.creators],
            "year": self.year,
            "date": self.date,
            "doi": self.doi,
            "arxiv_id": self.arxiv_id,
            "venue": self.venue,
            "url": self.url,
            "abstract": self.abstract,
            "tags": list(self.tags),
            "collections": list(self.collections),
            "citation_key": self.citation_key,
            "item_type": self.item_type,
            "source_kind": self.source_kind,
            "source_key": self.source_key,
        }

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any], path: Path | None = None) -> LibraryEntry:
        """The entry again from stored metadata (to cite or export an imported archive)."""
        return cls(
            path=path, title=metadata.get("title", ""), source_kind=metadata.get("source_kind", "folder"),
            source_key=metadata.get("source_key", ""),
            creators=tuple(Creator.from_dict(c) for c in metadata.get("creators", ())),
            year=metadata.get("year"), date=metadata.get("date", ""), doi=metadata.get("doi", ""),
            arxiv_id=metadata.get("arxiv_id", ""), venue=metadata.get("venue", ""), url=metadata.get("url", ""),
            abstract=metadata.get("abstract", ""),
            tags=tuple(metadata.get("tags", ())), collections=tuple(metadata.get("collections", ())),
            citation_key=metadata.get("citation_key", ""), item_type=metadata.get("item_type", ""))


@dataclass(frozen=True)
class SkippedItem:
    """An item of the library that gives no document, and why (no PDF attached, unparsable entry)."""
    source_key: str
    title: str
    reason: str


@dataclass(frozen=True)
class LibraryReading:
    """What reading a library found: its documents (files present or not) and the items skipped."""
    kind: SourceKind
    source: Path
    entries: tuple[LibraryEntry, ...] = ()
    skipped: tuple[SkippedItem, ...] = field(default=())

    @property
    def missing(self) -> tuple[LibraryEntry, ...]:
        return tuple(e for e in self.entries if e.path is None or not e.path.is_file())


def normalize_doi(value: str) -> str:
    """A DOI in its bare, lower-case form (DOIs are case-insensitive): "https://doi.org/10.1/X",
    "doi:10.1/X" and "10.1/x" are one DOI. Anything that is not a DOI gives ""."""
    text = value.strip()
    lowered = text.lower()
    for prefix in ("https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "http://dx.doi.org/",
                   "doi.org/", "doi:"):
        if lowered.startswith(prefix):
            text = text[len(prefix):].strip()
            break
    return text.lower() if text.startswith("10.") and "/" in text else ""


def year_in(text: str) -> int | None:
    """The first four-digit run in a date string ("May 2018", "2018-05-01", "2018/19"), else None."""
    run = ""
    for char in text:
        if char.isascii() and char.isdigit():
            run += char
            if len(run) == 4:
                return int(run) or None
        else:
            run = ""
    return None
