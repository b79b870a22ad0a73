"""Runs a real build in this process and SIGKILLs itself halfway through writing the vectors:
SQLite already holds the nodes, Chroma holds half the vectors, the archive is still 'building'."""
import os
import signal
import sys

from forest import MemoryForest, load_settings
from forest.storage.vectors.chroma import ChromaVectorStore

data_dir, document, model_id = sys.argv[1:4]
real_upsert = ChromaVectorStore.upsert


def upsert_half_then_die(self, model_id, ids, vectors, metadatas):
    half = len(ids) // 2
    real_upsert(self, model_id, ids[:half], vectors[:half], metadatas[:half])
    os.kill(os.getpid(), signal.SIGKILL)


ChromaVectorStore.upsert = upsert_half_then_die
MemoryForest(load_settings({"data_dir": data_dir, "chunk_size": 300, "chunk_overlap": 0})).ingest_file(
    document, model_id)
