"""What an import of a library should do, given the papers the model_id's library holds: each paper
once (forest.library.identity: the same file, text, DOI, arXiv id, or title with first author and
year, whichever way the held paper came in).

Each entry's metadata is what its library says, completed with what its PDF says of itself (title,
authors, year, venue, DOI, arXiv id: forest.ingest.metadata). Then:
  - its file is one an archive holds: that paper; its metadata is updated when the entry says more
    or otherwise (a folder never overwrites a reference manager's record), else it is unchanged;
  - another file of a paper the same library item brought in before (a Zotero item's new PDF): its
    new version, which replaces the archive ("file" among the changed fields);
  - another file of a paper held otherwise (uploaded, another library): `on_duplicate` decides:
    "skip" (the default: reported as already in the library), "replace" (built, then the held
    archive is removed) or "keep" (built beside it);
  - none of these: new.
Within one import, an entry that is the same paper as an earlier entry is a duplicate, reported
once and not planned.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from forest.errors import InvalidInput
from forest.ingest.files import file_limit, open_regular
from forest.ingest.metadata import read_paper_metadata
from forest.library.entries import LibraryEntry
from forest.limits import DEFAULT_MAX_FILE_BYTES
from forest.library.identity import KnownDocument, PaperIdentity, SamePaper, check_on_duplicate, find_same
from forest.library.paper import completed

# Sources whose metadata comes from a reference manager; a folder only gives a file name, so
# importing a folder never overwrites the metadata a reference manager gave the same file.
_CURATED_SOURCES = ("zotero", "bibtex")


@dataclass(frozen=True)
class PlannedDocument:
    """A document to import, or one the library holds already (`same` says which and why).
    `metadata` is what to store: the entry's, completed by its PDF, keeping stored values it
    leaves empty."""
    entry: LibraryEntry
    sha256: str
    metadata: dict[str, Any]
    same: SamePaper | None = None
    changed_fields: tuple[str, ...] = ()

    @property
    def archive_id(self) -> int | str | None:
        return self.same.archive_id if self.same else None

    @property
    def title(self) -> str:
        return str(self.metadata.get("title") or "") or (self.entry.path.stem if self.entry.path else "")


@dataclass(frozen=True)
class Duplicate:
    """An entry not planned because an earlier entry of the same import is the same paper."""
    entry: LibraryEntry
    same_as: LibraryEntry
    reason: str             # "the same file", "the same DOI 10.1/x", ...


@dataclass(frozen=True)
class ImportPlan:
    new: tuple[PlannedDocument, ...] = ()
    changed: tuple[PlannedDocument, ...] = ()      # metadata to update, or ("file") a new version to build
    unchanged: tuple[PlannedDocument, ...] = ()
    already: tuple[PlannedDocument, ...] = ()      # another file of a held paper, skipped
    replacing: tuple[PlannedDocument, ...] = ()    # another file of a held paper, built in its place
    missing: tuple[LibraryEntry, ...] = ()
    duplicates: tuple[Duplicate, ...] = ()

    @property
    def to_build(self) -> list[PlannedDocument]:
        return [*self.new, *(p for p in self.changed if "file" in p.changed_fields), *self.replacing]

    def counts(self) -> dict[str, int]:
        return {"new": len(self.new), "changed": len(self.changed), "unchanged": len(self.unchanged),
                "already": len(self.already), "replacing": len(self.replacing), "missing": len(self.missing),
                "duplicates": len(self.duplicates)}


def file_sha256(path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> str:
    """The SHA-256 of a regular file of at most `max_bytes` (forest.ingest.files.open_regular: a
    FIFO, a device, a directory or a socket is refused, never waited on); InvalidInput otherwise."""
    digest = hashlib.sha256()
    read = 0
    with open_regular(path, max_bytes, file_limit(max_bytes)) as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            read += len(block)
            if read > max_bytes:      # a file that grows while it is read stays bounded
                raise InvalidInput(f"{path.name} is over {file_limit(max_bytes)}")
            digest.update(block)
    return digest.hexdigest()


def plan_import(entries: Iterable[LibraryEntry], known: Iterable[KnownDocument],
                on_duplicate: str = "skip", max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> ImportPlan:
    """Sort a library's entries into new, changed, unchanged, already held, replacing, missing and
    duplicate, given the papers the library holds. Files are read (hashed, their first page read),
    nothing is written. An entry whose file cannot be read (not a regular file, over `max_bytes`)
    is missing, with the reason in its missing_reason."""
    check_on_duplicate(on_duplicate)
    held = list(known)
    sorted_into: dict[str, list[PlannedDocument]] = {name: [] for name in
                                                      ("new", "changed", "unchanged", "already", "replacing")}
    missing, duplicates = [], []
    earlier: list[tuple[LibraryEntry, KnownDocument]] = []
    for entry in entries:
        digest, unreadable = _digest(entry, max_bytes)
        if digest is None:
            missing.append(replace(entry, missing_reason=unreadable))
            continue
        metadata = _read_with_paper(entry, max_bytes)
        identity = PaperIdentity.of(metadata, digest)
        repeated = find_same(identity, [k for _, k in earlier])
        if repeated is not None:
            first = next(e for e, k in earlier if k is repeated.known)
            duplicates.append(Duplicate(entry, first, repeated.reason))
            continue
        earlier.append((entry, KnownDocument(len(earlier), metadata, digest)))
        same = find_same(identity, held)
        kind, planned = _decide(entry, digest, metadata, same, on_duplicate)
        sorted_into[kind].append(planned)
    return ImportPlan(**{k: tuple(v) for k, v in sorted_into.items()}, missing=tuple(missing),
                      duplicates=tuple(duplicates))


def _decide(entry: LibraryEntry, digest: str, metadata: dict[str, Any], same: SamePaper | None,
            on_duplicate: str) -> tuple[str, PlannedDocument]:
    if same is None or (on_duplicate == "keep" and same.reason != "the same file"):
        return "new", PlannedDocument(entry, digest, metadata)
    stored = dict(same.known.metadata)
    if same.reason == "the same file":
        merged, changed = _merge(stored, entry, metadata)
        return ("changed" if changed else "unchanged"), PlannedDocument(entry, digest, merged, same, changed)
    if entry.source_kind in _CURATED_SOURCES and (stored.get("source_kind"), stored.get("source_key")) == \
            (entry.source_kind, entry.source_key):   # the same library item, with a new file
        merged, changed = _merge(stored, entry, metadata)
        return "changed", PlannedDocument(entry, digest, merged, same, ("file",) + changed)
    if on_duplicate == "replace":
        return "replacing", PlannedDocument(entry, digest, metadata, same)
    return "already", PlannedDocument(entry, digest, metadata, same)


def _read_with_paper(entry: LibraryEntry, max_bytes: int) -> dict[str, Any]:
    """The entry's metadata completed with what its PDF says of itself (read within the same limit
    as its digest: a PDF the setting allows is identified by its own DOI and title too)."""
    paper = read_paper_metadata(entry.path, max_bytes) if entry.path and entry.path.suffix.lower() == ".pdf" \
        else None
    return completed(entry.metadata(), paper) or entry.metadata()


def _digest(entry: LibraryEntry, max_bytes: int) -> tuple[str | None, str]:
    """(the file's SHA-256, "") or (None, why the file cannot be read). An entry its reader
    already refused (a stored file outside its folder) is not opened at all."""
    if entry.path is None or entry.missing_reason:
        return None, entry.missing_reason or "no file"
    try:
        return file_sha256(entry.path, max_bytes), ""
    except InvalidInput as error:
        return None, str(error)
    except OSError as error:
        return None, f"cannot read {entry.path}: {error.strerror or error}"


def _merge(stored: Mapping[str, Any], entry: LibraryEntry,
           metadata: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(metadata to store, names of the fields that change). An empty value in the entry keeps the
    stored one; a folder or a paper's own record never overwrites what a reference manager stored."""
    stored = dict(stored)
    if entry.source_kind not in _CURATED_SOURCES and stored.get("source_kind") in _CURATED_SOURCES:
        return stored, ()
    merged = dict(stored)
    changed = []
    for name, value in metadata.items():
        if not _empty(value) and stored.get(name) != value:
            merged[name] = value
            changed.append(name)
    return merged, tuple(changed)


def _empty(value: Any) -> bool:
    return value in ("", None, [], ())
