"""Export an archive to one JSON document and import it elsewhere, ids remapped.

Summary nodes have no content of their own (it is their leaves', derived on read). The merge
history goes along, so the receiving store can replay the build. Vectors are exported on
request; they are reused on import only when the receiving store uses the same embedder, and
recomputed otherwise (leaves from content, summary nodes from title and summary, as a build
makes them).
"""
from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from forest.config import CHUNKERS, MIN_CHUNK_SIZE
from forest.models.embedders import Embedder
from forest.errors import InvalidInput
from forest.records import LEAF, SUMMARY, Progress, ProgressFn
from forest.storage.archives import ForestStore
from forest.validation import parse_json
from forest.storage.vectors.base import VectorStore
from forest.tree.leaves import embedding_text, stored_leaf_context
from forest.limits import (
    MAX_ID, MAX_IMPORT_BYTES, MAX_IMPORT_NODES, MAX_IMPORT_PATH_IDS, MAX_LIBRARY_CHARS, MAX_NAME_CHARS,
    MAX_SUMMARY_CHARS)

FORMAT = "memory-forest-archive"
VERSION = 1
_CARRIED = ("node_type", "summary", "summary_source", "leaf_index", "char_start", "first_leaf", "last_leaf",
            "merge_order", "merge_similarity", "section", "page_start", "page_end", "chunk_kind", "title",
            "heading_path")
_MERGE_FIELDS = ("merge_order", "first_leaf", "split_leaf", "last_leaf", "similarity")


def export_archive(store: ForestStore, vectors: VectorStore, embedder_name: str, model_id: str,
                   archive_id: int, with_vectors: bool = False) -> dict[str, Any]:
    archive = store.archive(model_id, archive_id)
    nodes = store.archive_nodes(model_id, archive_id)
    document: dict[str, Any] = {
        "format": FORMAT, "version": VERSION,
        "archive": {"name": archive.name, "source": archive.source, "settings": archive.settings,
                    "created_at": archive.created_at, **({"library": archive.library} if archive.library else {})},
        "embedder": embedder_name,
        "nodes": [{"ref": n.id, "parent_ref": n.parent_id, **{k: getattr(n, k) for k in _CARRIED},
                   **({"content": n.content} if n.node_type == LEAF else {})} for n in nodes],
        "merges": [{**{k: getattr(m, k) for k in _MERGE_FIELDS}, "node_ref": m.node_id}
                   for m in store.merge_history(model_id, archive_id)],
    }
    if with_vectors:
        stored = vectors.get_vectors(model_id, [n.id for n in nodes])
        document["vectors"] = {str(i): [round(float(x), 7) for x in v] for i, v in stored.items()}
    return document


@dataclass
class PreparedImport:
    """A validated export, with its rows in write order and (once embed_import has run) their
    vectors: all an import writes."""

    name: str
    source: str | None
    settings: dict[str, Any]
    rows: list[dict[str, Any]]
    merges: list[dict[str, Any]]
    refs: list[Any]                         # the export's node refs, in the rows' order
    library: dict[str, Any] | None = None   # the paper's library metadata, as LibraryEntry reads it back
    cite_as: str | None = None
    vectors: np.ndarray | None = None

    @property
    def text_fingerprints(self) -> list[str]:
        """The SHA-256 of each document's text, as the exporting store recorded it."""
        return [str(d.get("sha256") or "") for d in self.settings.get("documents", []) if isinstance(d, dict)]


def check_import(document: Any, max_document_chars: int, name: str | None = None) -> PreparedImport:
    """Check every field of an export (InvalidInput naming the first problem); nothing is written,
    nothing embedded yet (embed_import), so no lock is needed meanwhile."""
    nodes = _validated_nodes(document, max_document_chars)
    leaves = sum(n["node_type"] == LEAF for n in nodes)
    meta = document["archive"]
    settings, problems = checked_settings(meta.get("settings", {}), leaves)
    if problems:
        raise InvalidInput(f"the export's archive settings: {problems[0]}")
    name = _text(name or meta.get("name") or "imported", "the archive name", MAX_NAME_CHARS, line=True).strip()
    if not name:
        raise InvalidInput("the archive name is empty")
    source = _optional_text(meta.get("source"), "the archive source", MAX_NAME_CHARS * 10, line=True)
    order, depth = _children_first(nodes)
    if sum(depth.values()) > MAX_IMPORT_PATH_IDS:
        raise InvalidInput(f"the export's tree is too deep: its nodes' paths from the root hold "
                           f"{sum(depth.values()):,} ids in all; imports are limited to {MAX_IMPORT_PATH_IDS:,}")
    offset = {ref: i for i, ref in enumerate(order)}
    by_ref = {n["ref"]: n for n in nodes}
    rows = [{"offset": offset[ref],
             "parent_offset": None if by_ref[ref]["parent_ref"] is None else offset[by_ref[ref]["parent_ref"]],
             "content": by_ref[ref]["content"] if by_ref[ref]["node_type"] == LEAF else "",
             **{k: by_ref[ref].get(k) for k in _CARRIED}} for ref in order]
    merges = [{**{k: m.get(k) for k in _MERGE_FIELDS}, "node_offset": offset.get(m.get("node_ref"))}
              for m in _validated_merges(document, by_ref, leaves)]
    library, cite_as = _checked_library(meta.get("library"))
    return PreparedImport(name, source, {**settings, "imported": True}, rows, merges, order, library, cite_as)


