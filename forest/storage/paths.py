"""Materialized paths ('1/5/12/': ids from the root down, each followed by '/')."""
from __future__ import annotations

from collections.abc import Sequence


def path_ids(path: str) -> list[int]:
    return [int(part) for part in path.split("/") if part]


def child_path(parent_path: str | None, node_id: int) -> str:
    return f"{parent_path or ''}{node_id}/"


def positions_from_parents(parents: Sequence[int | None]) -> tuple[list[list[int]], list[int]]:
    """Path (item offsets, root first) and depth of every item, from each item's parent offset.

    A parent always has a higher offset than its children (builds and imports number them so),
    which lets one backward pass place every item.
    """
    paths: list[list[int]] = [[] for _ in parents]
    for item in range(len(parents) - 1, -1, -1):
        parent = parents[item]
        if parent is None:
            paths[item] = [item]
        elif parent <= item:
            raise ValueError(f"item {item} has parent {parent}; parents must come after their children")
        else:
            paths[item] = paths[parent] + [item]
    return paths, [len(path) - 1 for path in paths]


def common_ancestor_path(paths: Sequence[str]) -> str:
    """Path of the lowest common ancestor, compared id by id (so '1/5/' never matches '1/50/').

    Returns '' when the nodes lie in different trees.
    """
    if not paths:
        return ""
    split = [path_ids(p) for p in paths]
    prefix: list[int] = []
    for ids in zip(*split):
        if any(i != ids[0] for i in ids):
            break
        prefix.append(ids[0])
    return "".join(f"{i}/" for i in prefix)
