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
    """The directory, created 0700 if missing (its missing parents get the usual mode: only the
    store's own directories are private)."""
    path = Path(path)
    if not path.is_dir():
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(PRIVATE_DIR)
    return path


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
