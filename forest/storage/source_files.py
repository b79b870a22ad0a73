"""The original PDFs an archive was built from, kept in the data directory so a citation can open
its page later: the workbench's uploads are temporary files, and a file on disk may move.

Files are named by their SHA-256, so a paper uploaded twice (or into two model_ids) is kept once;
an archive's `settings["documents"]` entry names its file under "file". A file is kept when its
document is read (the caller may delete the original right after) and held until its build starts,
so a prune meanwhile (another archive deleted, another build failed) does not take it.
"""
from __future__ import annotations

import hashlib
import shutil
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from forest.storage.private_files import PRIVATE_FILE, make_private_dir

KEPT_SUFFIXES = (".pdf",)   # text and Markdown live on in the leaves (character offsets included)


class SourceFiles:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._held: Counter[str] = Counter()   # kept for a build still to come
        self._lock = threading.Lock()          # a keep and a prune never interleave

    def name_for(self, source: str | None) -> str | None:
        """The name `source` is kept under if it is a PDF on disk (its SHA-256), else None."""
        path = Path(source) if source else None
        if path is None or path.suffix.lower() not in KEPT_SUFFIXES or not path.is_file():
            return None
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest() + path.suffix.lower()

    def keep(self, source: str | None, hold: bool = False) -> str | None:
        """Copy `source` into the store if it is a PDF on disk; the kept file's name, else None.
        With `hold`, prune spares the file until `release`."""
        name = self.name_for(source)
        if name is None:
            return None
        path = Path(source)
        target = self.root / name
        with self._lock:
            if not target.exists():
                make_private_dir(self.root)
                partial = target.with_suffix(".part")
                shutil.copyfile(path, partial)
                partial.chmod(PRIVATE_FILE)   # a copy takes the mode of its original
                partial.replace(target)   # never a half-copied file under the final name
            if hold:
                self._held[name] += 1
        return name

    def has(self, name: str) -> bool:
        return (self.root / name).is_file()

    def release(self, name: str) -> None:
        """End one hold on a kept file (see keep)."""
        with self._lock:
            if self._held[name] > 1:
                self._held[name] -= 1
            else:
                self._held.pop(name, None)

    def find(self, entry: dict[str, Any]) -> Path | None:
        """The PDF a document entry came from: the kept copy, else its original path if it is
        still there (archives built before files were kept, or imported from another store)."""
        kept = entry.get("file")
        if kept and self.has(kept):
            return self.root / kept
        source = Path(entry["source"]) if entry.get("source") else None
        return source if source and source.suffix.lower() in KEPT_SUFFIXES and source.is_file() else None

    def prune(self, in_use: set[str]) -> list[str]:
        """Delete kept files no archive names and no build waits for; the names deleted."""
        if not self.root.is_dir():
            return []
        gone = []
        with self._lock:
            for path in self.root.iterdir():
                if path.name not in in_use and path.name not in self._held and path.is_file():
                    path.unlink(missing_ok=True)
                    gone.append(path.name)
        return gone
