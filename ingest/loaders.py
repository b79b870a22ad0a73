"""Files to Documents: .pdf (ingest.pdf), .txt and .md (ingest.markdown).

Every problem with a file is one InvalidInput with a message a person can act on.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from forest.document import Document
from forest.errors import InvalidInput
from forest.text import display_title
from ingest.markdown import read_markdown
from ingest.pdf import read_pdf

SUPPORTED_SUFFIXES = (".pdf", ".txt", ".md", ".markdown")


def load_document(path: str | Path, max_bytes: int | None = None,
                  on_page: Callable[[int, int], None] | None = None) -> Document:
    """Read one file; `on_page(done, total)` reports parsing progress (PDF pages)."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInput(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise InvalidInput(f"{path.name}: unsupported file type {suffix or '(none)'}; "
                           f"supported: {', '.join(SUPPORTED_SUFFIXES)}")
    size = path.stat().st_size
    if size == 0:
        raise InvalidInput(f"{path.name}: the file is empty")
    if max_bytes is not None and size > max_bytes:
        raise InvalidInput(f"{path.name}: {size / 1e6:,.1f} MB is over the limit of {max_bytes / 1e6:,.1f} MB "
                           "(setting max_file_mb)")
    if suffix == ".pdf":
        return _readable(read_pdf(path, on_page))
    return text_document(path.stem, _read_text(path), str(path.resolve()))


def text_document(name: str, text: str, source: str | None = None) -> Document:
    """Text or Markdown: headings become sections; no pages."""
    title, passages, headings = read_markdown(text)
    return _readable(Document(name=name, source=source, passages=passages, title=title, headings=headings))


def _readable(document: Document) -> Document:
    """Titles and headings set in capitals, as they are written (see display_title): the archive's
    name, its sections and every citation read "Ask the Right Questions", not "ASK THE RIGHT QUESTIONS"."""
    return dataclasses.replace(
        document, title=document.title and display_title(document.title),
        headings=[dataclasses.replace(h, title=display_title(h.title)) for h in document.headings],
        passages=[dataclasses.replace(p, section=p.section and display_title(p.section)) for p in document.passages])


def _read_text(path: Path) -> str:
    raw = path.read_bytes()
    if b"\x00" in raw[:8192]:
        raise InvalidInput(f"{path.name}: looks like a binary file, not text")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path.name}: not UTF-8 text (byte {exc.start}); convert it to UTF-8 first") from None
    if not text.strip():
        raise InvalidInput(f"{path.name}: the file is empty")
    return text
