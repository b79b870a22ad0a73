"""From a document to its memory tree: chunks, leaves, outline, merge plan, build, growth, export."""