def embed_import(prepared: PreparedImport, document: dict[str, Any], embedder: Embedder,
                 progress: ProgressFn | None = None) -> PreparedImport:
    """The checked import with its vectors: the export's own when it ships them for this embedder,
    else computed as a build makes them (reported to `progress`)."""
    prepared.vectors = _import_vectors(document, prepared.refs, prepared.rows, embedder,
                                       prepared.settings.get("documents", []), progress)
    return prepared


def write_import(store: ForestStore, vectors: VectorStore, model_id: str, prepared: PreparedImport) -> int:
    """Write a prepared import all or nothing (hold the writer lock); returns the new archive id."""
    from forest.tree.build import all_or_nothing, write_archive  # loaded when writing, not by doctor's checks

    archive_id = store.create_archive(model_id, prepared.name, prepared.source, prepared.settings, prepared.library,
                                      prepared.cite_as)
    with all_or_nothing(store, vectors, archive_id, model_id) as written_ids:
        write_archive(store, vectors, archive_id, model_id, prepared.rows, prepared.vectors, written_ids,
                      prepared.merges)
    return archive_id


def _checked_library(value: Any) -> tuple[dict[str, Any] | None, str | None]:
    """An export's library metadata, read back through LibraryEntry (what is not of its shape is
    refused), with the citation made here rather than taken from the file."""
    from forest.library import LibraryEntry, cite_as

    if value is None:
        return None, None
    if not isinstance(value, dict) or len(json.dumps(value)) > MAX_LIBRARY_CHARS:
        raise InvalidInput(f"the export's library metadata must be an object of at most {MAX_LIBRARY_CHARS:,} characters")
    try:
        entry = LibraryEntry.from_metadata(value)
        sha = value.get("file_sha256")
        kept = {**entry.metadata(), **({"file_sha256": sha} if isinstance(sha, str) else {})}
        return kept, cite_as(kept)
    except (TypeError, ValueError, AttributeError) as exc:
        raise InvalidInput(f"the export's library metadata cannot be read: {exc}") from None


def _import_vectors(document: dict[str, Any], order: list[Any], rows: list[dict[str, Any]], embedder: Embedder,
                    documents: list[dict[str, Any]], progress: ProgressFn | None = None) -> np.ndarray:
    """The shipped vectors when the export was made with this embedder and has one for every
    node, else vectors computed as a build makes them."""
    shipped = document.get("vectors") if document.get("embedder") == embedder.name else None
    if shipped is not None and not isinstance(shipped, dict):
        raise InvalidInput("the export's 'vectors' must map node refs to vectors")
    if shipped and all(str(ref) in shipped for ref in order):
        try:
            node_vectors = np.array([shipped[str(ref)] for ref in order], dtype=np.float32)
        except (TypeError, ValueError):
            raise InvalidInput("the export's vectors must be lists of numbers of one length") from None
        if node_vectors.shape != (len(order), embedder.dim):
            raise InvalidInput(f"the export's vectors must each have {embedder.dim} numbers "
                               f"(got an array of shape {node_vectors.shape})")
        if not np.isfinite(node_vectors).all() or not np.linalg.norm(node_vectors, axis=1).all():
            raise InvalidInput("the export's vectors hold NaN, infinite or all-zero values")
        return node_vectors
    def report(done: int, total: int) -> None:
        if progress is not None:
            progress(Progress("embed", done, total, "nodes"))

    return embedder.embed_passages([embedding_text(r["node_type"], r["content"], r["summary"], r["title"],
                                                   stored_leaf_context(documents, r["leaf_index"], r["heading_path"]))
                                    for r in rows], progress=report)


