"""Recall commands: retrieve, explore, context, ask, compare."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from forest.cli.common import add_command, emit
from forest.text import counted

if TYPE_CHECKING:
    from forest.recall.compare import Comparison
    from forest.service import MemoryForest


def register(subparsers: argparse._SubParsersAction) -> None:
    retrieve = add_command(subparsers, "retrieve", retrieve_nodes, help="representative nodes for a query")
    retrieve.add_argument("query", metavar="QUERY")
    retrieve.add_argument("--model-id", required=True)
    retrieve.add_argument("--top-k", type=int)

    explore = add_command(subparsers, "explore", explore_node, help="a node's children reranked against a query")
    explore.add_argument("node_id", type=int, metavar="NODE_ID")
    explore.add_argument("--query", required=True)
    explore.add_argument("--model-id", required=True)
    explore.add_argument("--threshold", type=float)

    context = add_command(subparsers, "context", prompt_context, help="the leaf chunks to put in a prompt")
    context.add_argument("question", metavar="QUESTION")
    context.add_argument("--model-id", required=True)
    context.add_argument("--budget", type=int, help="token budget (default: context_budget_tokens)")

    ask = add_command(subparsers, "ask", ask_question, help="answer a question with the ANSWER/EXPLORE loop")
    ask.add_argument("question", metavar="QUESTION")
    ask.add_argument("--model-id", required=True)
    ask.add_argument("--session", help="research session: use and update its memory")
    ask.add_argument("--archive", type=int, action="append", dest="archive_ids", metavar="ARCHIVE_ID",
                     help="ask over this archive only; repeat for several (default: all of the model_id's)")

    compare = add_command(subparsers, "compare", compare_papers,
                          help="compare papers: each paper's cited answer to each question, as a table")
    compare.add_argument("questions", nargs="+", metavar="QUESTION", help="one column each")
    compare.add_argument("--model-id", required=True)
    compare.add_argument("--archives", type=archive_list, metavar="ID,ID",
                         help="the papers (archive ids) to compare (default: all of the model_id's)")
    compare.add_argument("--threshold", type=float,
                         help="0-1 relevance a cell's passage needs, else the cell says not found "
                              "(default: the comparison's, docs/compare.md)")
    compare.add_argument("--format", choices=("text", "markdown", "csv"), default="text",
                         help="text (a paper at a time), or the table as Markdown or CSV (default: text)")


def retrieve_nodes(forest: MemoryForest, args: argparse.Namespace) -> int:
    reps = [r.to_dict() for r in forest.retrieve(args.model_id, args.query, args.top_k)]
    return emit(args, reps, lambda rows: "".join(
        f"[{r['id']}] {r['node_type']} {r['kind']} score={r['score']:.3f} hits={r['hit_ids']} archive={r['archive_id']}\n"
        f"    {r['summary']}\n    hint: {r['hint']}\n" for r in rows) or "no hits\n")


def explore_node(forest: MemoryForest, args: argparse.Namespace) -> int:
    rows = [s.to_dict() for s in forest.explore(args.model_id, args.node_id, args.query, args.threshold)]
    return emit(args, rows, lambda rows: "".join(
        f"[{r['id']}] {r['node_type']} relevance={r['relevance_score']:.3f}\n    {r['summary']}\n"
        for r in rows) or "no child clears the threshold\n")


def prompt_context(forest: MemoryForest, args: argparse.Namespace) -> int:
    result = forest.context(args.model_id, args.question, args.budget).to_dict()
    return emit(args, result, lambda r: "".join(
        f"--- [{leaf['id']}] leaf {leaf['leaf_index']} of archive {leaf['archive_id']}"
        f"{', ' + leaf['citation'] if leaf['citation'] else ''} (relevance {leaf['relevance_score']:.3f})\n"
        f"{leaf['content']}\n" for leaf in r["leaves"])
        + f"--- {r['used_tokens']} of {r['budget_tokens']} tokens\n")


def ask_question(forest: MemoryForest, args: argparse.Namespace) -> int:
    if args.session:
        state, turn = forest.ask_in_session(args.model_id, args.session, args.question, archive_ids=args.archive_ids)
        result = {**state.to_dict(), "research": turn.to_dict()}
    else:
        result = forest.ask(args.model_id, args.question, archive_ids=args.archive_ids).to_dict()
    return emit(args, result, _text_answer)


def archive_list(text: str) -> list[int]:
    """'1,2' -> [1, 2]."""
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"archive ids are integers separated by commas (1,2), got {text!r}") from None


def compare_papers(forest: MemoryForest, args: argparse.Namespace) -> int:
    from forest.views.comparison_table import comparison_csv, comparison_markdown

    comparison = forest.compare(args.model_id, args.questions, args.archives, threshold=args.threshold)
    as_text = {"text": _text_comparison, "markdown": comparison_markdown, "csv": comparison_csv}[args.format]
    return emit(args, comparison.to_dict(), lambda _: as_text(comparison))


def _text_comparison(comparison: Comparison) -> str:
    lines = []
    for paper in comparison.papers:
        lines.append(f"{paper.label} (archive {paper.archive_id})")
        for cell in comparison.row(paper.archive_id):
            cited = f" [node {cell.node_id}{', ' + cell.citation if cell.citation else ''}]" if cell.found else ""
            lines += [f"  {cell.question}", f"    {cell.text}{cited}"]
    return "\n".join(lines) + "\n"


def _text_answer(result: dict[str, Any]) -> str:
    lines = [result["answer"], "", f"answered by {result['answered_by']} after {counted(len(result['trace']), 'step')}"]
    research = result.get("research")
    if research:
        for conflict in research["conflicts"]:
            lines.append(f"conflict {conflict['a']['key']} vs {conflict['b']['key']}: {conflict['detected']}")
        if research["compaction"]:
            c = research["compaction"]
            lines.append(f"session compacted: {counted(c['compacted_messages'], 'message')}, {c['tokens_before']} -> "
                         f"{c['tokens_after']} tokens, {counted(len(c['findings_added']), 'finding')} kept "
                         f"({c['made_by']})")
    return "\n".join(lines) + "\n"
