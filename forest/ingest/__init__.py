"""Document loaders: files in, forest.ingest.document.Document (passages with pages and sections) out."""
from forest.ingest.loaders import SUPPORTED_SUFFIXES, load_document, text_document

__all__ = ["SUPPORTED_SUFFIXES", "load_document", "text_document"]