def read_export(raw: bytes | str, where: str = "the export") -> Any:
    """Parse an export file's text within MAX_IMPORT_BYTES; a clear InvalidInput otherwise."""
    if len(raw) > MAX_IMPORT_BYTES:
        raise InvalidInput(f"{where} is {len(raw):,} bytes; imports are limited to {MAX_IMPORT_BYTES:,}")
    return parse_json(raw, where)


def _validated_nodes(document: Any, max_document_chars: int) -> list[dict[str, Any]]:
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise InvalidInput(f"not a Memory Forest archive export (expected format {FORMAT!r})")
    if document.get("version") != VERSION:
        raise InvalidInput(f"unsupported export version {document.get('version')!r}; this forest reads {VERSION}")
    if not isinstance(document.get("archive"), dict):
        raise InvalidInput("the export has no 'archive' object")
    nodes = document.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        raise InvalidInput("the export has no nodes")
    if len(nodes) > MAX_IMPORT_NODES:
        raise InvalidInput(f"the export has {len(nodes):,} nodes; imports are limited to {MAX_IMPORT_NODES:,}")
    refs: dict[str, Any] = {}
    for n in nodes:
        if not isinstance(n, dict) or n.get("node_type") not in (LEAF, SUMMARY):
            raise InvalidInput("every node must be an object with a node_type of LEAF_CHUNK or SUMMARY_NODE")
        ref = n.get("ref")
        if not (isinstance(ref, str) and 0 < len(ref) <= MAX_NAME_CHARS or _is_int(ref)):
            raise InvalidInput("every node needs a 'ref': an integer or a short string")
        if str(ref) in refs:  # vectors are keyed by str(ref): 1 and "1" are one node
            raise InvalidInput(f"node ref {ref!r} appears twice")
        refs[str(ref)] = ref
        _check_node(n)
    text = sum(len(n["content"]) for n in nodes if n["node_type"] == LEAF)
    if text > max_document_chars:
        raise InvalidInput(f"the export's passages have {text:,} characters, over the limit of "
                           f"{max_document_chars:,} (setting max_document_chars)")
    known = set(refs.values())
    kids: dict[Any, list[dict[str, Any]]] = {}
    for n in nodes:
        if n.get("parent_ref") is not None:
            if not _is_ref(n["parent_ref"]) or n["parent_ref"] not in known:
                raise InvalidInput(f"node {n['ref']!r} names a parent {n['parent_ref']!r} that is not in the export")
            kids.setdefault(n["parent_ref"], []).append(n)
    leaf_indexes = sorted(n["leaf_index"] for n in nodes if n["node_type"] == LEAF)
    if leaf_indexes != list(range(len(leaf_indexes))):
        raise InvalidInput("the leaves' leaf_index values must be 0, 1, 2, ... each once")
    for n in nodes:
        if (n["node_type"] == SUMMARY) != (n["ref"] in kids):
            raise InvalidInput(f"node {n['ref']!r}: summary nodes must have children and leaves must not")
        if n["node_type"] == SUMMARY:
            span = (min(k["first_leaf"] for k in kids[n["ref"]]), max(k["last_leaf"] for k in kids[n["ref"]]))
            if (n["first_leaf"], n["last_leaf"]) != span:
                raise InvalidInput(f"node {n['ref']!r} spans leaves {n['first_leaf']}-{n['last_leaf']}, but its "
                                   f"children span {span[0]}-{span[1]}")
    return nodes


