"""Finds and repairs drift between SQLite (the truth) and the vector store.

Checks: unfinished builds whose builder is gone, vectors without a node, nodes of ready
archives without a vector, paths or depths that disagree with the parent_id adjacency list, and
files or directories of the data directory that other users may read (forest.storage.private_files), and
archive settings that are not as a build writes them (imported before imports were checked).
It also reports the personal memory write queue (depth, retries, the newest error), and, with a
graph mirror (graph_url), the users whose graph differs from SQL's facts (forest.personal.graph_mirror).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from forest.tree.archive_io import checked_settings
from forest.tree.reembedding import node_vectors
from forest.storage.sql.database import Database
from forest.models.embedders import Embedder
from forest.storage.paths import child_path
from forest.personal.graph_mirror import GraphMirror
from forest.personal.memory_store import PersonalStore
from forest.storage.graphs.base import GraphStoreError
from forest.storage.private_files import loose_modes, tighten
from forest.storage.archives import ForestStore
from forest.storage.source_files import SourceFiles
from forest.storage.unfinished_builds import remove_builds, stale_builds
from forest.storage.vectors.base import VectorStore


@dataclass
class DoctorReport:
    stale_builds: list[int] = field(default_factory=list)            # archive ids
    orphan_vectors: dict[str, list[int]] = field(default_factory=dict)  # model_id -> node ids
    missing_vectors: dict[str, list[int]] = field(default_factory=dict)
    bad_paths: list[int] = field(default_factory=list)               # node ids
    # "path mode" of what other users may read or enter under the data directory
    loose_permissions: list[str] = field(default_factory=list)
    bad_settings: dict[int, list[str]] = field(default_factory=dict)  # archive id -> what is wrong
    repaired: bool = False
    # The personal memory write queue (information: its failures retry by themselves).
    write_queue: dict[str, Any] = field(default_factory=dict)
    # user_id -> edges the graph mirror lacks ("missing"), holds beyond SQL ("extra") or holds
    # otherwise ("stale"); and why the mirror could not be examined, if it could not.
    graph_drift: dict[str, dict[str, int]] = field(default_factory=dict)
    graph_error: str | None = None

    @property
    def drift(self) -> bool:
        """The database and the vector store disagree."""
        return bool(self.stale_builds or self.orphan_vectors or self.missing_vectors or self.bad_paths)

    @property
    def healthy(self) -> bool:
        return not (self.drift or self.loose_permissions or self.bad_settings or self.graph_drift or self.graph_error)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "healthy": self.healthy}


def examine(db: Database, store: ForestStore, vectors: VectorStore, data_dir: Path,
            mirror: GraphMirror | None = None) -> DoctorReport:
    """`mirror`: the graph mirror to compare with SQL, when one is configured."""
    report = DoctorReport()
    archives = store.all_archives()
    report.stale_builds = stale_builds(db, archives)
    busy = {a["id"] for a in archives if a["status"] == "building" and a["id"] not in report.stale_builds}

    ready_nodes: dict[str, set[int]] = {}
    owned: dict[str, set[int]] = {}
    for node_id, model_id, status in store.node_owners():
        owned.setdefault(model_id, set()).add(node_id)
        if status == "ready":
            ready_nodes.setdefault(model_id, set()).add(node_id)
    for model_id in sorted(set(vectors.model_ids()) | set(ready_nodes)):
        stored = set(vectors.ids(model_id))
        orphans = sorted(stored - owned.get(model_id, set()))
        missing = sorted(ready_nodes.get(model_id, set()) - stored)
        if orphans:
            report.orphan_vectors[model_id] = orphans
        if missing:
            report.missing_vectors[model_id] = missing

    nodes = store.node_links()
    for node_id, row in nodes.items():
        if row["archive_id"] in busy:
            continue
        expected = _expected_path(node_id, nodes)
        if expected is None or (row["path"], row["depth"]) != expected:
            report.bad_paths.append(node_id)
    report.bad_settings = {archive_id: problems for archive_id, (_, problems) in _checked_settings(store).items()
                           if problems}
    personal = PersonalStore(db)
    report.write_queue = personal.queue_health()
    if mirror is not None:
        try:
            report.graph_drift = mirror.drift(personal.graph_users(), personal.graph_edges)
        except GraphStoreError as exc:
            report.graph_error = str(exc)
    report.loose_permissions = [f"{path} {mode:04o}" for path, mode in loose_modes(data_dir)]
    return report


def _checked_settings(store: ForestStore) -> dict[int, tuple[dict[str, Any], list[str]]]:
    """Every ready archive's settings as checked on import (archive_io.checked_settings); a build
    in progress has no leaves yet."""
    checked = {}
    for archive_id, stored, leaves in store.ready_settings():
        try:
            settings = json.loads(stored or "{}")
        except ValueError:
            checked[archive_id] = ({}, ["the settings are not JSON"])
        else:
            checked[archive_id] = checked_settings(settings, leaves)
    return checked


def _expected_path(node_id: int, nodes: dict[int, Any]) -> tuple[str, int] | None:
    """(path, depth) implied by the parent_id chain; None when the chain loops or leaves the archive."""
    chain = []
    current: int | None = node_id
    while current is not None:
        if current in chain or current not in nodes or nodes[current]["archive_id"] != nodes[node_id]["archive_id"]:
            return None
        chain.append(current)
        current = nodes[current]["parent_id"]
    path = ""
    for ancestor in reversed(chain):
        path = child_path(path, ancestor)
    return path, len(chain) - 1


def repair(db: Database, store: ForestStore, vectors: VectorStore, sources: SourceFiles, embedder: Embedder,
           report: DoctorReport, data_dir: Path, mirror: GraphMirror | None = None) -> None:
    remove_builds(store, vectors, sources, report.stale_builds)
    for model_id, ids in report.orphan_vectors.items():
        vectors.delete(model_id, ids)
    for model_id, ids in report.missing_vectors.items():
        for part_ids, part_vectors, metadatas in node_vectors(store, embedder, model_id, ids):
            vectors.upsert(model_id, part_ids, part_vectors, metadatas)
    if report.bad_paths:
        store.relink(_rebuilt_links)
    if report.loose_permissions:
        tighten(data_dir)
    if report.bad_settings:
        fixed = _checked_settings(store)
        store.set_settings({i: fixed[i][0] for i in report.bad_settings if i in fixed})
    if mirror is not None:
        personal = PersonalStore(db)
        for user_id in report.graph_drift:
            with personal.writing(user_id):  # under the user's lock: no write of theirs interleaves
                mirror.repair(user_id, personal.graph_edges)
    report.repaired = True


def _rebuilt_links(nodes: dict[int, dict[str, Any]]) -> list[tuple[int | None, str, int, int]]:
    """Every path and depth recomputed from parent_id, top-down, as (parent_id, path, depth, id);
    a parent outside the archive or a loop is cut (the node becomes a root)."""
    for node in nodes.values():
        parent = nodes.get(node["parent_id"]) if node["parent_id"] is not None else None
        if node["parent_id"] is not None and (parent is None or parent["archive_id"] != node["archive_id"]):
            node["parent_id"] = None
    children: dict[int | None, list[int]] = {}
    for node_id, node in nodes.items():
        children.setdefault(node["parent_id"], []).append(node_id)
    placed: dict[int, tuple[str, int]] = {}

    def place_subtree(top: int) -> None:
        stack = [(top, "", -1)]
        while stack:
            node_id, parent_path, parent_depth = stack.pop()
            if node_id in placed:
                continue
            placed[node_id] = (child_path(parent_path, node_id), parent_depth + 1)
            stack.extend((c, placed[node_id][0], parent_depth + 1) for c in children.get(node_id, []))

    for root in children.get(None, []):
        place_subtree(root)
    for node_id, node in nodes.items():
        if node_id not in placed:  # on a parent loop: cut the loop here
            node["parent_id"] = None
            place_subtree(node_id)
    return [(nodes[i]["parent_id"], p, d, i) for i, (p, d) in placed.items()]
