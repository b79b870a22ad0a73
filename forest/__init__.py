"""Memory Forest: long documents as memory trees, recalled by search, LCA and drill-down."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from forest.config import Settings, load_settings
from forest.errors import ConfigError, ForestError, InvalidInput, NotFound

if TYPE_CHECKING:
    from forest.service import MemoryForest

__all__ = ["ConfigError", "ForestError", "InvalidInput", "MemoryForest", "NotFound", "Settings", "load_settings"]


def __getattr__(name: str) -> Any:
    # The engine loads on first use, so `import forest.errors` (or the CLI's argument parsing)
    # does not pay for it.
    if name == "MemoryForest":
        from forest.service import MemoryForest

        return MemoryForest
    raise AttributeError(f"module 'forest' has no attribute {name!r}")
