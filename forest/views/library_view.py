"""What the Library page shows of a model_id's archives: one row each with the paper's library
metadata, the choices its filters offer, and the filtering itself (by author, year, tag,
collection and words), cheap enough for a thousand archives on every rerun."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from forest.records import Archive
from forest.text import counted

# How an import's report names each count: (one, several).
_COUNTED = {"imported": ("imported", "imported"), "updated": ("updated", "updated"),
            "unchanged": ("unchanged", "unchanged"), "already": ("already in the library", "already in the library"),
            "replaced": ("replaced", "replaced"), "missing": ("missing", "missing"),
            "duplicates": ("duplicate", "duplicates"), "skipped": ("item without a document", "items without a document"),
            "failed": ("failed", "failed")}


def import_summary(report: dict[str, Any]) -> str:
    """'3 imported, 1 already in the library, 1 duplicate': an import's counts that are not zero,
    each in the right number; 'nothing to import' when all are."""
    said = [counted(n, *_COUNTED.get(what, (what, what))) for what, n in report["counts"].items() if n]
    return ", ".join(said) or "nothing to import"


def import_details(report: dict[str, Any]) -> list[str]:
    """One line per document an import did not simply import: updated, already in the library,
    replaced, missing, duplicate, failed, skipped; and what reading changed (a field cut)."""
    return ([f"updated: archive {u['archive_id']} {u.get('cite_as') or u['title']} ({', '.join(u['changed'])})"
             for u in report["updated"]]
            + [f"already in the library: {a['title']}: {a['reason']}" for a in report.get("already", [])]
            + [f"replaced: archive {r['replaces']} by archive {r['archive_id']} {r['title']} ({r['reason']})"
               for r in report.get("replaced", [])]
            + [f"missing: {m['title']}: {m['reason']}" for m in report["missing"]]
            + [f"duplicate: {d['title']}: {d['reason']} as {d['same_as']}" for d in report["duplicates"]]
            + [f"failed: {f['title']}: {f['error']}" for f in report["failed"]]
            + [f"without a document: {s['title'] or s['key']}: {s['reason']}" for s in report["skipped"]]
            + [f"note: {n['title'] or n['key']}: {n['note']}" for n in report.get("notes", [])])


@dataclass(frozen=True)
class ArchiveRow:
    archive: Archive
    cite_as: str
    authors: tuple[str, ...]        # family names, in order
    year: int | None
    tags: tuple[str, ...]
    collections: tuple[str, ...]
    haystack: str                   # lower-cased words a text filter matches: name, title, authors, DOI, abstract

    def to_dict(self) -> dict[str, Any]:
        a = self.archive
        pages = sum(d.get("pages") or 0 for d in a.documents if isinstance(d.get("pages"), int))
        return {"id": a.id, "cite as": self.cite_as, "name": a.name, "authors": ", ".join(self.authors),
                "year": str(self.year) if self.year else "", "pages": pages or "", "tags": ", ".join(self.tags),
                "collections": ", ".join(self.collections), "leaves": a.leaves, "nodes": a.nodes, "roots": a.roots,
                "depth": a.depth, "characters": a.chars, "status": a.status, "created": a.created_at}


def archive_rows(archives: Iterable[Archive]) -> list[ArchiveRow]:
    rows = []
    for archive in archives:
        meta = archive.library or {}
        authors = tuple(c.get("last") or c.get("first") or "" for c in meta.get("creators", []) if isinstance(c, dict))
        year = meta.get("year") if isinstance(meta.get("year"), int) else None
        words = [archive.name, meta.get("title", ""), *authors, meta.get("doi", ""), meta.get("abstract", "")]
        rows.append(ArchiveRow(archive, archive.cite_as or "", authors, year, tuple(meta.get("tags", ())),
                               tuple(meta.get("collections", ())), " ".join(map(str, words)).lower()))
    return rows


@dataclass(frozen=True)
class Choices:
    authors: list[str]
    years: tuple[int, int] | None
    tags: list[str]
    collections: list[str]


def choices(rows: Sequence[ArchiveRow]) -> Choices:
    years = [r.year for r in rows if r.year]
    return Choices(sorted({a for r in rows for a in r.authors if a}, key=str.casefold),
                   (min(years), max(years)) if years else None,
                   sorted({t for r in rows for t in r.tags}, key=str.casefold),
                   sorted({c for r in rows for c in r.collections}, key=str.casefold))


def filtered(rows: Sequence[ArchiveRow], text: str = "", authors: Sequence[str] = (), years: tuple[int, int] | None = None,
             tags: Sequence[str] = (), collections: Sequence[str] = ()) -> list[ArchiveRow]:
    """The rows matching every filter given: all the words of `text`; any of the authors, tags and
    collections (a collection also matches its subcollections); a year within `years`."""
    words = text.lower().split()
    wanted_collections = tuple(collections)
    kept = []
    for row in rows:
        if words and not all(w in row.haystack for w in words):
            continue
        if authors and not set(authors) & set(row.authors):
            continue
        if years and not (row.year is not None and years[0] <= row.year <= years[1]):
            continue
        if tags and not set(tags) & set(row.tags):
            continue
        if wanted_collections and not any(c == w or c.startswith(w + "/") for c in row.collections
                                          for w in wanted_collections):
            continue
        kept.append(row)
    return kept
