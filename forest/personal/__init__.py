"""Personal memory service (the NeuroMemory v2 and mem0 memory-tool specs)."""
