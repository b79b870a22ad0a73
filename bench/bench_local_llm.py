"""Summaries through a local LLM server against the offline summarizer, on one QASPER dev paper.

The server is llama-cpp-python's `python -m llama_cpp.server` on the Gemma 3 270M GGUF (Q4_K_M)
with two threads (testkit/llama_server.py; the `llm-server` extra: `make llm-server`), reached
through the `openai` provider as docs/models.md configures it. The paper is ingested twice into
temporary stores: once with summaries from the server, once with the offline TextRank summarizer.

Prints, for each: the summaries made (leaves and summary nodes), the seconds spent making them and
summaries per second, the whole ingest's seconds; for the server, how structure was asked (and what
it refused), and the share of replies that needed a step-down (a form of structured output the
server refused), a repair (a reply that could not be used, asked for again) or a loosened parse
(raw control characters in a string), and the share that fell back to the extractive summary.
Figures, not targets: the model is a base model and its summaries are poor.

Run: `python -m bench.bench_local_llm [--paper 2001.05865] [--max-tokens 128]` (a few minutes on 2 cores).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from bench.eval_qasper import DEFAULT_DATA as QASPER_DATA
from forest import MemoryForest, load_settings
from forest.models import registry
from forest.models.summarizers import LLMSummarizer, NodeBrief, Summarizer, Summary

from testkit.llama_server import MODEL_ALIAS, LlamaServer, missing  # shared with the tests


class TimedSummarizer(Summarizer):
    """The summarizer an ingest uses, with the seconds spent in it and the sources of what it made."""

    def __init__(self, inner: Summarizer) -> None:
        self.inner = inner
        self.max_chars = inner.max_chars
        self.seconds = 0.0
        self.sources: list[str] = []

    def _timed(self, make) -> Summary:
        started = time.perf_counter()
        summary = make()
        self.seconds += time.perf_counter() - started
        self.sources.append(summary.source)
        return summary

    def summarize_leaf(self, text: str) -> Summary:
        return self._timed(lambda: self.inner.summarize_leaf(text))

    def summarize_node(self, brief: NodeBrief) -> Summary:
        return self._timed(lambda: self.inner.summarize_node(brief))


def ingest(paper: Path, data_dir: Path, **overrides: str) -> tuple[TimedSummarizer, float]:
    settings = load_settings().replace(data_dir=data_dir, **overrides)
    summarizer = TimedSummarizer(registry.make_summarizer(settings))
    forest = MemoryForest(settings, summarizer=summarizer)
    started = time.perf_counter()
    forest.ingest_file(paper, "bench", name=paper.stem)
    took = time.perf_counter() - started
    forest.close()
    return summarizer, took


def report(name: str, summarizer: TimedSummarizer, ingest_seconds: float) -> None:
    made = len(summarizer.sources)
    print(f"{name}: {made} summaries in {summarizer.seconds:.1f} s ({made / summarizer.seconds:.2f} per second); "
          f"the whole ingest {ingest_seconds:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paper", default="2001.05865", help="a QASPER dev paper id (papers/<id>.txt); the "
                        "default is the shortest, 4.5 KB")
    parser.add_argument("--max-tokens", type=int, default=128, help="llm_max_tokens for the server (0: no cap)")
    parser.add_argument("--data", type=Path, default=QASPER_DATA)
    args = parser.parse_args()
    if missing():
        sys.exit(f"needs {' and '.join(missing())}: `make llm-server` (pip install -e '.[llm-server]')")
    paper = args.data / "papers" / f"{args.paper}.txt"
    print(f"paper {args.paper}: {len(paper.read_text(encoding='utf-8')):,} characters")
    with tempfile.TemporaryDirectory() as scratch:
        offline, offline_seconds = ingest(paper, Path(scratch) / "offline", llm="offline", summarizer="textrank")
        report("offline (extractive:textrank)", offline, offline_seconds)
        with LlamaServer(Path(scratch)) as server:
            served, served_seconds = ingest(paper, Path(scratch) / "served", llm="openai", summarizer="llm",
                                            llm_base_url=server.url, llm_model=MODEL_ALIAS,
                                            llm_max_tokens=args.max_tokens)
    assert isinstance(served.inner, LLMSummarizer)
    llm = served.inner.client
    report(f"llama.cpp server ({llm.label}, 2 threads, llm_max_tokens {args.max_tokens})", served, served_seconds)
    counts, asked = llm.counts, llm.counts["asked"]
    refused = f", after refusing {', '.join(llm.refused_forms)}" if llm.refused_forms else ""
    fallbacks = sum(source != llm.label for source in served.sources)
    print(f"  structure asked as {llm.structured_output}{refused}")
    print(f"  of {asked} calls: {counts['stepped_down']} stepped down ({counts['stepped_down'] / asked:.1%}), "
          f"{counts['repaired']} repaired ({counts['repaired'] / asked:.1%}), "
          f"{counts['loosened']} loosened ({counts['loosened'] / asked:.1%}); "
          f"{fallbacks} fell back to the extractive summary ({fallbacks / asked:.1%})")


if __name__ == "__main__":
    main()
