"""A researcher's library read into one kind of record, and the plan of importing it.

Readers: Zotero data directories (zotero.py), BibTeX/BibLaTeX files (bibtex.py), folders (folders.py);
read_library picks the reader. plan_import decides what an import adds, updates, skips and reports.
"""
from forest.library.bibtex import bibtex_of, bibtex_of_archives, citation_key_of, read_bibtex
from forest.library.citation import cite_as, cited_name, short_citation
from forest.library.entries import (
    Creator, LibraryEntry, LibraryError, LibraryReading, SkippedItem, SourceKind, normalize_doi,
)
from forest.library.folders import read_folder
from forest.library.identity import (
    ON_DUPLICATE, KnownDocument, PaperIdentity, SamePaper, check_on_duplicate, find_same,
)
from forest.library.paper import completed, paper_entry_metadata
from forest.library.plan import Duplicate, ImportPlan, PlannedDocument, file_sha256, plan_import
from forest.library.read import library_kind, read_library
from forest.library.zotero import find_base_directory, read_zotero

__all__ = [
    "ON_DUPLICATE", "Creator", "Duplicate", "ImportPlan", "KnownDocument", "LibraryEntry", "LibraryError",
    "LibraryReading", "PaperIdentity", "PlannedDocument", "SamePaper", "SkippedItem", "SourceKind", "bibtex_of", "bibtex_of_archives",
    "check_on_duplicate", "cite_as", "citation_key_of", "cited_name", "completed", "file_sha256", "find_base_directory", "find_same",
    "library_kind", "normalize_doi", "paper_entry_metadata", "plan_import", "read_bibtex",
    "read_folder", "read_library", "read_zotero", "short_citation",
]
