"""The same questions on every backend, in one run: QASPER dev context hits (bench/eval_qasper.py's
forest row) and LoCoMo recall (bench/eval_locomo.py's service row, "any" rule, top 5) on SQLite +
Chroma (the embedded default), PostgreSQL + pgvector and PostgreSQL + Qdrant (qdrant-client's local
mode), then every question whose result differs between them, and why.

The content is made once, in the embedded store: the first N QASPER dev papers ingested under
model_id "qasper", the chosen LoCoMo conversations written through the personal memory service (each
one user_id). It is then copied (MemoryForest.copy_store: rows with their ids, vectors as they are,
nothing embedded again) into a PostgreSQL database with pgvector and into another with a Qdrant
local-mode directory, so every backend holds the same nodes, memories and vectors.

Two sources of difference are checked, each against a reference that decides it:
- The vector store's search. Chroma and pgvector answer from an HNSW index (approximate), Qdrant's
  local mode compares every vector (exact). Each question's context is also made from an exact
  search (cosine over all the model_id's stored vectors, ties by id), and each backend's own hits
  are compared with the exact ones.
- BM25's statistics. SQLite FTS5 counts rows and tokens over its whole table (every user's
  memories); PostgreSQL counts each user_id's alone (forest/storage/fulltext/postgres.py). Each
  conversation is also written alone into an embedded store of its own: there SQLite's statistics
  are that user's, as PostgreSQL's are.
Personal memory's dense route reads the vectors stored with the memories in the database (exact
cosine), so no vector store takes part in LoCoMo.

Run: `python -m bench.eval_backends` (20 papers, conversations 1-2, about 20 minutes, most of it
ingest); `--work DIR` keeps the embedded store and the per-conversation stores between runs (a rerun
ingests nothing; the PostgreSQL databases and the Qdrant directory are made anew each run).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from bench.eval_locomo import DATA as LOCOMO_DATA
from bench.eval_locomo import conversations, evidence_questions, service_search, write_conversation
from bench.eval_qasper import DEFAULT_DATA as QASPER_DATA
from bench.eval_qasper import MODEL_ID, Question, ingest, load_questions, ngram_hit, question_recall, terms, words
from bench.flat_baselines import CachedEmbedder
from forest import MemoryForest, load_settings
from forest.config import Settings
from forest.models.registry import make_embedder
from forest.recall.retrieval import CONTEXT_BREADTH, ContextResult, Retriever
from forest.storage.sql.local_postgres import LocalPostgres

BACKENDS = ("sqlite-chroma", "postgres-pgvector", "postgres-qdrant")
EXACT = "exact vector search"     # the embedded store's vectors, searched exactly
ALONE = "sqlite, each user alone"  # each conversation in an embedded store of its own


# --- the stores ----------------------------------------------------------------------------------
def backend_settings(base: Settings, work: Path, backend: str, postgres: LocalPostgres | None) -> Settings:
    """The settings of one backend's store under `work`; a server backend gets a new, empty
    database (copy_store copies into empty stores only)."""
    data_dir = work / backend
    if backend == "sqlite-chroma":
        return base.replace(data_dir=data_dir)
    shutil.rmtree(data_dir, ignore_errors=True)
    url = fresh_database(postgres, backend.replace("-", "_"))
    vector_store = backend.split("-")[1]
    return base.replace(data_dir=data_dir, database_url=url, vector_store=vector_store,
                        qdrant_url=str(data_dir / "qdrant") if vector_store == "qdrant" else None)


def fresh_database(postgres: LocalPostgres, name: str) -> str:
    """An empty database `name` (dropped first if an earlier run left it)."""
    import psycopg

    with psycopg.connect(postgres.url(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return postgres.create_database(name)


def build_source(forest: MemoryForest, papers: list[str], samples: list[dict], qasper: Path) -> None:
    """The papers and conversations not yet in the embedded store."""
    ingest(forest, qasper, papers, None)
    for sample in samples:
        if not forest.personal.store.memories(sample["sample_id"]):
            written, seconds = write_conversation(forest.personal, sample)
            print(f"{sample['sample_id']}: {written} turns written in {seconds:.0f} s", file=sys.stderr)


def build_alone(base: Settings, work: Path, sample: dict, embedder, source: MemoryForest) -> MemoryForest:
    """An embedded store holding this conversation only (its passages' vectors come from the
    embedder's cache), checked to hold the very memories the shared store holds for the user."""
    user = sample["sample_id"]
    forest = MemoryForest(base.replace(data_dir=work / f"alone-{user}"), embedder=embedder)
    if not forest.personal.store.memories(user):
        write_conversation(forest.personal, sample)
    mine = sorted((m.metadata.get("dia_id"), m.memory) for m in forest.personal.store.memories(user))
    shared = sorted((m.metadata.get("dia_id"), m.memory) for m in source.personal.store.memories(user))
    if mine != shared:
        raise SystemExit(f"{user}: written alone, the memories differ from the shared store's "
                         f"({len(mine)} vs {len(shared)}): the write path is not deterministic")
    return forest


class ExactSearch:
    """The model_id's stored vectors searched exactly (cosine, ties by node id): what an HNSW index
    approximates. Only what the Retriever's context calls (query, get_vectors) is offered."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self._matrices: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def query(self, model_id: str, vector: np.ndarray, top_k: int) -> list[tuple[int, float]]:
        ids, matrix = self._matrix(model_id)
        cosine = matrix @ np.asarray(vector, dtype=np.float32)
        best = np.lexsort((ids, -cosine))[:top_k]
        return [(int(ids[i]), float(cosine[i])) for i in best]

    def get_vectors(self, model_id: str, ids):
        return self.inner.get_vectors(model_id, ids)

    def _matrix(self, model_id: str) -> tuple[np.ndarray, np.ndarray]:
        if model_id not in self._matrices:
            stored = self.inner.get_vectors(model_id, sorted(self.inner.ids(model_id)))
            ids = np.array(sorted(stored), dtype=np.int64)
            self._matrices[model_id] = ids, np.stack([stored[i] for i in ids]).astype(np.float32)
        return self._matrices[model_id]


# --- the questions -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ContextRun:
    """One QASPER question at one budget on one backend."""
    leaves: tuple[int, ...]  # the context's leaves, in order
    hit: bool                # eval_qasper's comparison rule (ngram_hit)
    recall: float            # eval_qasper's evidence recall (question_recall)
    hits: tuple[int, ...]    # the vector store's own hits the context started from


@dataclass(frozen=True)
class SearchRun:
    """One LoCoMo question on one backend."""
    returned: tuple[str, ...]  # dia_ids of the memories returned, best first
    hit: bool                  # any evidence turn among them


def qasper_runs(context: Callable[[str, int], ContextResult], vector_hits: Callable[[str], list[int]],
                questions: list[Question], budgets: list[int]) -> dict[tuple[str, int], ContextRun]:
    gold = {p: terms(p) for q in questions for ev in q.annotators for p in ev}
    gold_words = {p: words(p) for p in gold}
    runs = {}
    for q in questions:
        hits = tuple(vector_hits(q.text))
        for budget in budgets:
            leaves = [s.node for s in context(q.text, budget).leaves]
            runs[q.question_id, budget] = ContextRun(
                tuple(n.id for n in leaves), ngram_hit(q, [n.content for n in leaves], gold_words),
                question_recall(q, [terms(n.content) for n in leaves], gold), hits)
    return runs


def forest_qasper(forest: MemoryForest, questions: list[Question], budgets: list[int]) -> dict:
    """The backend's own context, and the hits its vector store gives the context's first search."""
    depth = forest.settings.top_k * CONTEXT_BREADTH
    return qasper_runs(lambda text, budget: forest.context(MODEL_ID, text, budget_tokens=budget),
                       lambda text: [i for i, _ in forest.vectors.query(MODEL_ID, forest.embedder.embed_query(text), depth)],
                       questions, budgets)


def exact_qasper(forest: MemoryForest, questions: list[Question], budgets: list[int]) -> dict:
    """The context the embedded store's vectors give when searched exactly."""
    exact = ExactSearch(forest.vectors)
    retriever = Retriever(forest.store, exact, forest.embedder, forest.reranker,
                          forest.settings.hybrid_vector_weight, forest.settings.hybrid_fusion)
    settings = forest.settings
    depth = settings.top_k * CONTEXT_BREADTH
    return qasper_runs(lambda text, budget: retriever.context(MODEL_ID, text, budget, settings.top_k, settings.search_mode),
                       lambda text: [i for i, _ in exact.query(MODEL_ID, forest.embedder.embed_query(text), depth)],
                       questions, budgets)


def locomo_runs(forest: MemoryForest, samples: list[dict]) -> dict[tuple[str, int], SearchRun]:
    runs = {}
    for sample in samples:
        user = sample["sample_id"]
        for number, (qa, evidence) in enumerate(evidence_questions(sample)):
            returned = tuple(r["metadata"].get("dia_id") for r in service_search(forest.personal, user, qa["question"]))
            runs[user, number] = SearchRun(returned, bool(evidence & set(returned)))
    return runs


# --- the report ----------------------------------------------------------------------------------
def mean(values) -> float:
    values = list(values)
    return statistics.fmean(values) if values else float("nan")


def print_figures(qasper: dict[str, dict], locomo: dict[str, dict], budgets: list[int], users: list[str]) -> None:
    columns = ([f"hits@{b}" for b in budgets] + [f"recall@{b}" for b in budgets]
               + [f"LoCoMo {u}" for u in users] + ["LoCoMo all"])
    header = f"{'store':<26}" + "".join(f"{c:>15}" for c in columns)
    print(header)
    print("-" * len(header))
    for store in [*BACKENDS, EXACT, ALONE]:
        values = qasper_figures(qasper.get(store), budgets) + locomo_figures(locomo.get(store), users)
        print(f"{store:<26}" + "".join(f"{'-':>15}" if v is None else f"{v:15.3f}" for v in values))


def qasper_figures(runs: dict | None, budgets: list[int]) -> list[float | None]:
    if runs is None:
        return [None] * 2 * len(budgets)
    return [mean(getattr(r, field) for (_, b), r in runs.items() if b == budget)
            for field in ("hit", "recall") for budget in budgets]


def locomo_figures(runs: dict | None, users: list[str]) -> list[float | None]:
    if runs is None:
        return [None] * (len(users) + 1)
    return [mean(r.hit for (u, _), r in runs.items() if u == user) for user in users] + [mean(r.hit for r in runs.values())]


def qasper_differences(qasper: dict[str, dict], questions: list[Question], budgets: list[int]) -> list[dict]:
    """Every (question, budget) whose context differs between backends, with what decides it."""
    exact = qasper[EXACT]
    out = []
    for q in questions:
        for budget in budgets:
            key = (q.question_id, budget)
            runs = {b: qasper[b][key] for b in BACKENDS}
            if len({r.leaves for r in runs.values()}) == 1:
                continue
            out.append({
                "paper": q.paper_id, "question_id": q.question_id, "question": q.text, "budget": budget,
                "hit": {b: r.hit for b, r in runs.items()}, "exact_hit": exact[key].hit,
                "context_is_exact": {b: r.leaves == exact[key].leaves for b, r in runs.items()},
                # hits of the exact top (CONTEXT_BREADTH x top_k) the backend's index did not return
                "hits_missed": {b: sorted(set(exact[key].hits) - set(r.hits)) for b, r in runs.items()},
                "same_hits_reordered": {b: set(r.hits) == set(exact[key].hits) and r.hits != exact[key].hits
                                        for b, r in runs.items()},
            })
    return out


def qasper_reason(d: dict) -> str:
    approximate = [b for b in BACKENDS if d["hits_missed"][b]]
    exact_like = [b for b in BACKENDS if not d["hits_missed"][b]]
    if approximate and all(d["context_is_exact"][b] for b in exact_like) and \
            not any(d["context_is_exact"][b] for b in approximate):
        return ("approximate search: " + ", ".join(f"{b}'s HNSW index missed {len(d['hits_missed'][b])} of the "
                                                    "exact top hits" for b in approximate)
                + "; the backends whose hits were exact give the exact search's context")
    if not approximate:
        return "the same hits on every backend: the context's order differs (a near tie or float32 rounding)"
    return "mixed: " + json.dumps({"missed": d["hits_missed"], "context_is_exact": d["context_is_exact"]})


def locomo_differences(locomo: dict[str, dict], samples: list[dict]) -> list[dict]:
    out = []
    for sample in samples:
        user = sample["sample_id"]
        for number, (qa, evidence) in enumerate(evidence_questions(sample)):
            key = (user, number)
            runs = {b: locomo[b][key] for b in BACKENDS}
            if len({r.returned for r in runs.values()}) == 1:
                continue
            alone = locomo[ALONE][key]
            out.append({"user": user, "question": qa["question"], "evidence": sorted(evidence),
                        "returned": {b: list(r.returned) for b, r in runs.items()} | {ALONE: list(alone.returned)},
                        "hit": {b: r.hit for b, r in runs.items()} | {ALONE: alone.hit},
                        "postgres_is_alone": all(runs[b].returned == alone.returned for b in BACKENDS[1:])})
    return out


def locomo_reason(d: dict) -> str:
    if d["postgres_is_alone"] and d["returned"][BACKENDS[1]] == d["returned"][BACKENDS[2]]:
        return ("BM25 statistics: SQLite FTS5 counts both users' memories, PostgreSQL the user's alone; "
                "SQLite with the user alone returns what PostgreSQL returns")
    return "unexplained: " + json.dumps(d["returned"])


def print_qasper_differences(qasper: dict[str, dict], diff: list[dict]) -> None:
    total = len(qasper[EXACT])
    print(f"\nQASPER: {len(diff)} of {total} (question, budget) contexts differ between backends, "
          f"{sum(len(set(d['hit'].values())) > 1 for d in diff)} of them in their hit; contexts equal to the exact "
          "search's: " + ", ".join(f"{b} {sum(qasper[b][k].leaves == r.leaves for k, r in qasper[EXACT].items())}"
                                   for b in BACKENDS))
    for d in diff:
        hits = ", ".join(f"{b} {int(d['hit'][b])}" for b in BACKENDS)
        print(f"- {d['paper']} {d['question_id'][:10]} @{d['budget']} \"{d['question'][:70]}\"\n"
              f"    hit: {hits}, exact {int(d['exact_hit'])}; context = exact search's: "
              + ", ".join(b for b in BACKENDS if d["context_is_exact"][b]) + "\n    why: " + qasper_reason(d))


def print_locomo_differences(locomo: dict[str, dict], diff: list[dict]) -> None:
    """Counts by reason, and in full each question whose hit differs."""
    total = len(locomo[ALONE])
    changed = [d for d in diff if len(set(d["hit"].values())) > 1]
    print(f"\nLoCoMo: {len(diff)} of {total} questions return other memories or another order between backends, "
          f"{len(changed)} of them a different hit")
    for reason, count in Counter(locomo_reason(d) for d in diff).most_common():
        print(f"  {count:4d}  {reason}")
    print("returned exactly what SQLite with the user alone returns: " + ", ".join(
        f"{b} {sum(locomo[b][k].returned == r.returned for k, r in locomo[ALONE].items())} of {total}" for b in BACKENDS))
    for d in changed:
        hits = ", ".join(f"{b} {int(h)}" for b, h in d["hit"].items())
        print(f"- {d['user']} \"{d['question'][:70]}\" evidence {', '.join(d['evidence'])}\n"
              f"    returned: " + "; ".join(f"{b} {' '.join(r)}" for b, r in d["returned"].items()) +
              f"\n    hit: {hits}\n    why: {locomo_reason(d)}")


def print_vector_agreement(qasper: dict[str, dict], depth: int, budget: int) -> None:
    """How often each backend's vector store returns the exact top hits."""
    exact = {q: r.hits for (q, b), r in qasper[EXACT].items() if b == budget}
    print(f"\nvector store hits for the context's first search (top {depth}) against exact search, {len(exact)} questions:")
    for backend in BACKENDS:
        runs = {q: r.hits for (q, b), r in qasper[backend].items() if b == budget}
        same = sum(runs[q] == exact[q] for q in exact)
        same_set = sum(set(runs[q]) == set(exact[q]) for q in exact)
        recall = mean(len(set(runs[q]) & set(exact[q])) / len(exact[q]) for q in exact)
        print(f"  {backend:<20} the same list {same}, the same set {same_set}, recall of the exact top {depth} {recall:.4f}")


# --- the run -------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--qasper", type=Path, default=QASPER_DATA, help="the qasper-dev folder")
    parser.add_argument("--papers", type=int, default=20, help="first N QASPER dev papers (sorted ids)")
    parser.add_argument("--budgets", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--conversations", default="1-2", help="LoCoMo conversations, e.g. 1-2")
    parser.add_argument("--work", type=Path, help="kept between runs (default: a temporary directory)")
    parser.add_argument("--json", type=Path, help="write the figures and every difference here")
    args = parser.parse_args()

    by_paper = load_questions(args.qasper)
    papers = sorted(by_paper)[:args.papers]
    questions = [q for p in papers for q in by_paper[p]]
    data = json.loads(LOCOMO_DATA.read_text(encoding="utf-8"))
    samples = [data[i] for i in conversations(args.conversations, len(data))]
    users = [s["sample_id"] for s in samples]

    temporary = args.work is None
    work = Path(tempfile.mkdtemp(prefix="eval-backends-")) if temporary else args.work
    work.mkdir(parents=True, exist_ok=True)
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    base = load_settings({"memory_privacy_filter": False}, environ={})
    embedder = CachedEmbedder(make_embedder(base))
    postgres = LocalPostgres(work / "postgres")
    postgres.start()
    forests: dict[str, MemoryForest] = {}
    try:
        began = time.perf_counter()
        source = forests["sqlite-chroma"] = MemoryForest(backend_settings(base, work, "sqlite-chroma", None),
                                                         embedder=embedder)
        build_source(source, papers, samples, args.qasper)
        print(f"embedded store ready in {time.perf_counter() - began:.0f} s", file=sys.stderr)
        for backend in BACKENDS[1:]:
            target = backend_settings(base, work, backend, postgres)
            began = time.perf_counter()
            copied = source.copy_store(target)
            print(f"copied into {backend} in {time.perf_counter() - began:.0f} s: "
                  f"{sum(copied['rows'].values())} rows, {sum(copied['vectors'].values())} vectors", file=sys.stderr)
            forests[backend] = MemoryForest(target, embedder=embedder)
        for user, sample in zip(users, samples):
            forests[f"alone-{user}"] = build_alone(base, work, sample, embedder, source)

        budgets = list(dict.fromkeys(args.budgets))
        qasper = {b: forest_qasper(forests[b], questions, budgets) for b in tqdm(BACKENDS, desc="qasper")}
        qasper[EXACT] = exact_qasper(source, questions, budgets)
        locomo = {b: locomo_runs(forests[b], samples) for b in tqdm(BACKENDS, desc="locomo")}
        locomo[ALONE] = {key: run for user, sample in zip(users, samples)
                         for key, run in locomo_runs(forests[f"alone-{user}"], [sample]).items()}
    finally:
        for forest in forests.values():
            forest.personal.stop()
            forest.close()
        postgres.stop()
        if temporary:
            shutil.rmtree(work, ignore_errors=True)

    depth = base.top_k * CONTEXT_BREADTH
    print(f"\nQASPER dev, first {len(papers)} papers ({len(questions)} questions with paragraph evidence), "
          f"model_id {MODEL_ID!r}, search_mode {base.search_mode}; hits: eval_qasper's comparison rule, "
          f"recall: its evidence recall. LoCoMo conversations {args.conversations} "
          f"({len(locomo[BACKENDS[0]])} questions), the memory tool's top 5, 'any' rule.\n")
    print_figures(qasper, locomo, budgets, users)
    print_vector_agreement(qasper, depth, budgets[0])
    qasper_diff = qasper_differences(qasper, questions, budgets)
    locomo_diff = locomo_differences(locomo, samples)
    print_qasper_differences(qasper, qasper_diff)
    print_locomo_differences(locomo, locomo_diff)
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps({
            "qasper": {s: {f"{q}@{b}": asdict(r) for (q, b), r in runs.items()} for s, runs in qasper.items()},
            "locomo": {s: {f"{u}#{n}": asdict(r) for (u, n), r in runs.items()} for s, runs in locomo.items()},
            "qasper_differences": qasper_diff, "locomo_differences": locomo_diff}, indent=1))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
