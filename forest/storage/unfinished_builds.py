"""Archives a build left unfinished: whether the process building one still lives, and removing
what a dead build wrote (rows, vectors and the PDF it kept). Doctor repairs them; a library import run again
removes its own interrupted builds before building them again."""
from __future__ import annotations

import os
import socket
from typing import Any

from forest.storage.archives import ForestStore, building
from forest.storage.source_files import SourceFiles
from forest.storage.sql.database import Database
from forest.storage.vectors.base import VectorStore


def _builder_alive(db: Database, archive: dict[str, Any]) -> bool:
    if archive["status"] != "building":
        return False
    held = db.held(building(archive["id"]))
    if held is not None:  # the database knows, whatever host the builder runs on
        return held
    if archive["builder_host"] != socket.gethostname():
        return True  # cannot see another host's processes: assume it is still working
    pid = archive["builder_pid"]
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (killed, not yet reaped) is as dead as a missing process.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return True


def stale_builds(db: Database, archives: list[dict[str, Any]]) -> list[int]:
    """The archives (store.all_archives() rows) a build left unfinished: not ready, no builder alive."""
    return [a["id"] for a in archives if a["status"] != "ready" and not _builder_alive(db, a)]


def remove_builds(store: ForestStore, vectors: VectorStore, sources: SourceFiles, archive_ids: list[int]) -> None:
    """Rows, vectors and kept PDFs of unfinished builds (stale_builds), whatever they got to write:
    a copied PDF no archive names goes too, as when an archive is deleted."""
    for archive_id in archive_ids:
        model_id = store.archive_model_id(archive_id)
        if model_id is not None:
            vectors.delete(model_id, store.archive_node_ids(archive_id))
            store.delete_archive_rows(archive_id)
    if archive_ids:
        sources.prune(store.kept_files())
