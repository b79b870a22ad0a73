"""What the faces draw: tree drawings, page previews, transcripts, the graph."""
