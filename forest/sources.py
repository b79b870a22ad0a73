"""The original PDFs an archive was built from, kept in the data directory so a citation can open
its page later: the workbench's uploads are temporary files, and a file on disk may move.

Files are named by their SHA-256, so a paper uploaded twice (or into two model_ids) is kept once;
an archive's `settings["documents"]` entry names its file under "file".
"""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

KEPT_SUFFIXES = (".pdf",)   # text and Markdown live on in the leaves (character offsets included)


class SourceFiles:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

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

    def keep(self, source: str | None) -> str | None:
        """Copy `source` into the store if it is a PDF on disk; the kept file's name, else None."""
        name = self.name_for(source)
        if name is None:
            return None
        path = Path(source)
        target = self.root / name
        if not target.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(".part")
            shutil.copyfile(path, partial)
            partial.replace(target)   # never a half-copied file under the final name
        return name

    def find(self, entry: dict[str, Any]) -> Path | None:
        """The PDF a document entry came from: the kept copy, else its original path if it is
        still there (archives built before files were kept, or imported from another store)."""
        kept = entry.get("file")
        if kept and (self.root / kept).is_file():
            return self.root / kept
        source = Path(entry["source"]) if entry.get("source") else None
        return source if source and source.suffix.lower() in KEPT_SUFFIXES and source.is_file() else None

    def prune(self, in_use: set[str]) -> list[str]:
        """Delete kept files no archive names any more; the names deleted."""
        if not self.root.is_dir():
            return []
        gone = []
        for path in self.root.iterdir():
            if path.name not in in_use and path.is_file():
                path.unlink(missing_ok=True)
                gone.append(path.name)
        return gone
