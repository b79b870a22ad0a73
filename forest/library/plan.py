"""What an import of a library should do, given what is already imported: each document once.

A document is identified by the SHA-256 of its file's bytes, and by its DOI when it has one: a file
whose bytes are already imported is that archive; a different file with the DOI of an imported
archive is a new version of that archive's paper (reported as changed, with "file" among the changed
fields), not a second archive. Within one import, a second entry with the same bytes or the same DOI
as an earlier one is a duplicate, reported once and not planned.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from forest.library.entries import LibraryEntry, normalize_doi

# Sources whose metadata comes from a reference manager; a folder only gives a file name, so
# importing a folder never overwrites the metadata a reference manager gave the same file.
_CURATED_SOURCES = ("zotero", "bibtex")


@dataclass(frozen=True)
class KnownDocument:
    """An imported document: its archive, and the metadata stored with it (LibraryEntry.metadata())."""
    archive_id: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PlannedDocument:
    """A document to import (archive_id None) or an imported one the entry matches.
    `metadata` is what to store: the entry's metadata, keeping stored values the entry leaves empty."""
    entry: LibraryEntry
    sha256: str
    metadata: dict[str, Any]
    archive_id: str | None = None
    changed_fields: tuple[str, ...] = ()


@dataclass(frozen=True)
class Duplicate:
    """An entry not planned because an earlier entry of the same import is the same document."""
    entry: LibraryEntry
    same_as: LibraryEntry
    reason: str             # "same file" or "same DOI"


@dataclass(frozen=True)
class ImportPlan:
    new: tuple[PlannedDocument, ...] = ()
    changed: tuple[PlannedDocument, ...] = ()
    unchanged: tuple[PlannedDocument, ...] = ()
    missing: tuple[LibraryEntry, ...] = ()
    duplicates: tuple[Duplicate, ...] = ()

    def counts(self) -> dict[str, int]:
        return {"new": len(self.new), "changed": len(self.changed), "unchanged": len(self.unchanged),
                "missing": len(self.missing), "duplicates": len(self.duplicates)}


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def plan_import(entries: Iterable[LibraryEntry], known: Mapping[str, KnownDocument]) -> ImportPlan:
    """Sort a library's entries into new, changed, unchanged, missing and duplicate, given the
    imported documents by the SHA-256 of their file. Files are read (to hash them), nothing is written.
    An entry whose file cannot be read is missing, with the reason in its missing_reason."""
    known_by_doi: dict[str, KnownDocument] = {}
    for document in known.values():
        doi = normalize_doi(str(document.metadata.get("doi") or ""))
        if doi:
            known_by_doi.setdefault(doi, document)
    new, changed, unchanged, missing, duplicates = [], [], [], [], []
    first_by_hash: dict[str, LibraryEntry] = {}
    first_by_doi: dict[str, LibraryEntry] = {}
    for entry in entries:
        digest, unreadable = _digest(entry)
        if digest is None:
            missing.append(replace(entry, missing_reason=unreadable))
            continue
        doi = normalize_doi(entry.doi)
        if digest in first_by_hash:
            duplicates.append(Duplicate(entry, first_by_hash[digest], "same file"))
            continue
        if doi in first_by_doi:
            duplicates.append(Duplicate(entry, first_by_doi[doi], "same DOI"))
            continue
        first_by_hash[digest] = entry
        if doi:
            first_by_doi[doi] = entry
        match = known.get(digest)
        file_changed = False
        if match is None and doi in known_by_doi:
            match, file_changed = known_by_doi[doi], True
        if match is None:
            new.append(PlannedDocument(entry, digest, entry.metadata()))
            continue
        metadata, changed_fields = _merge(match.metadata, entry)
        if file_changed:
            changed_fields = ("file",) + changed_fields
        planned = PlannedDocument(entry, digest, metadata, match.archive_id, changed_fields)
        (changed if changed_fields else unchanged).append(planned)
    return ImportPlan(tuple(new), tuple(changed), tuple(unchanged), tuple(missing), tuple(duplicates))


def _digest(entry: LibraryEntry) -> tuple[str | None, str]:
    """(the file's SHA-256, "") or (None, why the file cannot be read)."""
    if entry.path is None:
        return None, entry.missing_reason or "no file"
    try:
        return file_sha256(entry.path), ""
    except FileNotFoundError:
        return None, entry.missing_reason or f"{entry.path} does not exist"
    except OSError as error:
        return None, f"cannot read {entry.path}: {error.strerror or error}"


def _merge(stored: Mapping[str, Any], entry: LibraryEntry) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(metadata to store, names of the fields that change). An empty value in the entry keeps the
    stored one; a folder entry keeps everything a reference manager stored."""
    stored = dict(stored)
    if entry.source_kind not in _CURATED_SOURCES and stored.get("source_kind") in _CURATED_SOURCES:
        return stored, ()
    merged = dict(stored)
    changed = []
    for name, value in entry.metadata().items():
        if value in ("", None, [], ()) and stored.get(name) not in ("", None, [], ()):
            continue
        if stored.get(name) != value:
            merged[name] = value
            changed.append(name)
    return merged, tuple(changed)
