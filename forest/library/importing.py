"""Importing a researcher's library, once read (forest.library.read), into a model_id's forest: plan
it (each paper once, forest.library.plan), build what is new, update what changed, report every item.

The builds go through the tree pipeline, which this layer sees only as the `Builds` it is given
(forest.tree.pipeline.TreePipeline is one)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from forest.config import Settings
from forest.errors import AlreadyInLibrary, ForestError, ServiceUnavailable
from forest.library.citation import cite_as
from forest.library.identity import KnownDocument
from forest.library.plan import ImportPlan, plan_import
from forest.library.entries import LibraryReading
from forest.records import Archive, Progress, ProgressFn
from forest.storage.archives import ForestStore
from forest.storage.source_files import SourceFiles
from forest.storage.sql.database import Lock
from forest.storage.unfinished_builds import remove_builds, stale_builds
from forest.storage.vectors.base import VectorStore


class Builds(Protocol):
    """What an import builds with: the store's writer and its parts."""

    store: ForestStore
    vectors: VectorStore
    sources: SourceFiles
    writer_lock: Lock
    settings: Settings

    def ingest_file(self, path: str | Path, model_id: str, *, name: str | None = None,
                    progress: ProgressFn | None = None, **options: Any) -> Archive: ...

    def delete_archive(self, model_id: str, archive_id: int) -> None: ...


def import_library(builds: Builds, model_id: str, reading: LibraryReading, progress: ProgressFn,
                   on_duplicate: str = "skip") -> dict[str, Any]:
    """Import a Zotero data directory, a BibTeX file or a folder. New papers become archives
    carrying their metadata, the library's completed by what each PDF says of itself (each in one
    write: an interrupted import run again continues where it stopped); held ones whose metadata
    changed are updated, a library item's new file replaces its archive; a paper held otherwise is
    skipped, replaced or kept beside (`on_duplicate`). Missing files, duplicates, unreadable
    documents and items without a document are reported without failing the rest. A model server
    that does not answer stops the import."""
    store = builds.store
    with builds.writer_lock:  # what an interrupted import was building goes, before it is built again
        remove_builds(store, builds.vectors, builds.sources,
                      stale_builds(store.db, [a for a in store.all_archives() if a["model_id"] == model_id]))
    archives = store.archives(model_id)
    plan = plan_import(reading.entries, [KnownDocument.of(a) for a in archives], on_duplicate,
                       builds.settings.max_file_bytes)
    names = {a.id: a.name for a in archives}
    decided = set(names)   # what the plan saw, and what this import builds: never a duplicate of its own
    imported, updated, replaced, failed, built_since = [], [], [], [], []
    for done, planned in enumerate(plan.to_build):
        progress(Progress("import", done, len(plan.to_build), planned.title))
        try:  # planned again under the writer lock: what a concurrent import built since is not built twice
            archive = builds.ingest_file(planned.entry.path, model_id, name=planned.title,
                                         on_duplicate=on_duplicate, planned_against=decided,
                                         library={**planned.metadata, "file_sha256": planned.sha256})
        except AlreadyInLibrary as exc:
            built_since.append({"title": planned.title, "path": str(planned.entry.path),
                                "archive_id": exc.archive_id, "reason": str(exc)})
            continue
        except ServiceUnavailable:
            raise
        except ForestError as exc:  # this document cannot be read or built: the others go on
            failed.append({"title": planned.title, "path": str(planned.entry.path), "error": str(exc)})
            continue
        decided.add(archive.id)
        said = {"archive_id": archive.id, "title": archive.name, "cite_as": archive.cite_as}
        if planned.archive_id is None:
            imported.append(said)
            continue
        builds.delete_archive(model_id, int(planned.archive_id))   # built in the place of the one held
        if "file" in planned.changed_fields:
            updated.append({**said, "replaces": planned.archive_id, "changed": list(planned.changed_fields)})
        else:
            replaced.append({**said, "replaces": planned.archive_id, "reason": planned.same.reason})
    progress(Progress("import", len(plan.to_build), len(plan.to_build)))
    for planned in (p for p in plan.changed if "file" not in p.changed_fields):
        metadata = {**planned.metadata, "file_sha256": planned.sha256}
        store.set_library(model_id, int(planned.archive_id), metadata, cite_as(metadata))
        updated.append({"archive_id": planned.archive_id, "title": names.get(planned.archive_id),
                        "cite_as": cite_as(metadata), "changed": list(planned.changed_fields)})
    return _report(model_id, reading, plan, on_duplicate, imported, updated, replaced, failed, built_since)


def _report(model_id: str, reading: LibraryReading, plan: ImportPlan, on_duplicate: str, imported: list,
            updated: list, replaced: list, failed: list, built_since: list) -> dict[str, Any]:
    return {
        "model_id": model_id, "source": str(reading.source), "kind": reading.kind, "on_duplicate": on_duplicate,
        "counts": {"imported": len(imported), "updated": len(updated), "unchanged": len(plan.unchanged),
                   "already": len(plan.already) + len(built_since), "replaced": len(replaced),
                   "missing": len(plan.missing),
                   "duplicates": len(plan.duplicates), "skipped": len(reading.skipped), "failed": len(failed)},
        "imported": imported, "updated": updated, "replaced": replaced, "failed": failed,
        "already": [{"title": p.title, "path": str(p.entry.path), "archive_id": p.archive_id,
                     "reason": p.same.said()} for p in plan.already] + built_since,
        "missing": [{"title": e.title, "path": str(e.path) if e.path else None, "reason": e.missing_reason}
                    for e in plan.missing],
        "duplicates": [{"title": d.entry.title, "path": str(d.entry.path), "same_as": d.same_as.title,
                        "reason": d.reason} for d in plan.duplicates],
        "skipped": [{"title": s.title, "key": s.source_key, "reason": s.reason} for s in reading.skipped],
        "notes": [{"title": e.title, "key": e.source_key, "note": note} for e in reading.entries for note in e.notes],
    }
