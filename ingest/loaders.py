"""Reads .txt and .md files as text; every problem is one clear ValueError-derived message."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from forest.errors import InvalidInput

SUPPORTED_SUFFIXES = (".txt", ".md")


@dataclass(frozen=True)
class Document:
    name: str
    text: str
    source: str


def load_document(path: str | Path, max_bytes: int | None = None) -> Document:
    path = Path(path)
    if not path.is_file():
        raise InvalidInput(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise InvalidInput(f"{path}: unsupported file type {suffix or '(none)'}; "
                           f"supported: {', '.join(SUPPORTED_SUFFIXES)}")
    size = path.stat().st_size
    if max_bytes is not None and size > max_bytes:
        raise InvalidInput(f"{path}: {size:,} bytes is over the limit of {max_bytes:,} bytes")
    raw = path.read_bytes()
    if b"\x00" in raw[:8192]:
        raise InvalidInput(f"{path}: looks like a binary file, not text")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: not UTF-8 text (byte {exc.start}); convert it to UTF-8 first") from None
    if not text.strip():
        raise InvalidInput(f"{path}: the file is empty")
    return Document(name=path.stem, text=text, source=str(path.resolve()))
