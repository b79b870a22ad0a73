"""`forest memory ...`: research memory (episodic search, semantic knowledge, session notes)."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from forest.cli.common import add_command, add_group, emit
from forest.text import counted

if TYPE_CHECKING:
    from forest.service import MemoryForest


def register(subparsers: argparse._SubParsersAction) -> None:
    tasks = add_group(subparsers, "memory", help="research memory: episodic search, knowledge, notes")
    search = add_command(tasks, "search", search_episodic, help="search_episodic_memory")
    search.add_argument("query", metavar="QUERY")
    search.add_argument("--model-id", required=True)
    search.add_argument("--time-range", help="e.g. 24h, 7d, 2026-11-01..2026-11-15")
    search.add_argument("--session", help="only this session's events")
    search.add_argument("--top-k", type=int, default=5)

    know = add_command(tasks, "know", record_conclusion, help="update_semantic_knowledge: record a conclusion")
    know.add_argument("topic", metavar="TOPIC")
    know.add_argument("conclusion", metavar="CONCLUSION")
    know.add_argument("--model-id", required=True)

    knowledge = add_command(tasks, "knowledge", show_knowledge, help="the conclusions in force, or a topic's history")
    knowledge.add_argument("--model-id", required=True)
    knowledge.add_argument("--topic", help="show this topic with every earlier version")

    note = add_command(tasks, "note", add_note, help="add a workspace note to a session")
    note.add_argument("kind", choices=("focus", "constraint", "finding"))
    note.add_argument("text", metavar="TEXT")
    note.add_argument("--model-id", required=True)
    note.add_argument("--session", required=True)
    note.add_argument("--source", default="")

    brief = add_command(tasks, "brief", show_preamble, help="the session's prompt preamble (directives, briefing)")
    compact = add_command(tasks, "compact", compact_session, help="compact the session's conversation now")
    for session_command in (brief, compact):
        session_command.add_argument("--model-id", required=True)
        session_command.add_argument("--session", required=True)


def search_episodic(forest: MemoryForest, args: argparse.Namespace) -> int:
    found = [e.to_dict() for e in forest.research.search_episodic(args.model_id, args.query, args.time_range,
                                                                  args.top_k, args.session)]
    return emit(args, found, lambda rows: "".join(
        f"[{e['id']}] {e['created_at']} {e['kind']} (session {e['session_id']}) score={e['score']:.3f} "
        f"= similarity {e['similarity']:.3f} x retention {e['retention']:.3f}\n    {e['content'][:300]}\n"
        for e in rows) or "no events\n")


def record_conclusion(forest: MemoryForest, args: argparse.Namespace) -> int:
    result = forest.research.update_knowledge(args.model_id, args.topic, args.conclusion)
    return emit(args, result, lambda r: f"{r['topic']} (version {r['version']}): {r['conclusion']}\n")


def show_knowledge(forest: MemoryForest, args: argparse.Namespace) -> int:
    rows = [k.to_dict() for k in forest.research.knowledge(args.model_id, args.topic, with_history=bool(args.topic))]
    return emit(args, rows, lambda rows: "".join(
        f"{k['topic']} v{k['version']}{' (superseded ' + k['superseded_at'] + ')' if k['superseded_at'] else ''}: "
        f"{k['conclusion']}\n" for k in rows) or "no semantic knowledge yet\n")


def add_note(forest: MemoryForest, args: argparse.Namespace) -> int:
    item = forest.research.add_note(args.model_id, args.session, args.kind, args.text, args.source).to_dict()
    return emit(args, item, lambda i: f"added {i['kind']} {i['id']}\n")


def show_preamble(forest: MemoryForest, args: argparse.Namespace) -> int:
    preamble = forest.research.preamble(args.model_id, args.session)
    return emit(args, {"preamble": preamble}, lambda d: d["preamble"] + "\n")


def compact_session(forest: MemoryForest, args: argparse.Namespace) -> int:
    report = forest.research.compact(args.model_id, args.session).to_dict()
    return emit(args, report, lambda r: f"compacted {counted(r['compacted_messages'], 'message')}: "
                                        f"{r['tokens_before']} -> {r['tokens_after']} tokens ({r['made_by']})\n")
