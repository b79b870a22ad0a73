"""Other memory frameworks' interfaces over the engine, so programs written for them run unchanged
(mem0: forest.compat.mem0)."""
