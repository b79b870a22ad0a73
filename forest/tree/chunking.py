"""A document's passages to leaf chunks in reading order (langchain-text-splitters).

Chunks never cross a section boundary, and a caption is always a chunk of its own, so each chunk
has one section and a page range to cite.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, replace
from itertools import groupby

from forest.ingest.document import PASSAGE_SEPARATOR, TEXT, Document, Passage
from forest.tree.outline import heading_paths

# Paragraphs, then lines, then sentence ends (Latin and CJK), then clauses, then words.
SEPARATORS = ["\n\n", "\n", "。", "！", "？", ". ", "? ", "! ", "；", "; ", "，", ", ", " ", ""]


@dataclass(frozen=True)
class Chunk:
    text: str
    char_start: int                # offset in document.text
    section: str | None = None
    page_start: int | None = None
    page_end: int | None = None
    kind: str = TEXT
    heading_path: tuple[str, ...] = ()   # the enclosing headings, outermost first


def chunk_document(document: Document, chunk_size: int, chunk_overlap: int) -> list[Chunk]:
    from langchain_text_splitters import RecursiveCharacterTextSplitter  # ~0.4 s: only for this chunker

    splitter = RecursiveCharacterTextSplitter(
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, separators=SEPARATORS,
        keep_separator="end", add_start_index=True, strip_whitespace=True)
    starts, offset = [], 0
    for passage in document.passages:
        starts.append(offset)
        offset += len(passage.text) + len(PASSAGE_SEPARATOR)
    chunks: list[Chunk] = []
    indexed = list(zip(starts, document.passages))
    # A run of same-section text passages is split together; each caption stands alone.
    for (section, kind, _), run in groupby(indexed, key=_run_key):
        run = list(run)
        text = PASSAGE_SEPARATOR.join(p.text for _, p in run)
        local_starts = [s - run[0][0] for s, _ in run]
        for piece in splitter.create_documents([text]):
            if not piece.page_content.strip():
                continue
            begin = max(int(piece.metadata.get("start_index", 0)), 0)
            end = begin + len(piece.page_content)
            first = run[max(bisect_right(local_starts, begin) - 1, 0)][1]
            last = run[max(bisect_right(local_starts, max(end - 1, begin)) - 1, 0)][1]
            chunks.append(Chunk(piece.page_content, run[0][0] + begin, section, first.page_start,
                                last.page_end, kind))
    paths = heading_paths([c.section for c in chunks], document.headings)
    return [replace(chunk, heading_path=path) for chunk, path in zip(chunks, paths)]


def _run_key(item: tuple[int, Passage]) -> tuple:
    start, passage = item
    # Captions get a key of their own (their start), so two captions in a row stay apart.
    return passage.section, passage.kind, start if passage.kind != TEXT else None
