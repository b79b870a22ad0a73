"""The store is its owner's alone: the data directory and the directories under it are made 0700
and its files 0600 (the SQLite database, whose WAL and shared-memory files SQLite creates with
the database's mode, Chroma's files, vector snapshots, kept PDFs). A store made before, or a file
another program made looser, is reported by `forest doctor` and tightened by `--repair`."""
from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
OTHERS = stat.S_IRWXG | stat.S_IRWXO   # any group or other permission is too loose


def make_private_dir(path: Path | str) -> Path:
    """The directory, created 0700 if missing, and so is every missing parent (the data directory
    may first be made as the parent of its chroma directory); existing ones are left as they are."""
    path = Path(path)
    missing = [p for p in [path, *path.parents] if not p.exists()]
    for directory in reversed(missing):
        directory.mkdir(exist_ok=True)
        directory.chmod(PRIVATE_DIR)
    return path


# What forest keeps in a data directory: a directory holding nothing else is the store's own.
STORE_ENTRIES = frozenset(["forest.sqlite3", "forest.sqlite3-wal", "forest.sqlite3-shm", "forest.sqlite3-journal",
                           "chroma", "chroma.owner", "chroma.snapshots", "writer.lock", "sources"])


def claim_store_dir(directory: Path | str) -> None:
    """A new store made in a directory someone created beforehand (an empty one, or one holding
    only what forest put there): the directory becomes 0700 as if forest had made it. A directory
    holding anything else is not the store's own to change (doctor reports it)."""
    directory = Path(directory)
    if all(entry.name in STORE_ENTRIES for entry in directory.iterdir()):
        directory.chmod(PRIVATE_DIR)


def create_private_file(path: Path | str) -> None:
    """Create an empty file 0600 unless it exists (before another library opens it, so that it
    never exists with a looser mode)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, PRIVATE_FILE))
    except FileExistsError:
        pass


def open_private(path: Path | str, mode: str = "wb"):
    """open() for writing a new file that is 0600 from its first byte."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, PRIVATE_FILE)
    os.fchmod(fd, PRIVATE_FILE)   # a file that was there keeps its mode through O_CREAT (a 0644 one)
    return os.fdopen(fd, mode)


def loose_modes(root: Path | str) -> list[tuple[Path, int]]:
    """Every directory and file under `root` (itself included) that other users may read, write
    or enter, with its mode. Symbolic links are not followed."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = []
    for path in [root, *root.rglob("*")]:
        try:
            info = path.lstat()
        except FileNotFoundError:  # removed while we looked
            continue
        if (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)) and info.st_mode & OTHERS:
            found.append((path, stat.S_IMODE(info.st_mode)))
    return found


def tighten(root: Path | str) -> int:
    """Take every group and other permission off what is under `root` (a 0755 directory becomes
    0700, a 0644 file 0600); how many were changed."""
    changed = 0
    for path, mode in loose_modes(root):
        try:
            path.chmod(mode & ~OTHERS)
            changed += 1
        except FileNotFoundError:
            continue
    return changed
