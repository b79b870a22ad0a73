"""Document loaders: files in, plain text with provenance out (no knowledge of the forest)."""
from ingest.loaders import Document, SUPPORTED_SUFFIXES, load_document

__all__ = ["Document", "SUPPORTED_SUFFIXES", "load_document"]
