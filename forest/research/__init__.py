"""Research memory over the forest (DeepScholar spec): semantic directives and knowledge, a working
workspace per session, episodic events with time decay, the dynamic briefing, compaction, and
conflict detection and reconciliation between papers. `memory.ResearchMemory` is the entry point;
MemoryForest exposes it as `forest.research`."""
