"""Which paper a document is: one check for every way a paper comes in (an upload, `forest ingest`, a
.bib, a Zotero library, a folder, an exported archive), so a paper is in a model_id's library once.

A document is the same paper as an archive's when, in this order: its file's bytes are the same
(SHA-256), or its text is (an archive records its documents' text fingerprints, so an export and a
Markdown file are recognised too), or its DOI is, or its arXiv id is, or its title (normalized) with
its first author's family name and its year are. Each is stronger evidence than the next; the first
that holds is the reason given ("already in the library as archive 2 (Ask the Right Questions): the
same DOI 10.1/x").
"""
from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from forest.errors import InvalidInput
from forest.library.entries import normalize_doi
from forest.records import Archive

# What to do with a paper the library already holds: not again (the default), instead of the one
# held (its archive is replaced once the new one is built), or beside it.
ON_DUPLICATE = ("skip", "replace", "keep")
MIN_TITLE_WORDS = 3   # "Introduction" or "Notes" alone names no paper


def check_on_duplicate(value: str) -> str:
    if value not in ON_DUPLICATE:
        raise InvalidInput(f"on_duplicate must be one of {', '.join(ON_DUPLICATE)}, got {value!r}")
    return value


@dataclass(frozen=True)
class PaperIdentity:
    file_sha256: str = ""
    text_sha256: tuple[str, ...] = ()
    doi: str = ""
    arxiv_id: str = ""
    work: str = ""        # title_key: normalized title, first author's family name, year

    @classmethod
    def of(cls, metadata: Mapping[str, Any] | None, file_sha256: str = "",
           text_sha256: Sequence[str] = ()) -> PaperIdentity:
        """A document's identity from its bibliographic metadata (LibraryEntry.metadata() shape) and
        fingerprints."""
        metadata = metadata or {}
        creators = [c for c in metadata.get("creators") or () if isinstance(c, Mapping)]
        first = next((str(c.get("last") or "") for c in creators if c.get("type", "author") == "author"), "")
        return cls(file_sha256=file_sha256 or str(metadata.get("file_sha256") or ""),
                   text_sha256=tuple(t for t in text_sha256 if t),
                   doi=normalize_doi(str(metadata.get("doi") or "")),
                   arxiv_id=normalize_arxiv_id(str(metadata.get("arxiv_id") or "")),
                   work=title_key(str(metadata.get("title") or ""), first, metadata.get("year")))


@dataclass(frozen=True)
class KnownDocument:
    """A paper the model_id's library holds: its archive (id and name), its library metadata
    (LibraryEntry.metadata(), "file_sha256" among them) and its documents' fingerprints."""
    archive_id: int | str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    file_sha256: str = ""
    text_sha256: tuple[str, ...] = ()
    name: str = ""

    @property
    def identity(self) -> PaperIdentity:
        return PaperIdentity.of(self.metadata, self.file_sha256, self.text_sha256)

    @classmethod
    def of(cls, archive: Archive) -> KnownDocument:
        """An archive as the library knows it: an archive holding several documents (appended,
        joined) is matched by each one's text, and by no single file."""
        files = [str(d.get("file") or "").removesuffix(".pdf") for d in archive.documents]
        return cls(archive.id, archive.library or {}, files[0] if len(files) == 1 else "",
                   tuple(str(d.get("sha256") or "") for d in archive.documents), archive.name)


@dataclass(frozen=True)
class SamePaper:
    known: KnownDocument
    reason: str          # "the same file", "the same DOI 10.1/x", ...

    @property
    def archive_id(self) -> int | str:
        return self.known.archive_id

    def said(self) -> str:
        """'already in the library as archive 2 (Ask the Right Questions): the same file'."""
        return f"already in the library as archive {self.known.archive_id} ({self.known.name}): {self.reason}"


def find_same(candidate: PaperIdentity, known: Iterable[KnownDocument]) -> SamePaper | None:
    """The paper of the library that `candidate` is, by the strongest evidence any has."""
    identities = [(document, document.identity) for document in known]
    for reason, matches in _RULES:
        for document, identity in identities:
            said = matches(candidate, identity)
            if said:
                return SamePaper(document, reason.format(said))
    return None


def _same_file(a: PaperIdentity, b: PaperIdentity) -> str:
    return "yes" if a.file_sha256 and a.file_sha256 == b.file_sha256 else ""


def _same_text(a: PaperIdentity, b: PaperIdentity) -> str:
    return "yes" if set(a.text_sha256) & set(b.text_sha256) else ""


def _same_doi(a: PaperIdentity, b: PaperIdentity) -> str:
    return a.doi if a.doi and a.doi == b.doi else ""


def _same_arxiv(a: PaperIdentity, b: PaperIdentity) -> str:
    return a.arxiv_id if a.arxiv_id and a.arxiv_id == b.arxiv_id else ""


def _same_work(a: PaperIdentity, b: PaperIdentity) -> str:
    return "yes" if a.work and a.work == b.work else ""


_RULES = (("the same file", _same_file), ("the same text", _same_text), ("the same DOI {}", _same_doi),
          ("the same arXiv id {}", _same_arxiv), ("the same title, first author and year", _same_work))


def title_key(title: str, first_author: str, year: object) -> str:
    """'ask the right questions active question reformulation|buck|2018': the title's words
    (accents, case and punctuation folded), the first author's family name and the year; "" when
    any is missing or the title is too short to name a paper."""
    words = _folded(title).split()
    family = "".join(_folded(first_author).split())
    if len(words) < MIN_TITLE_WORDS or not family or not isinstance(year, int) or isinstance(year, bool):
        return ""
    return f"{' '.join(words)}|{family}|{year}"


def _folded(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c if c.isalnum() else " " for c in decomposed if not unicodedata.combining(c))


def normalize_arxiv_id(value: str) -> str:
    """'arXiv:1705.07830v3', 'https://arxiv.org/abs/1705.07830' -> '1705.07830'; old-style ids
    ('hep-th/9901001v2') keep their archive; anything else gives ""."""
    text = value.strip()
    lowered = text.lower()
    for prefix in ("https://arxiv.org/abs/", "http://arxiv.org/abs/", "https://arxiv.org/pdf/", "arxiv.org/abs/",
                   "arxiv:"):
        if lowered.startswith(prefix):
            text = text[len(prefix):]
            break
    text = text.removesuffix(".pdf")
    stem, _, version = text.rpartition("v")
    if stem and version.isdigit():
        text = stem
    new_style = text.partition(".")
    if new_style[0].isdigit() and len(new_style[0]) == 4 and new_style[2].isdigit() and 4 <= len(new_style[2]) <= 5:
        return text
    archive, slash, number = text.partition("/")
    if slash and number.isdigit() and len(number) == 7 and archive.replace("-", "").replace(".", "").isalpha():
        return text.lower()
    return ""
