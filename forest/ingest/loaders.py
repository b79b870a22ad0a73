"""Files to Documents: .pdf (forest.ingest.pdf), .txt and .md (forest.ingest.markdown).

Every problem with a file is one InvalidInput with a message a person can act on.
"""
from __future__ import annotations

import codecs
import dataclasses
from collections.abc import Callable
from pathlib import Path

from forest.config import Settings
from forest.ingest.document import Document
from forest.errors import InvalidInput
from forest.ingest.files import file_limit, read_limited, regular_file
from forest.limits import DEFAULT_MAX_FILE_BYTES
from forest.records import Progress, ProgressFn, no_progress
from forest.storage.source_files import SourceFiles
from forest.text import counted, display_title
from forest.ingest.markdown import read_markdown
from forest.ingest.pdf import read_pdf
from forest.validation import check_unicode

SUPPORTED_SUFFIXES = (".pdf", ".txt", ".md", ".markdown")


def load_document(path: str | Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES,
                  on_page: Callable[[int, int], None] | None = None) -> Document:
    """Read one file; `on_page(done, total)` reports parsing progress (PDF pages)."""
    path = regular_file(path)
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise InvalidInput(f"{path.name}: unsupported file type {suffix or '(none)'}; "
                           f"supported: {', '.join(SUPPORTED_SUFFIXES)}")
    size = path.stat().st_size
    if size == 0:
        raise InvalidInput(f"{path.name}: the file is empty")
    if size > max_bytes:
        raise InvalidInput(f"{path.name}: {size / 1e6:,.1f} MB is over {file_limit(max_bytes)}")
    if suffix == ".pdf":
        return _readable(read_pdf(path, on_page, max_bytes))
    raw = read_limited(path, max_bytes, file_limit(max_bytes))
    return text_document(path.stem, decode_text(raw, path.name), str(path.resolve()))


def check_size(name: str, text: str, settings: Settings) -> None:
    """A document's text: valid Unicode, within max_document_chars."""
    check_unicode(text, f"document {name!r}")
    if len(text) > settings.max_document_chars:
        raise InvalidInput(f"document {name!r} has {len(text):,} characters, over the limit of "
                           f"{settings.max_document_chars:,} (setting max_document_chars)")


def read_file(path: str | Path, settings: Settings, sources: SourceFiles,
              progress: ProgressFn | None = None) -> Document:
    """Parse one file into a Document (checks, size limits, "parse" progress). A PDF is copied
    into the store at once (Document.kept_file, held until its build starts), so the caller may
    delete the file before the build and its citations still open their pages."""
    report = progress or no_progress
    document = load_document(path, settings.max_file_bytes,
                             on_page=lambda done, total: report(Progress("parse", done, total, "pages")))
    check_size(document.name, document.text, settings)
    report(Progress("parse", 1, 1, counted(len(document.passages), "passage")))
    kept = sources.keep(document.source, hold=True)
    return dataclasses.replace(document, kept_file=kept) if kept else document


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


# UTF-32's little-endian mark begins with UTF-16's: it is looked for first.
_BYTE_ORDER_MARKS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
                     (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
SNIFF_BYTES = 8192


def decode_text(raw: bytes, name: str) -> str:
    """A text file's bytes as text: UTF-8, or the UTF-16/32 its byte order mark names, or UTF-16
    without a mark (Latin text in it has a zero byte in every other place); anything else with
    zero bytes is binary."""
    codec = next((codec for mark, codec in _BYTE_ORDER_MARKS if raw.startswith(mark)), None)
    if codec is None and b"\x00" in raw[:SNIFF_BYTES]:
        codec = _unmarked_utf16(raw[:SNIFF_BYTES])
        if codec is None:
            raise InvalidInput(f"{name}: looks like a binary file, not text")
    codec = codec or "utf-8"
    try:
        text = raw.decode(codec)
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{name}: not {codec.upper().removesuffix('-SIG')} text (byte {exc.start}); "
                           "convert it to UTF-8 first") from None
    if "\x00" in text:
        raise InvalidInput(f"{name}: looks like a binary file, not text")
    if not text.strip():
        raise InvalidInput(f"{name}: the file is empty")
    return text


def _unmarked_utf16(sample: bytes) -> str | None:
    """UTF-16 without a byte order mark, if the zero bytes say so (nearly all on one side of each
    byte pair, for at least a third of the pairs) and the sample reads as text (no control
    characters but line breaks and tabs)."""
    pairs = len(sample) // 2
    even, odd = sample[0 : 2 * pairs : 2].count(0), sample[1 : 2 * pairs : 2].count(0)
    for codec, zeros, other in (("utf-16-le", odd, even), ("utf-16-be", even, odd)):
        if zeros * 3 >= pairs and other * 20 <= zeros:
            text = sample[: 2 * pairs].decode(codec, errors="replace")
            return None if any(ord(c) < 32 and c not in "\t\n\r\f" for c in text) else codec
    return None
