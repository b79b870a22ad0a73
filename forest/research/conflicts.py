"""The names the workbench's reconcile page imports from here; the conflict rules live in
forest.research.claims. Remove once that page imports from forest.research.claims."""
from forest.research.claims import Statement, source_label

__all__ = ["Statement", "source_label"]
