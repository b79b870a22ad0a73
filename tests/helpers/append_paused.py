"""Appends a document to an archive from its own process, pausing after the new nodes' vectors are
written under reserved ids and before their rows are committed (the window `forest doctor` must
not take for orphans) until the file `go` appears in SIGNALS."""
import sys
import time
from pathlib import Path

from forest import MemoryForest, load_settings
from forest.storage.archives import ForestStore

data_dir, document, model_id, archive_id, signals = sys.argv[1:6]
real_graft = ForestStore.graft


def graft_when_told(self, *args, **kwargs):
    (Path(signals) / "paused").touch()
    while not (Path(signals) / "go").exists():
        time.sleep(0.05)
    return real_graft(self, *args, **kwargs)


ForestStore.graft = graft_when_told
forest = MemoryForest(load_settings({"data_dir": data_dir}))
forest.append_file(document, model_id, int(archive_id))
forest.close()
