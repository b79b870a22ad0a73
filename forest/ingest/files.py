"""Files a person names (to ingest, to import): what the path is when it is not a regular file,
and reads that never take more than a limit, whatever the file's size claims to be."""
from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

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
    _check_regular(path, mode)
    return path


def not_a_file(path: Path) -> str:
    """"" when `path` is a regular file (after symlinks), else what is wrong with it, to follow
    its name: "does not exist", "is a named pipe (FIFO), not a file", ..."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "does not exist"
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    kind = _kind(mode)
    return f"is {kind}, not a file" if kind else ""


def _kind(mode: int) -> str:
    """What a file of this mode is when it is not a regular file, else ""."""
    return next((kind for test, kind in _KINDS if test(mode)), "")


def _check_regular(path: Path, mode: int) -> None:
    kind = _kind(mode)
    if kind:
        raise InvalidInput(f"{path} is {kind}, not a file")


def file_limit(max_bytes: int) -> str:
    """How a refusal names the file size limit."""
    return f"the limit of {max_bytes / 1e6:,.1f} MB (setting max_file_mb)"


@contextmanager
def open_regular(path: str | Path, limit: int, limit_text: str) -> Iterator[BinaryIO]:
    """`path` opened for reading if it is a regular file of at most `limit` bytes; InvalidInput
    saying what it is otherwise. Opened with O_NONBLOCK, so a FIFO opens at once instead of waiting
    for a writer, and the opened descriptor is the one checked (fstat): a path swapped for a FIFO
    or a device after a check cannot make a read wait forever or never end."""
    path = regular_file(path)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except PermissionError:
        raise InvalidInput(f"{path}: permission denied") from None
    except OSError as exc:   # a socket (ENXIO), a file gone since the check
        raise InvalidInput(f"{path}: cannot be read ({exc.strerror})") from None
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(descriptor)
        _check_regular(path, status.st_mode)
        if status.st_size > limit:  # refused before anything is read
            raise InvalidInput(f"{path.name} is over {limit_text}")
        yield handle


def read_limited(path: str | Path, limit: int, limit_text: str) -> bytes:
    """A regular file's bytes; InvalidInput "<name> is over <limit_text>" once more than `limit`
    arrive, so a file that grows while it is read, or whose size stat misreports, stays bounded."""
    with open_regular(path, limit, limit_text) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise InvalidInput(f"{Path(path).name} is over {limit_text}")
    return data
