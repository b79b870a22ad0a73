"""How the offline answers read on the seven real arXiv PDFs (../shared/eval/pdfs): answers quoting
a sentence that starts mid-word, opens with table cells or ends mid-word; and questions asked over
two chosen papers, answered from each. Optionally against another git ref in the same run.

Form. Each PDF is the only archive of its own model_id ("pdf-<id>", default settings). Questions:
QASPER's for the five dev papers that have them (questions.json), and GENERIC for every paper.
Every quoted sentence (an answer's "- " lines, the [node ...] markers removed) is judged by rules
of this script, not the engine's:
  starts mid-word   its first word is lower-case letters, no word of the vocabulary (every word of
                    the 281 QASPER papers' text, which comes from LaTeX sources, not PDFs) and the
                    end of one ("tained" of "obtained")
  lower-case start  its first word is in lower case with no capital or digit: a sentence begun
                    elsewhere ("where Θ is ...", "other three languages which ...")
  opens with cells  two of its first CELL_WINDOW tokens are numbers and none is a function word
  ends mid-word     its last word ends in a hyphen, or is lower-case letters, no word of the
                    vocabulary and the start of one ("identificatio")
An answer counts when any of its quoted sentences does; cells are also counted apart for the
questions the engine takes as asking for numbers (those may quote a table row). The same rules
also judge every sentence an answer could quote, whatever the question: the sentences of every
passage of the seven papers (no reference list, no bibliography entry), and those the engine
deems quotable (forest.recall.agent.quotable, for a question not asking for numbers and for one
that does; an engine without it may quote them all).

Papers asked together. All seven PDFs in one model_id ("pdfs"); every pair of papers asked each
of PAIR_QUESTIONS with archive_ids=[a, b]. An answer covers a paper when it cites a passage of it
or says that nothing in it addresses the question ("Nothing in <name> ..."); the share of answers
covering both papers, and citing both, with their length.

The numeric-question cue (forest.recall.agent.asks_for_numbers, which lets an answer quote table
cells) against QASPER's 1,005 dev questions whose reference answers are mostly numbers: precision
and recall on the first half of the papers (the cue was chosen there) and on the second.

Run: `python -m bench.eval_answer_form --data-dir /tmp/form --baseline HEAD`. With --baseline the
same script first runs against that ref in a temporary git worktree on the same store (which that
version builds when it is empty), so both engines answer from the same trees.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from itertools import combinations
from pathlib import Path

from bench.eval_answers import answer_text
from bench.eval_qasper import DEFAULT_DATA

from forest.config import load_settings
from forest.service import MemoryForest

PDFS = Path(__file__).resolve().parents[2] / "shared" / "eval" / "pdfs"
GENERIC = ["What dataset do they use?", "What are the main results?", "Which baselines do they compare with?",
           "How is the model trained?", "What F1 score does the model get?", "Which model performs best?",
           "How large is the dataset?", "What features are used?", "What is the architecture of the model?",
           "What are the limitations of the approach?"]
PAIR_QUESTIONS = ["What datasets do they use?", "What are the main results?", "Which baselines do they compare with?",
                  "What is the proposed method?"]
ALL_PAPERS = "pdfs"
CELL_WINDOW = 12
LINE = re.compile(r"^- (?P<quote>.*?)(?:\s*\[node \d+[^\]]*\])?$")
TOKEN = re.compile(r"[a-z]+")
NUMBER = re.compile(r"^[-+±(]?\d[\d.,]*%?\)?$")
FUNCTION_WORDS = frozenset("the a an of and in to is are was were we for on with that by as this it our from".split())


def paper_model_id(paper: str) -> str:
    return f"pdf-{paper}"


def build(forest: MemoryForest, pdfs: list[Path]) -> dict[str, int]:
    """Each PDF in its own model_id and all of them in ALL_PAPERS (built once, kept in the data dir);
    the archive id of each paper in ALL_PAPERS."""
    for pdf in pdfs:
        if not forest.archives(paper_model_id(pdf.stem)):
            forest.ingest_file(pdf, paper_model_id(pdf.stem), name=pdf.stem)
    present = {a.name: a.id for a in forest.archives(ALL_PAPERS)}
    for pdf in pdfs:
        if pdf.stem not in present:
            present[pdf.stem] = forest.ingest_file(pdf, ALL_PAPERS, name=pdf.stem).id
    return present


def form_questions(data: Path, papers: list[str]) -> list[tuple[str, str]]:
    asked = json.loads((data / "questions.json").read_text(encoding="utf-8"))
    qasper = [(q["paper_id"], q["question"]) for q in asked if q["paper_id"] in set(papers)]
    return qasper + [(paper, question) for paper in papers for question in GENERIC]


def measure(args: argparse.Namespace) -> dict:
    pdfs = sorted(args.pdfs.glob("*.pdf"))
    forest = MemoryForest(load_settings().replace(data_dir=args.data_dir))
    try:
        archives = build(forest, pdfs)
        if args.ingest_only:
            return {}
        try:
            from forest.recall.agent import asks_for_numbers
        except ImportError:      # a version from before the cue
            asks_for_numbers = None
        form = []
        for paper, question in form_questions(args.data, [p.stem for p in pdfs]):
            state = forest.ask(paper_model_id(paper), question)
            form.append({"paper": paper, "question": question, "answer": state.answer,
                         "numbers": bool(asks_for_numbers and asks_for_numbers(question))})
        together = []
        for a, b in combinations(sorted(archives), 2):
            for question in PAIR_QUESTIONS:
                state = forest.ask(ALL_PAPERS, question, archive_ids=[archives[a], archives[b]])
                cited = {c.node.archive_id for c in state.cited}
                named = {paper for paper, archive_id in archives.items()
                         if archive_id in state.papers and f"Nothing in {state.papers[archive_id]}" in state.answer} \
                    if hasattr(state, "papers") else set()
                together.append({"papers": [a, b], "question": question, "answer": state.answer,
                                 "cited": sorted(p for p in (a, b) if archives[p] in cited), "named": sorted(named)})
        cue = numeric_cue(args.data, asks_for_numbers) if asks_for_numbers else None
        pool = quotable_pool(forest, [p.stem for p in pdfs])
    finally:
        forest.close()
    return {"form": form, "together": together, "cue": cue, "pool": pool}


def quotable_pool(forest: MemoryForest, papers: list[str]) -> dict[str, list[str]]:
    """Every sentence an answer could quote from the papers' passages, as the engine on the path
    lets it: all of them, and (with forest.recall.agent.quotable) those quotable to a question not
    asking for numbers and to one asking for them."""
    from forest.references import is_reference_node, looks_like_citations
    from forest.text import split_sentences

    try:
        from forest.recall.agent import quotable
    except ImportError:
        quotable = None
    sentences = [s for paper in papers for archive in forest.archives(paper_model_id(paper))
                 for node in forest.tree(paper_model_id(paper), archive.id) if node.is_leaf and not is_reference_node(node)
                 for s in split_sentences(node.content) if not looks_like_citations(s)]
    if quotable is None:
        return {"any question": sentences}
    return {"any question": sentences, "quotable": [q for s in sentences if (q := quotable(s))],
            "quotable, numeric question": [q for s in sentences if (q := quotable(s, True))]}


# --- judging quoted sentences ---------------------------------------------------------------------
def vocabulary(data: Path) -> tuple[set[str], set[str], set[str]]:
    """The QASPER papers' words, and every proper start and end of them (two letters at least)."""
    words = {w for paper in (data / "papers").glob("*.txt") for w in TOKEN.findall(paper.read_text().lower())}
    starts = {w[:i] for w in words for i in range(2, len(w))}
    ends = {w[i:] for w in words for i in range(1, len(w) - 1)}
    return words, starts, ends


