"""Real text for the full-text tests, from ../shared/eval: the QASPER papers' leaves (cut as a build
cuts them, by the default chunker) and LoCoMo's conversation turns ("speaker: text")."""
from __future__ import annotations

import json
from functools import lru_cache

import pytest

from conftest import SHARED_EVAL
from forest.config import Settings
from forest.ingest import load_document
from forest.tree.leaves import leaf_chunks


@lru_cache
def qasper_leaves() -> tuple[str, ...]:
    papers = sorted((SHARED_EVAL / "qasper-dev" / "papers").glob("*.txt"))
    if not papers:
        pytest.skip("shared/eval is not beside the project")
    settings = Settings()
    return tuple(chunk.text for paper in papers
                 for chunk in leaf_chunks(load_document(paper), settings.chunker, settings.chunk_size))


@lru_cache
def locomo_turns() -> tuple[str, ...]:
    path = SHARED_EVAL / "locomo" / "locomo10.json"
    if not path.exists():
        pytest.skip("shared/eval is not beside the project")
    turns = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conversation = sample["conversation"]
        for key in sorted(k for k in conversation if k.startswith("session_") and isinstance(conversation[k], list)):
            turns.extend(f"{turn['speaker']}: {turn['text']}" for turn in conversation[key])
    return tuple(turns)
