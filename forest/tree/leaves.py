"""Paragraph-aware leaves and the text a leaf is embedded from.

`chunk_paragraphs` packs whole paragraphs (a document's text passages) into chunks of at most
`max_chars`, never across a section; a paragraph longer than that is split at sentence ends
(then at spaces), so a chunk boundary falls where the author put one. `leaf_chunks` cuts a document
with the configured chunker. `embed_text` is what a
leaf's vector is computed from: the document title and heading path before the leaf's text, so
a passage that never names its subject ("We train it on ...") is still found by a question
naming the paper's topic or section.
"""
from __future__ import annotations

import json
from typing import Any

from forest.records import LEAF, document_entry, entry_title
from forest.tree.chunking import Chunk, chunk_document
from forest.ingest.document import PASSAGE_SEPARATOR, TEXT, Document
from forest.tree.outline import heading_paths
from forest.text import sentence_spans


def split_long(text: str, max_chars: int) -> list[str]:
    """Pieces of at most max_chars: whole sentences packed, a sentence too long split at spaces
    (a word longer than max_chars is cut)."""
    pieces: list[str] = []
    current = ""
    for unit in _units(text, max_chars):
        joined = f"{current} {unit}" if current else unit
        if len(joined) <= max_chars:
            current = joined
        else:
            if current:
                pieces.append(current)
            current = unit
    if current:
        pieces.append(current)
    return pieces


def _units(text: str, max_chars: int) -> list[str]:
    units: list[str] = []
    for sentence in (text[start:end].strip() for start, end in sentence_spans(text)):
        if len(sentence) <= max_chars:
            units.extend([sentence] if sentence else [])
            continue
        for word in sentence.split():
            units.extend(word[i:i + max_chars] for i in range(0, len(word), max_chars))
    return units


def chunk_paragraphs(document: Document, max_chars: int) -> list[Chunk]:
    """Whole paragraphs packed up to max_chars per chunk, within one section; captions alone."""
    if max_chars < 1:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    paths = heading_paths([p.section for p in document.passages], document.headings)
    chunks: list[Chunk] = []
    group: list[tuple[int, str, int | None, int | None]] = []  # (start, text, page_start, page_end)
    group_path: tuple[str, ...] = ()
    group_key: tuple | None = None

    def flush() -> None:
        if group:
            section, kind = group_key[0], group_key[1]
            text = PASSAGE_SEPARATOR.join(t for _, t, _, _ in group)
            chunks.append(Chunk(text, group[0][0], section, group[0][2], group[-1][3], kind, group_path))
            group.clear()

    offset = 0
    for passage, path in zip(document.passages, paths):
        start, offset = offset, offset + len(passage.text) + len(PASSAGE_SEPARATOR)
        text = passage.text.strip()
        if not text:
            continue
        key = (passage.section, passage.kind)
        pieces = [text] if len(text) <= max_chars else split_long(text, max_chars)
        for piece in pieces:
            size = sum(len(t) for _, t, _, _ in group) + len(PASSAGE_SEPARATOR) * len(group) + len(piece)
            if key != group_key or passage.kind != TEXT or size > max_chars:
                flush()
            group_key, group_path = key, path
            piece_start = start + max(passage.text.find(piece[:40]), 0)
            group.append((piece_start, piece, passage.page_start, passage.page_end))
    flush()
    return chunks


def leaf_chunks(document: Document, chunker: str, size: int, overlap: int = 0) -> list[Chunk]:
    """A document's leaves under a chunker setting (forest.config.CHUNKERS): "paragraph"
    (chunk_paragraphs; no overlap) or "recursive" (langchain's splitter with `overlap`)."""
    if chunker == "paragraph":
        return chunk_paragraphs(document, size)
    if chunker == "recursive":
        return chunk_document(document, size, overlap)
    raise ValueError(f"unknown chunker {chunker!r}")


def embed_text(text: str, title: str | None = None, heading_path: tuple[str, ...] = ()) -> str:
    """'title | heading > subheading | text': what a leaf is embedded from (its stored content
    stays the text alone)."""
    parts = [p for p in (title, " > ".join(heading_path)) if p]
    return " | ".join([*parts, text])


def embedding_text(node_type: str, content: str, summary: str, title: str | None = None,
                   leaf_context: tuple[str | None, tuple[str, ...]] = (None, ())) -> str:
    """What a node's vector is made from: a leaf's text after its document title and heading
    path (`leaf_context`, see stored_leaf_context); a summary node's title and summary."""
    if node_type == LEAF:
        return embed_text(content, *leaf_context)
    return "\n".join(part for part in (title, summary) if part) or content[:1000]


def stored_leaf_context(documents: list[dict[str, Any]], leaf_index: int | None,
                        heading_path: str | None) -> tuple[str | None, tuple[str, ...]]:
    """The document title and heading path a stored leaf was embedded with, from its archive's
    document entries (settings["documents"]) and its heading_path column. Documents recorded
    without "leaf_context" were embedded from the text alone (before leaves carried context)."""
    document = document_entry(documents, leaf_index)
    if document is None or not document.get("leaf_context"):
        return None, ()
    try:
        path = json.loads(heading_path or "[]")
    except ValueError:   # an imported archive's malformed column: the title alone
        path = []
    return entry_title(document), tuple(str(h) for h in path) if isinstance(path, list) else ()
