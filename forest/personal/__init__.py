"""Personal memory service (seeds 003, 004)."""