def quotes(answer: str) -> list[str]:
    return [m.group("quote").strip() for line in (answer or "").splitlines() if (m := LINE.match(line))]


def starts_mid_word(quote: str, words: set[str], ends: set[str]) -> bool:
    first = quote.split(None, 1)[0] if quote else ""
    core = first.rstrip(",.;:)")
    return core.isalpha() and core.islower() and core not in words and core in ends


def starts_lower(quote: str) -> bool:
    first = quote.split(None, 1)[0] if quote else ""
    return first[:1].islower() and not any(c.isupper() or c.isdigit() for c in first)


def ends_mid_word(quote: str, words: set[str], starts: set[str]) -> bool:
    last = quote.rstrip("…").split()[-1] if quote.strip() else ""
    if re.search(r"[^\W\d_]-$", last):
        return True
    return last.isalpha() and last.islower() and last not in words and last in starts


def opens_with_cells(quote: str) -> bool:
    tokens = quote.split()[:CELL_WINDOW]
    return sum(bool(NUMBER.match(t)) for t in tokens) >= 2 and not any(t.lower() in FUNCTION_WORDS for t in tokens)


def judge(rows: list[dict], vocab: tuple[set[str], set[str], set[str]]) -> dict:
    words, starts, ends = vocab
    counts = {"answers": len(rows), "quotes": 0, "mid-word start": 0, "lower-case start": 0, "cells": 0,
              "cells, numeric question": 0, "mid-word end": 0, "examples": []}
    for row in rows:
        quoted = quotes(row["answer"])
        counts["quotes"] += len(quoted)
        found = {"mid-word start": any(starts_mid_word(q, words, ends) for q in quoted),
                 "lower-case start": any(starts_lower(q) for q in quoted),
                 "cells": any(opens_with_cells(q) for q in quoted),
                 "mid-word end": any(ends_mid_word(q, words, starts) for q in quoted)}
        for name, hit in found.items():
            counts[name] += hit
        counts["cells, numeric question"] += found["cells"] and row["numbers"]
        if any(found.values()):
            counts["examples"].append(f"{row['paper']} {row['question']!r}: " + " | ".join(q[:90] for q in quoted))
    return counts


