"""Files a person names (to ingest, to import): what the path is when it is not a regular file,
and reads that never take more than a limit, whatever the file's size claims to be."""
from __future__ import annotations

import os
import stat
from pathlib import Path

from forest.errors import InvalidInput

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def regular_file(path: str | Path) -> Path:
    """`path` if it is a regular file (after symlinks); InvalidInput saying what it is otherwise."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InvalidInput(f"{path}: no such file") from None
    except PermissionError:
        raise InvalidInput(f"{path}: permission denied") from None
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot be read ({exc.strerror})") from None
    for test, kind in _KINDS:
        if test(mode):
            raise InvalidInput(f"{path} is {kind}, not a file")
    return path


def read_limited(path: str | Path, limit: int, limit_text: str) -> bytes:
    """A regular file's bytes; InvalidInput "<name> is over <limit_text>" once more than `limit`
    arrive, so a file that grows while it is read, or whose size stat misreports, stays bounded."""
    path = regular_file(path)
    too_big = InvalidInput(f"{path.name} is over {limit_text}")
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size > limit:  # refused before anything is read
                raise too_big
            data = handle.read(limit + 1)
    except PermissionError:
        raise InvalidInput(f"{path}: permission denied") from None
    if len(data) > limit:
        raise too_big
    return data
