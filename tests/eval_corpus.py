"""Real text for the full-text tests, from ../shared/eval: the QASPER papers' leaves (cut as a build
cuts them, by the default chunker) and questions, LoCoMo's conversation turns and questions."""
from __future__ import annotations

import json
from functools import lru_cache

import pytest

from conftest import SHARED_EVAL
from forest.config import Settings
from forest.ingest import load_document
from forest.tree.leaves import leaf_chunks


def _require(path):
    if not path.exists():
        pytest.skip("shared/eval is not beside the project")
    return path


@lru_cache
def qasper_papers() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(paper id, its leaves' texts) of every paper."""
    papers = sorted(_require(SHARED_EVAL / "qasper-dev" / "papers").glob("*.txt"))
    settings = Settings()
    return tuple((paper.stem, tuple(chunk.text for chunk in leaf_chunks(
        load_document(paper), settings.chunker, settings.chunk_size))) for paper in papers)


def qasper_leaves() -> tuple[str, ...]:
    return tuple(leaf for _, leaves in qasper_papers() for leaf in leaves)


@lru_cache
def qasper_questions() -> tuple[str, ...]:
    path = _require(SHARED_EVAL / "qasper-dev" / "questions.json")
    return tuple(q["question"] for q in json.loads(path.read_text(encoding="utf-8")))


@lru_cache
def locomo() -> list[dict]:
    return json.loads(_require(SHARED_EVAL / "locomo" / "locomo10.json").read_text(encoding="utf-8"))


def locomo_conversation(index: int) -> list[str]:
    """A conversation's turns, "speaker: text", in order."""
    conversation = locomo()[index]["conversation"]
    sessions = sorted((k for k in conversation if k.startswith("session_") and isinstance(conversation[k], list)),
                      key=lambda k: int(k.split("_")[1]))
    return [f"{turn['speaker']}: {turn['text']}" for key in sessions for turn in conversation[key]]


def locomo_turns() -> tuple[str, ...]:
    return tuple(turn for i in range(len(locomo())) for turn in locomo_conversation(i))


def locomo_questions(index: int) -> list[str]:
    return [q["question"] for q in locomo()[index]["qa"]]
