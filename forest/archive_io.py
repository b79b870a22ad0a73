"""Export an archive to one JSON document and import it elsewhere, ids remapped.

Summary nodes have no content of their own (it is their leaves', derived on read). The merge
history goes along, so the receiving store can replay the build. Vectors are exported on
request; they are reused on import only when the receiving store uses the same embedder, and
recomputed otherwise (leaves from content, summary nodes from title and summary, as a build
makes them).
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np

from forest.build import all_or_nothing, embedding_text, stored_leaf_context, write_archive
from forest.embedders import Embedder
from forest.errors import InvalidInput
from forest.records import LEAF, SUMMARY
from forest.store import ForestStore
from forest.vectors import VectorStore

FORMAT = "memory-forest-archive"
VERSION = 1
# Import limits: a file is parsed whole in memory and every node is written in one transaction, so an
# unbounded export could exhaust memory or hold the write lock for minutes. A 1,000-page book is about
# 10,000 nodes and 30 MB with vectors.
MAX_IMPORT_BYTES = 256 * 1024 * 1024
MAX_IMPORT_NODES = 100_000
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
                    "created_at": archive.created_at},
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


def import_archive(store: ForestStore, vectors: VectorStore, embedder: Embedder, model_id: str,
                   document: Any, name: str | None = None) -> int:
    """Validates everything before writing; returns the new archive id."""
    nodes = _validated_nodes(document)
    order = _children_first(nodes)
    offset = {ref: i for i, ref in enumerate(order)}
    by_ref = {n["ref"]: n for n in nodes}
    rows = [{"offset": offset[ref],
             "parent_offset": None if by_ref[ref]["parent_ref"] is None else offset[by_ref[ref]["parent_ref"]],
             "content": by_ref[ref]["content"] if by_ref[ref]["node_type"] == LEAF else "",
             **{k: by_ref[ref].get(k) for k in _CARRIED}} for ref in order]
    merges = [{**{k: m[k] for k in _MERGE_FIELDS}, "node_offset": offset.get(m.get("node_ref"))}
              for m in _validated_merges(document)]

    shipped = document.get("vectors") if document.get("embedder") == embedder.name else None
    if shipped and all(str(ref) in shipped for ref in order):
        node_vectors = np.array([shipped[str(ref)] for ref in order], dtype=np.float32)
        if node_vectors.shape[1] != embedder.dim:
            raise InvalidInput(f"the exported vectors have {node_vectors.shape[1]} dimensions, expected {embedder.dim}")
    else:
        documents = (document["archive"].get("settings") or {}).get("documents") or []
        node_vectors = embedder.embed_passages([embedding_text(r["node_type"], r["content"], r["summary"], r["title"],
                                                               stored_leaf_context(documents, r["leaf_index"],
                                                                                   r["heading_path"]))
                                                for r in rows])

    meta = document["archive"]
    archive_id = store.create_archive(model_id, (name or meta.get("name") or "imported").strip(),
                                      meta.get("source"), {**(meta.get("settings") or {}), "imported": True})
    with all_or_nothing(store, vectors, archive_id, model_id) as written_ids:
        write_archive(store, vectors, archive_id, model_id, rows, node_vectors, written_ids, merges)
    return archive_id


def read_export(raw: bytes | str, where: str = "the export") -> Any:
    """Parse an export file's text within MAX_IMPORT_BYTES; a clear InvalidInput otherwise."""
    if len(raw) > MAX_IMPORT_BYTES:
        raise InvalidInput(f"{where} is {len(raw):,} bytes; imports are limited to {MAX_IMPORT_BYTES:,}")
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInput(f"{where}: not a JSON export ({exc})") from None


def _validated_nodes(document: Any) -> list[dict[str, Any]]:
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
    refs = set()
    for n in nodes:
        if not isinstance(n, dict) or "ref" not in n or n.get("node_type") not in (LEAF, SUMMARY):
            raise InvalidInput("every node needs a 'ref' and a node_type of LEAF_CHUNK or SUMMARY_NODE")
        if n["ref"] in refs:
            raise InvalidInput(f"node ref {n['ref']!r} appears twice")
        refs.add(n["ref"])
        if not isinstance(n.get("summary"), str):
            raise InvalidInput(f"node {n['ref']!r} has no summary")
        if n["node_type"] == LEAF and not (isinstance(n.get("content"), str) and n["content"].strip()):
            raise InvalidInput(f"leaf {n['ref']!r} has no content")
        if not isinstance(n.get("first_leaf"), int) or not isinstance(n.get("last_leaf"), int):
            raise InvalidInput(f"node {n['ref']!r} needs integer first_leaf and last_leaf")
    kids: dict[Any, int] = {}
    for n in nodes:
        if n.get("parent_ref") is not None:
            if n["parent_ref"] not in refs:
                raise InvalidInput(f"node {n['ref']!r} names a parent {n['parent_ref']!r} that is not in the export")
            kids[n["parent_ref"]] = kids.get(n["parent_ref"], 0) + 1
    for n in nodes:
        if (n["node_type"] == SUMMARY) != (kids.get(n["ref"], 0) > 0):
            raise InvalidInput(f"node {n['ref']!r}: summary nodes must have children and leaves must not")
    return nodes


def _validated_merges(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The merge history, if the export has one (exports made before it existed do not)."""
    merges = document.get("merges") or []
    if not isinstance(merges, list) or not all(
            isinstance(m, dict) and all(isinstance(m.get(k), int) for k in _MERGE_FIELDS[:4]) for m in merges):
        raise InvalidInput("the export's 'merges' must be a list of merge steps with integer "
                           "merge_order, first_leaf, split_leaf and last_leaf")
    return merges


def _children_first(nodes: list[dict[str, Any]]) -> list[Any]:
    """Refs ordered so every child precedes its parent; a parent loop is an error."""
    parent = {n["ref"]: n.get("parent_ref") for n in nodes}
    depth: dict[Any, int] = {}
    for ref in parent:
        chain, current = [], ref
        while current is not None and current not in depth:
            if current in chain:
                raise InvalidInput(f"the export's parent links form a loop at node {current!r}")
            chain.append(current)
            current = parent[current]
        base = -1 if current is None else depth[current]
        for i, r in enumerate(reversed(chain)):
            depth[r] = base + 1 + i
    return sorted(parent, key=lambda r: (-depth[r], str(r)))