def _check_node(n: dict[str, Any]) -> None:
    """One node's fields: their types, ranges and text (no NUL; names on one line)."""
    where = f"node {n['ref']!r}"
    _text(n.get("summary"), f"{where}'s summary", MAX_SUMMARY_CHARS)
    _text(n.get("summary_source"), f"{where}'s summary_source", MAX_NAME_CHARS, line=True)
    for key, limit in (("title", MAX_SUMMARY_CHARS), ("section", MAX_SUMMARY_CHARS), ("chunk_kind", MAX_NAME_CHARS)):
        _optional_text(n.get(key), f"{where}'s {key}", limit, line=True)
    for key in ("char_start", "merge_order", "page_start", "page_end"):
        if n.get(key) is not None and not (_is_int(n[key]) and n[key] >= 0):
            raise InvalidInput(f"{where}'s {key} must be a non-negative integer or null")
    if n.get("page_start") is not None and n.get("page_end") is not None and n["page_start"] > n["page_end"]:
        raise InvalidInput(f"{where} ends on a page before the one it starts on")
    if n.get("merge_similarity") is not None and not _is_finite_number(n["merge_similarity"]):
        raise InvalidInput(f"{where}'s merge_similarity must be a finite number or null")
    if not all(_is_int(n.get(key)) and n[key] >= 0 for key in ("first_leaf", "last_leaf")) \
            or n["first_leaf"] > n["last_leaf"]:
        raise InvalidInput(f"{where} needs integers 0 <= first_leaf <= last_leaf")
    if n["node_type"] == LEAF:
        _text(n.get("content"), f"leaf {n['ref']!r}'s content", MAX_IMPORT_BYTES)
        if not n["content"].strip():
            raise InvalidInput(f"leaf {n['ref']!r} has no content")
        if not _is_int(n.get("leaf_index")) or n["first_leaf"] != n["leaf_index"] or n["last_leaf"] != n["leaf_index"]:
            raise InvalidInput(f"leaf {n['ref']!r} needs an integer leaf_index equal to its first_leaf and last_leaf")
        if n.get("heading_path") is not None:
            headings = parse_json(_text(n["heading_path"], f"{where}'s heading_path", MAX_SUMMARY_CHARS),
                                  f"{where}'s heading_path")
            if not isinstance(headings, list):
                raise InvalidInput(f"{where}'s heading_path must be a JSON list of headings")
            for heading in headings:
                _text(heading, f"a heading of {where}", MAX_SUMMARY_CHARS, line=True)
    elif n.get("leaf_index") is not None or n.get("heading_path") is not None:
        raise InvalidInput(f"summary node {n['ref']!r} cannot have a leaf_index or heading_path")


def _validated_merges(document: dict[str, Any], by_ref: dict[Any, dict[str, Any]], leaves: int) -> list[dict[str, Any]]:
    """The merge history, if the export has one (exports made before it existed do not)."""
    merges = document.get("merges") or []
    if not isinstance(merges, list):
        raise InvalidInput("the export's 'merges' must be a list of merge steps")
    orders = set()
    for m in merges:
        if not isinstance(m, dict) or not all(_is_int(m.get(k)) for k in _MERGE_FIELDS[:4]):
            raise InvalidInput("every merge step needs integer merge_order, first_leaf, split_leaf and last_leaf")
        if not 0 <= m["first_leaf"] < m["split_leaf"] <= m["last_leaf"] < leaves or m["merge_order"] < 0:
            raise InvalidInput(f"merge step {m['merge_order']} needs 0 <= first_leaf < split_leaf <= last_leaf "
                               f"< {leaves} (the leaves) and a non-negative merge_order")
        if m["merge_order"] in orders:
            raise InvalidInput(f"merge step {m['merge_order']} appears twice")
        orders.add(m["merge_order"])
        if m.get("similarity") is not None and not _is_finite_number(m["similarity"]):
            raise InvalidInput(f"merge step {m['merge_order']}: similarity must be a finite number or null")
        node = m.get("node_ref")
        if node is not None and not (_is_ref(node) and by_ref.get(node, {}).get("node_type") == SUMMARY):
            raise InvalidInput(f"merge step {m['merge_order']} names node {node!r}, not a summary node of the export")
    return merges


def checked_settings(settings: Any, leaves: int) -> tuple[dict[str, Any], list[str]]:
    """An archive's settings (what its build recorded) with every field that is not as a build
    writes it left out, and what was wrong with each: an import refuses any problem; `forest
    doctor` reports those already stored, and --repair stores the checked settings."""
    if not isinstance(settings, dict):
        return {}, ["the settings must be an object"]
    checked: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in settings.items():
        check = _SETTING_CHECKS.get(key)
        problem = check(value) if check else None
        if problem:
            problems.append(f"{key} {problem}")
        else:
            checked[key] = value
    if "chunk_size" in checked and checked.get("chunk_overlap", 0) >= checked["chunk_size"]:
        problems.append("chunk_overlap must be smaller than chunk_size")
        checked.pop("chunk_overlap")
    if isinstance(checked.get("documents"), list):
        checked["documents"], document_problems = _checked_documents(checked["documents"], leaves)
        problems += document_problems
    return checked, problems


