"""Read a library whatever it is: a Zotero data directory, a BibTeX/BibLaTeX file, or a folder."""
from __future__ import annotations

from pathlib import Path

from forest.library.bibtex import BIBTEX_SUFFIXES, read_bibtex
from forest.library.entries import LibraryError, LibraryReading, SourceKind
from forest.limits import DEFAULT_MAX_FILE_BYTES
from forest.library.folders import read_folder
from forest.library.zotero import DATABASE, read_zotero
from forest.text import truncate
from forest.limits import MAX_PATH_CHARS


def library_kind(path: Path | str) -> SourceKind:
    """"zotero" for a folder holding zotero.sqlite (or that file itself), "bibtex" for a .bib file,
    "folder" for any other folder; a clear LibraryError for anything else."""
    if len(str(path)) > MAX_PATH_CHARS:
        raise LibraryError(f"the path has {len(str(path)):,} characters: a path has at most {MAX_PATH_CHARS:,}")
    path = Path(path).expanduser()
    try:
        if not path.exists():
            raise LibraryError(f"{truncate(str(path), 300)} does not exist")
    except OSError as error:   # a name too long for the file system, a path it cannot look up
        raise LibraryError(f"{truncate(str(path), 300)} cannot be read: {error.strerror or error}") from None
    if path.is_dir():
        return "zotero" if (path / DATABASE).is_file() else "folder"
    if path.name == DATABASE:
        return "zotero"
    if path.suffix.lower() in BIBTEX_SUFFIXES:
        return "bibtex"
    raise LibraryError(f"{path} is not a library: give a Zotero data directory (the folder with "
                       f"{DATABASE}), a BibTeX or BibLaTeX file ({', '.join(BIBTEX_SUFFIXES)}), or a folder "
                       "of PDF, Markdown and text files")


def read_library(path: Path | str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> LibraryReading:
    """The library's entries; a .bib is read within `max_bytes`."""
    path = Path(path).expanduser()
    kind = library_kind(path)
    if kind == "zotero":
        return read_zotero(path if path.is_dir() else path.parent)
    if kind == "bibtex":
        return read_bibtex(path, max_bytes)
    return read_folder(path)
