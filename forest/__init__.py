"""Memory Forest: long documents as memory trees, recalled by search, LCA and drill-down."""
from forest.config import Settings, load_settings
from forest.errors import ConfigError, ForestError, InvalidInput, NotFound
from forest.service import MemoryForest

__all__ = ["ConfigError", "ForestError", "InvalidInput", "MemoryForest", "NotFound", "Settings", "load_settings"]
