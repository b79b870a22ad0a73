"""The agent loop's citations on QASPER: forest `ask` (offline policy) against flat dense search
given the same tokens, in both protocols of eval_qasper.py, and nothing else (minutes, not the
half hour of the full comparison).

For each question with paragraph evidence: run `ask`; its cited passages are the context, their
estimate_tokens the budget flat dense search over 1,000-character chunks (DENSE_1000) and forest
`context` then get. A question is a hit under eval_qasper's rule (some gold paragraph has half
its word 5-grams in the context). Also printed: EXPLORE steps per question, passages cited,
McNemar (ask vs flat dense), ask latency.

Run: `python -m bench.eval_ask --papers 40 [--skip 40] --data-dir DIR` (ingests what the dir
lacks, both protocols, and keeps it for the next run; one dir per paper set, as the forest
protocol searches every paper in it).
"""
from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter, defaultdict

from bench.eval_qasper import (MODEL_ID, PROTOCOLS, TIMINGS_FILE, ingest, ingest_per_paper, load_questions,
                         ngram_hit, paper_arguments, per_paper_model_id, words)
from bench.flat_baselines import DENSE_1000, CachedEmbedder, EmbeddingCache, FlatIndex, mcnemar_exact

from forest.models import registry as components
from forest.recall.agent import EXPLORE
from forest.config import load_settings
from forest.service import MemoryForest
from forest.text import estimate_tokens
from forest.ingest import load_document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    paper_arguments(parser)
    args = parser.parse_args()

    by_paper = load_questions(args.data)
    papers = sorted(by_paper)[args.skip : args.skip + args.papers]
    questions = [q for p in papers for q in by_paper[p]]
    settings = load_settings().replace(data_dir=args.data_dir)
    forest = MemoryForest(settings, embedder=CachedEmbedder(components.make_embedder(settings)))
    try:
        ingest(forest, args.data, papers, args.data_dir / TIMINGS_FILE)
        ingest_per_paper(forest, args.data, papers)
        others = {a.name for a in forest.archives(MODEL_ID)} - set(papers)
        if others:
            print(f"warning: the forest protocol's store also holds {len(others)} other paper(s), which ask "
                  "searches and flat dense does not: use a data dir of these papers only")
        documents = {p: load_document(args.data / "papers" / f"{p}.txt") for p in papers}
        dense = FlatIndex.build(DENSE_1000, documents, EmbeddingCache(forest.embedder))
        gold_words = {p: words(p) for q in questions for ev in q.annotators for p in ev}
        hits: dict[tuple[str, str], list[bool]] = defaultdict(list)
        tokens, cited, explores, latency = (defaultdict(list) for _ in range(4))
        for q in questions:
            vector = forest.embedder.embed_query(q.text)
            for protocol in PROTOCOLS:
                model_id = per_paper_model_id(q.paper_id) if protocol == "per-paper" else MODEL_ID
                start = time.perf_counter()
                state = forest.ask(model_id, q.text)
                latency[protocol].append((time.perf_counter() - start) * 1000)
                texts = [c.node.content for c in state.cited]
                budget = max(1, sum(estimate_tokens(t) for t in texts))
                scope = q.paper_id if protocol == "per-paper" else None
                context = forest.context(model_id, q.text, budget_tokens=budget).leaves
                for system, returned in (("ask", texts), ("flat", dense.dense(vector, budget, scope)),
                                         ("context", [s.node.content for s in context])):
                    hits[protocol, system].append(ngram_hit(q, returned, gold_words))
                tokens[protocol].append(budget)
                cited[protocol].append(len(texts))
                explores[protocol].append(sum(s.decision.action == EXPLORE for s in state.steps))
    finally:
        forest.close()

    print(f"\nQASPER dev papers {args.skip + 1}-{args.skip + len(papers)}: {len(questions)} questions; "
          "hit = some gold paragraph has half its word 5-grams in the context")
    for protocol in PROTOCOLS:
        ask, flat, context = (hits[protocol, s] for s in ("ask", "flat", "context"))
        ask_only, flat_only, p = mcnemar_exact(ask, flat)
        print(f"{protocol:<10} forest ask (cited) {statistics.fmean(ask):.3f}, flat dense 1000 at the same tokens "
              f"{statistics.fmean(flat):.3f}, forest context at the same tokens {statistics.fmean(context):.3f}; "
              f"{statistics.fmean(tokens[protocol]):.0f} tokens, "
              f"{statistics.fmean(cited[protocol]):.2f} passages cited; "
              f"McNemar ask only {ask_only}, flat only {flat_only}, p = {p:.3f}")
        steps = Counter(explores[protocol])
        print(f"{'':<10} EXPLORE steps: mean {statistics.fmean(explores[protocol]):.2f}, "
              + ", ".join(f"{n}: {steps[n]}" for n in sorted(steps))
              + f"; ask p50 {statistics.median(latency[protocol]):.0f} ms")


if __name__ == "__main__":
    main()
