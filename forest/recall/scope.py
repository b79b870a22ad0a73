"""The archives a search or a question runs over: all of a model_id's, or the ones chosen, each
checked to be the model_id's."""
from __future__ import annotations

from collections.abc import Sequence

from forest.errors import InvalidInput
from forest.storage.archives import ForestStore


def chosen_archives(store: ForestStore, model_id: str, archive_ids: Sequence[int] | None) -> tuple[int, ...] | None:
    """The papers a question is asked over, as chosen: None (all of the model_id's), else the
    ids given, each one of the model_id's archives (the agent answers each of several chosen
    papers, all of them included)."""
    if archive_ids is None:
        return None
    if isinstance(archive_ids, (str, bytes)) or not all(isinstance(a, int) and not isinstance(a, bool)
                                                        for a in archive_ids):
        raise InvalidInput("archive_ids must be a list of archive ids (integers)")
    chosen = tuple(sorted(set(archive_ids)))
    if not chosen:
        raise InvalidInput("choose at least one archive to ask over (or none to ask over all of them)")
    for archive_id in chosen:
        store.archive(model_id, archive_id)   # NotFound: not the model_id's
    return chosen


def search_scope(store: ForestStore, model_id: str, archive_ids: Sequence[int] | None) -> tuple[int, ...] | None:
    """The archives a search runs over: None for all of the model_id's (its whole index, the
    fast path), else the ids given (chosen_archives)."""
    chosen = chosen_archives(store, model_id, archive_ids)
    if chosen is not None and set(chosen) == {a.id for a in store.archives(model_id) if a.status == "ready"}:
        return None
    return chosen