def _checked_documents(entries: list[Any], leaves: int) -> tuple[list[dict[str, Any]], list[str]]:
    """The document entries that are whole, in leaf order, without overlaps (records.document_entry)."""
    kept: list[dict[str, Any]] = []
    problems: list[str] = []
    after = 0
    for number, entry in enumerate(entries, 1):
        problem = _document_problem(entry, leaves, after)
        if problem:
            problems.append(f"documents entry {number} {problem}")
        else:
            kept.append(entry)
            after = entry["last_leaf"] + 1
    return kept, problems


def _document_problem(entry: Any, leaves: int, after: int) -> str | None:
    if not isinstance(entry, dict):
        return "must be an object"
    if not all(_is_int(entry.get(k)) for k in ("first_leaf", "last_leaf")) or \
            not after <= entry["first_leaf"] <= entry["last_leaf"] < leaves:
        return f"must hold leaves first_leaf..last_leaf in order, within the archive's {leaves}"
    for key in ("name", "title", "source"):
        if entry.get(key) is not None and not _clean_text(entry[key], MAX_NAME_CHARS * 10, line=True):
            return f"has a {key} that is not one line of text"
    if entry.get("pages") is not None and not (_is_int(entry["pages"]) and entry["pages"] >= 0):
        return "has a page count that is not a non-negative integer"
    if entry.get("sha256") is not None and not _HEX64.fullmatch(str(entry["sha256"])):
        return "has a sha256 that is not 64 hex digits"
    if entry.get("file") is not None and not _KEPT_FILE.fullmatch(str(entry["file"])):
        return "names a kept file that is not '<sha256>.pdf'"
    if not isinstance(entry.get("leaf_context", False), bool):
        return "has a leaf_context that is not true or false"
    return None


def _positive_int(least: int) -> Callable[[Any], str | None]:
    return lambda value: None if _is_int(value) and value >= least else f"must be an integer of at least {least}"


_SETTING_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "chunker": lambda value: None if value in CHUNKERS else f"must be one of {', '.join(CHUNKERS)}",
    "chunk_size": _positive_int(MIN_CHUNK_SIZE),
    "chunk_overlap": _positive_int(0),
    "merge_threshold": lambda value: None if _is_finite_number(value) and 0 <= value <= 1 else "must be 0-1",
    "max_node_chars": _positive_int(1),
    "embedder": lambda value: None if _clean_text(value, MAX_NAME_CHARS, line=True) else "must be a name",
    "imported": lambda value: None if isinstance(value, bool) else "must be true or false",
    "joined": lambda value: None if isinstance(value, list) and all(
        _clean_text(v, MAX_NAME_CHARS, line=True) for v in value) else "must be a list of archive names",
    "documents": lambda value: None if isinstance(value, list) else "must be a list",
}
_HEX64 = re.compile(r"[0-9a-f]{64}")
_KEPT_FILE = re.compile(r"[0-9a-f]{64}\.pdf")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= MAX_ID


def _is_ref(value: Any) -> bool:
    return isinstance(value, str) or _is_int(value)


def _is_finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _clean_text(value: Any, limit: int, line: bool = False) -> bool:
    """A string of at most `limit` characters without NUL (nor, for a name, any control character:
    no line break, no tab)."""
    if not isinstance(value, str) or len(value) > limit or "\x00" in value:
        return False
    return not line or not any(unicodedata.category(c) == "Cc" for c in value)


def _text(value: Any, what: str, limit: int, line: bool = False) -> str:
    if value is None:
        raise InvalidInput(f"{what} is missing")
    if not _clean_text(value, limit, line):
        raise InvalidInput(f"{what} must be text of at most {limit:,} characters, without NUL"
                           + (" or control characters (line breaks, tabs)" if line else ""))
    return value


def _optional_text(value: Any, what: str, limit: int, line: bool = False) -> str | None:
    return None if value is None else _text(value, what, limit, line)


def _children_first(nodes: list[dict[str, Any]]) -> tuple[list[Any], dict[Any, int]]:
    """Refs ordered so every child precedes its parent, and each node's depth; a parent loop is an error."""
    parent = {n["ref"]: n.get("parent_ref") for n in nodes}
    depth: dict[Any, int] = {}
    for ref in parent:
        chain, seen, current = [], set(), ref
        while current is not None and current not in depth:
            if current in seen:
                raise InvalidInput(f"the export's parent links form a loop at node {current!r}")
            chain.append(current)
            seen.add(current)
            current = parent[current]
        base = -1 if current is None else depth[current]
        for i, r in enumerate(reversed(chain)):
            depth[r] = base + 1 + i
    return sorted(parent, key=lambda r: (-depth[r], str(r))), depth
