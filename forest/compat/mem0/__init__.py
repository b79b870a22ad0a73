"""mem0 (mem0ai) spoken over the engine: its Memory class (`from forest.compat.mem0 import Memory`)
and the operations behind its platform and open-source server routes (forest.serving.mem0_routes)."""
from forest.compat.mem0.memory import Memory

__all__ = ["Memory"]
