"""Plain text to leaf chunks in document order (langchain-text-splitters)."""
from __future__ import annotations

from dataclasses import dataclass

from langchain_text_splitters import RecursiveCharacterTextSplitter

# Paragraphs, then lines, then sentence ends (Latin and CJK), then clauses, then words.
SEPARATORS = ["\n\n", "\n", "。", "！", "？", ". ", "? ", "! ", "；", "; ", "，", ", ", " ", ""]


@dataclass(frozen=True)
class Chunk:
    text: str
    char_start: int  # offset in the source text


def chunk_text(text: str, chunk_size: int, chunk_overlap: int) -> list[Chunk]:
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, separators=SEPARATORS,
        keep_separator="end", add_start_index=True, strip_whitespace=True)
    documents = splitter.create_documents([text])
    return [Chunk(d.page_content, int(d.metadata.get("start_index", -1))) for d in documents
            if d.page_content.strip()]
