"""Document loaders: files in, forest.document.Document (passages with pages and sections) out."""
from ingest.loaders import SUPPORTED_SUFFIXES, load_document, text_document

__all__ = ["SUPPORTED_SUFFIXES", "load_document", "text_document"]
