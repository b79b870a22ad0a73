"""A folder of papers and notes, read recursively: PDF, Markdown and text files.

Hidden files and folders (a leading dot: .git, .obsidian, .Trash) are skipped. Symbolic links to
folders are followed once: a link back to a folder already walked (a loop) is not entered again.
A file's folder, relative to the folder read, becomes its collection ("2018/NLP").
"""
from __future__ import annotations

import os
from pathlib import Path

from forest.ingest.files import not_a_file
from forest.library.entries import LibraryEntry, LibraryError, LibraryReading

DOCUMENT_SUFFIXES = (".pdf", ".md", ".markdown", ".txt")


def read_folder(root: Path | str) -> LibraryReading:
    root = Path(root).expanduser()
    if not root.is_dir():
        raise LibraryError(f"{root} is not a folder")
    entries: list[LibraryEntry] = []
    walked: set[tuple[int, int]] = set()
    for folder, subfolders, files in os.walk(root, followlinks=True):
        identity = _identity(folder)
        if identity in walked:      # reached again through a symbolic link
            subfolders[:] = []
            continue
        walked.add(identity)
        subfolders[:] = sorted(name for name in subfolders
                               if not name.startswith(".") and _identity(os.path.join(folder, name)) not in walked)
        relative_folder = Path(folder).relative_to(root)
        collections = () if relative_folder == Path(".") else (relative_folder.as_posix(),)
        for name in sorted(files):
            path = Path(folder) / name
            if name.startswith(".") or path.suffix.lower() not in DOCUMENT_SUFFIXES:
                continue
            entries.append(LibraryEntry(
                path=path, title=path.stem, source_kind="folder",
                source_key=path.relative_to(root).as_posix(), collections=collections,
                item_type=path.suffix.lower().lstrip("."),
                missing_reason=_unreadable(path)))
    return LibraryReading(kind="folder", source=root, entries=tuple(entries))


def _unreadable(path: Path) -> str:
    """Why a file the walk listed cannot be read ("" when it can): only a dangling symbolic link is
    listed and gone; a FIFO or a device is named as such, never opened."""
    problem = not_a_file(path)
    if problem == "does not exist":
        return "broken symbolic link"
    return f"{path} {problem}" if problem else ""


def _identity(folder: str) -> tuple[int, int]:
    stat = os.stat(folder)
    return stat.st_dev, stat.st_ino
