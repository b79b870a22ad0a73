"""What a paper says of itself (forest.ingest.metadata: its PDF's metadata dictionary and first
page) as library metadata, and joined with what a library says of it: a reference manager's record
wins where it has a value, the paper fills the rest; a folder knows only a file name, so there the
paper's own title wins too."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forest.ingest.document import PaperMetadata
from forest.library.entries import Creator, LibraryEntry

_CURATED = ("zotero", "bibtex")


def paper_entry_metadata(paper: PaperMetadata) -> dict[str, Any]:
    """LibraryEntry.metadata() of a paper known only by itself (source_kind "paper")."""
    return LibraryEntry(
        path=None, title=paper.title, source_kind="paper", year=paper.year, doi=paper.doi,
        arxiv_id=paper.arxiv_id, venue=paper.venue,
        creators=tuple(Creator(last=last, first=first) for last, first in paper.authors)).metadata()


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