def numeric_cue(data: Path, cue) -> dict:
    """The cue against QASPER questions whose reference answers are mostly numbers, on each half of
    the papers (sorted ids)."""
    asked = json.loads((data / "questions.json").read_text(encoding="utf-8"))
    papers = sorted({q["paper_id"] for q in asked})
    first_half = set(papers[:len(papers) // 2])
    numeral = re.compile(r"(?<![\w.-])[-+]?\d[\d.,]*%?(?![\w-])")
    out = {}
    for half, keep in (("first half", lambda p: p in first_half), ("second half", lambda p: p not in first_half)):
        tp = fp = fn = 0
        for q in (q for q in asked if keep(q["paper_id"])):
            refs = [", ".join(a.get("extractive_spans") or []) or a.get("free_form_answer") or "" for a in q["answers"]]
            refs = [r for r in refs if r]
            numeric = bool(refs) and sum(bool(numeral.search(r)) for r in refs) >= len(refs) / 2
            said = cue(q["question"])
            tp, fp, fn = tp + (said and numeric), fp + (said and not numeric), fn + (numeric and not said)
        out[half] = {"precision": tp / max(1, tp + fp), "recall": tp / max(1, tp + fn), "cued": tp + fp,
                     "numeric": tp + fn}
    return out


# --- report ---------------------------------------------------------------------------------------
def report(label: str, result: dict, vocab: tuple[set[str], set[str], set[str]], examples: bool) -> None:
    form = judge(result["form"], vocab)
    print(f"\n{label}")
    print(f"  form: {form['answers']} answers on the 7 PDFs, {form['quotes']} quoted sentences; answers quoting a "
          f"sentence that starts mid-word {form['mid-word start']} (in lower case {form['lower-case start']}), "
          f"opens with table cells {form['cells']} "
          f"({form['cells, numeric question']} to questions asking for numbers), ends mid-word {form['mid-word end']}")
    if examples:
        for line in form["examples"]:
            print(f"    {line}")
    words, starts, ends = vocab
    for name, sentences in result.get("pool", {}).items():
        print(f"  sentences an answer may quote ({name}): {len(sentences)}; start mid-word "
              f"{sum(starts_mid_word(q, words, ends) for q in sentences)}, in lower case "
              f"{sum(starts_lower(q) for q in sentences)}, open with table cells {sum(opens_with_cells(q) for q in sentences)}, "
              f"end mid-word {sum(ends_mid_word(q, words, starts) for q in sentences)}")
    together = result["together"]
    if together:
        both = [len(set(r["cited"]) | set(r["named"])) == 2 for r in together]
        cited = [len(r["cited"]) == 2 for r in together]
        words = statistics.fmean(len(answer_text(r["answer"]).split()) for r in together)
        print(f"  two papers asked together: {len(together)} answers; cover both papers (cite or name each) "
              f"{sum(both)} ({statistics.fmean(both):.2f}), cite both {sum(cited)} ({statistics.fmean(cited):.2f}); "
              f"{words:.1f} quoted words on average")
    if result.get("cue"):
        print("  numeric-question cue vs QASPER answers that are numbers: " + "; ".join(
            f"{half}: precision {c['precision']:.2f}, recall {c['recall']:.2f} ({c['cued']} cued, {c['numeric']} numeric)"
            for half, c in result["cue"].items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the qasper-dev folder (default: %(default)s)")
    parser.add_argument("--pdfs", type=Path, default=PDFS, help="the PDFs (default: %(default)s)")
    parser.add_argument("--data-dir", type=Path, required=True, help="store location, kept between runs")
    parser.add_argument("--baseline", metavar="REF", help="also measure this git ref of the engine, same run")
    parser.add_argument("--examples", action="store_true", help="print the answers that were counted")
    parser.add_argument("--rows", type=Path, help="write every answer of both engines here (JSON)")
    parser.add_argument("--json-out", help="'-': print the measurement as JSON only (used by --baseline)")
    parser.add_argument("--ingest-only", action="store_true", help="build the store and stop")
    args = parser.parse_args()
    if args.json_out == "-":
        json.dump(measure(args), sys.stdout)
        return
    if args.ingest_only:
        measure(args)
        return
    before = None
    if args.baseline:
        from bench.baseline import measure_against

        forwarded = ["--data", str(args.data), "--pdfs", str(args.pdfs), "--data-dir", str(args.data_dir)]
        before = measure_against(args.baseline, Path(__file__).resolve(), forwarded)
    after = measure(args)
    if args.rows:
        args.rows.write_text(json.dumps({"after": after, "before": before}, indent=1))
    vocab = vocabulary(args.data)
    if before is not None:
        report(f"engine at {args.baseline}", before, vocab, args.examples)
    report("this engine", after, vocab, args.examples)


if __name__ == "__main__":
    main()
