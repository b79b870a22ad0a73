"""What a paper says of itself (forest.ingest.metadata: its PDF's metadata dictionary and first
page) as library metadata, and joined with what a library says of it: a reference manager's record
wins where it has a value, the paper fills the rest; a folder knows only a file name, so there the
paper's own title wins too."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forest.ingest.document import PaperMetadata
from forest.library.entries import Creator, LibraryEntry
from forest.text import display_title

_CURATED = ("zotero", "bibtex")


def paper_entry_metadata(paper: PaperMetadata) -> dict[str, Any]:
    """LibraryEntry.metadata() of a paper known only by itself (source_kind "paper")."""
    # set in capitals on the page ("ASK THE RIGHT QUESTIONS", "CHRISTIAN BUCK"): as a reader writes them
    return LibraryEntry(
        path=None, title=display_title(paper.title), source_kind="paper", year=paper.year, doi=paper.doi,
        arxiv_id=paper.arxiv_id, venue=paper.venue,
        creators=tuple(_as_written(last, first) for last, first in paper.authors)).metadata()


def _as_written(last: str, first: str) -> Creator:
    """A person's name printed in capitals ("BUCK", "CHRISTIAN") as it is written ("Buck",
    "Christian"); an organisation (no first name) keeps its capitals: it may be an acronym."""
    if first and last.isupper() and first.replace(".", "").isupper():
        return Creator(last=last.title(), first=first.title())
    return Creator(last=last, first=first)


def completed(metadata: Mapping[str, Any] | None, paper: PaperMetadata | None) -> dict[str, Any] | None:
    """`metadata` (a library's record of the paper, or None) completed with what the paper says of
    itself; None when neither knows anything."""
    if paper is None or paper.empty:
        return dict(metadata) if metadata else None
    own = paper_entry_metadata(paper)
    if not metadata:
        return own
    merged = dict(metadata)
    curated = merged.get("source_kind") in _CURATED
    for name in ("title", "creators", "year", "doi", "arxiv_id", "venue"):
        if own.get(name) and (not merged.get(name) or (name == "title" and not curated)):
            merged[name] = own[name]
    return merged
