"""A set of files written under one folder that nothing can steer outside it (the Markdown notes
export): every file is first created exclusively (O_EXCL), 0600, in a private staging folder made
inside FOLDER, then renamed into its place. Nothing under FOLDER is followed: a subfolder that is a
symbolic link is refused (O_NOFOLLOW), and a rename replaces a file or a symbolic link itself,
never what a link points to. A failure before the renames (a name too long, a full disk, a
refused subfolder) leaves FOLDER as it was; the staging folder is always removed. FOLDER itself is
the caller's own path and is taken as given."""
from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from pathlib import Path

from forest.errors import InvalidInput
from forest.storage.private_files import PRIVATE_DIR, PRIVATE_FILE, make_private_dir

NAME_MAX_BYTES = 255  # one path component, in bytes, on the usual file systems
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def write_confined(folder: Path | str, files: Mapping[str, str]) -> list[str]:
    """Write `files` ({path relative to folder, '/'-separated: text}) as UTF-8 under `folder`
    (made 0700 if missing); the paths written, sorted. An InvalidInput names what was refused."""
    parts = {name: _components(name) for name in files}
    staging, renamed = None, 0
    try:
        root = make_private_dir(folder)
        with ExitStack() as fds:
            def opened(fd: int) -> int:
                fds.callback(os.close, fd)
                return fd

            root_fd = opened(os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
            for name, (where, base) in parts.items():
                _check_place(root_fd, where, base, name)
            staging = Path(tempfile.mkdtemp(prefix=".forest-export-", dir=root))  # 0700, a fresh name
            staging_fd = opened(os.open(staging.name, _DIRECTORY, dir_fd=root_fd))
            folders = {f for f, _ in parts.values()}  # each opened once: a thousand notes, a few fds
            staged = {f: _folder(staging_fd, f, opened) for f in folders}
            for name, (where, base) in parts.items():
                with os.fdopen(os.open(base, _NEW_FILE, PRIVATE_FILE, dir_fd=staged[where]), "w",
                               encoding="utf-8") as out:
                    out.write(files[name])
            placed = {f: _folder(root_fd, f, opened) for f in folders}
            for where, base in parts.values():  # all written and checked: now the renames
                os.rename(base, base, src_dir_fd=staged[where], dst_dir_fd=placed[where])
                renamed += 1
    except OSError as exc:
        written = f"{renamed} of {len(parts)} notes were put in place" if renamed else "nothing was written"
        raise InvalidInput(f"cannot write the notes under {folder}: {exc.strerror or exc}"
                           f"{f': {exc.filename}' if exc.filename else ''}; {written}") from None
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    return sorted(files)


def _components(name: str) -> tuple[tuple[str, ...], str]:
    """'papers/x.md' -> (['papers'], 'x.md'); a name that could leave the folder, or is too long
    for a file system, is refused."""
    pieces = name.split("/")
    for piece in pieces:
        if piece in ("", ".", "..") or "\0" in piece or len(piece.encode("utf-8", "surrogatepass")) > NAME_MAX_BYTES:
            raise InvalidInput(f"refused file name {name[:80]!r}: a path inside the folder, each part "
                               f"at most {NAME_MAX_BYTES} bytes")
    return tuple(pieces[:-1]), pieces[-1]


def _folder(parent_fd: int, folders: tuple[str, ...], opened: Callable[[int], int]) -> int:
    """The subfolder under `parent_fd` (made 0700 where missing), opened without following a link."""
    fd = parent_fd
    for part in folders:
        try:
            os.mkdir(part, PRIVATE_DIR, dir_fd=fd)
        except FileExistsError:
            pass
        try:
            fd = opened(os.open(part, _DIRECTORY, dir_fd=fd))
        except OSError as exc:  # ELOOP: a symbolic link; ENOTDIR: a file
            raise InvalidInput(f"refused to write under {part!r}: it is a symbolic link or not a folder "
                               f"({exc.strerror}); nothing was written") from None
    return fd


def _check_place(root_fd: int, where: tuple[str, ...], base: str, name: str) -> None:
    """Refused before anything is written: a subfolder that is a symbolic link or a file, a note
    whose place is a folder. (_folder checks the subfolders again as it opens them.)"""
    for depth in range(1, len(where) + 1):
        mode = _mode(root_fd, "/".join(where[:depth]))
        if mode is None:
            return
        if not stat.S_ISDIR(mode):
            raise InvalidInput(f"refused to write under {'/'.join(where[:depth])!r}: it is a symbolic link or "
                               f"not a folder; nothing was written")
    mode = _mode(root_fd, "/".join((*where, base)))
    if mode is not None and stat.S_ISDIR(mode):
        raise InvalidInput(f"refused to replace the folder {name!r} with a note; nothing was written")


def _mode(root_fd: int, path: str) -> int | None:
    try:
        return os.stat(path, dir_fd=root_fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None
