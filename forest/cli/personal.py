"""`forest personal ...`: a user's personal memory (process, add, search, history, graph, tags, clear)."""
from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from forest.cli.common import Command, ProgressBar, add_command, add_group, emit
from forest.errors import ForestError
from forest.records import Progress
from forest.text import counted

if TYPE_CHECKING:
    from forest.service import MemoryForest


def register(subparsers: argparse._SubParsersAction) -> None:
    acts = add_group(subparsers, "personal", help="personal memory: process, search, add, history...")

    def act(name: str, run: Command, help: str) -> argparse.ArgumentParser:
        parser = add_command(acts, name, run, help=help)
        parser.add_argument("--user-id", required=True)
        return parser

    process = act("process", process_memory, help="process_memory: context now, write in the background")
    process.add_argument("text", metavar="TEXT")
    process.add_argument("--debug", action="store_true", help="run synchronously and explain every stage")
    for name, helptext in (("add", "add memories directly (each TEXT one memory)"),
                           ("search", "search the user's memories")):
        tool = act(name, memory_tool, help=helptext)
        tool.add_argument("text", nargs="+", metavar="TEXT")
        tool.add_argument("--agent-id")
        tool.add_argument("--run-id")
    act("history", memory_tool, help="every change to the user's memories")
    graph = act("graph", show_graph, help="the user's knowledge graph")
    graph.add_argument("--ended", action="store_true",
                       help="also the facts a later statement superseded, each with when it held")
    tags = act("tags", tag_user, help="preference and topic tags (dry run unless --apply)")
    tags.add_argument("--apply", action="store_true")
    act("clear", clear_user, help="delete everything remembered about the user")
    reembed = add_command(acts, "reembed", reembed_memories,
                          help="re-embed live memories with the configured embedder (after a change of embedder)")
    reembed.add_argument("--user-id", help="one user's (default: every user's)")
    reembed.add_argument("--no-progress", action="store_true")
    worker = add_command(acts, "worker", run_worker,
                         help="write queued process_memory input until stopped (any number, on a server database)")
    worker.add_argument("--until-empty", action="store_true", help="exit once nothing queued is due")
    worker.set_defaults(vector_snapshots=False)  # a long-running process: no snapshots to keep current


def process_memory(forest: MemoryForest, args: argparse.Namespace) -> int:
    personal = forest.personal
    if args.debug:
        return emit(args, {"trace": personal.debug_process_memory(args.user_id, args.text)}, lambda r: r["trace"] + "\n")
    context = personal.process_memory(args.user_id, args.text).to_dict()
    personal.drain()  # a command line process would exit before the background write
    return emit(args, context, lambda c: json.dumps(c, ensure_ascii=False, indent=2) + "\n")


def memory_tool(forest: MemoryForest, args: argparse.Namespace) -> int:
    """add, search and history, through the same tool dispatcher agents call."""
    task, text = args.personal_command, getattr(args, "text", None)
    reply = forest.personal.memory_tool(task, args.user_id, text=text if task == "add" else None,
                                        query=" ".join(text) if task == "search" else None,
                                        agent_id=getattr(args, "agent_id", None), run_id=getattr(args, "run_id", None),
                                        actor="cli")
    if not reply.ok:
        raise ForestError(reply.payload.message)
    return emit(args, reply.to_dict(), lambda r: json.dumps(r["payload"], ensure_ascii=False, indent=2) + "\n")


def show_graph(forest: MemoryForest, args: argparse.Namespace) -> int:
    graph = forest.personal.user_graph(args.user_id, include_ended=args.ended).to_dict()
    return emit(args, graph, lambda g: "".join(
        f"{r['source']} --[{r['relationship']}]--> {r['target']}{_held(r)}\n" for r in g["relations"])
        or "no relations\n")


def _held(relation: dict) -> str:
    """When a fact held, with --ended (valid_to null: it holds now)."""
    if "valid_from" not in relation:
        return ""
    return f"  ({relation['valid_from']} to {relation['valid_to'] or 'now'})"


def tag_user(forest: MemoryForest, args: argparse.Namespace) -> int:
    result = forest.personal.tags(args.user_id, dry_run=not args.apply).to_dict()
    return emit(args, result, lambda r: "".join(
        f"{t['tag']} ({t['kind']}) {t['weight']:.2f}\n" for t in r["candidates"]) or "no tags\n")


def reembed_memories(forest: MemoryForest, args: argparse.Namespace) -> int:
    with ProgressBar(not args.no_progress and sys.stderr.isatty(), "reembed memories") as bar:
        done = forest.personal.reembed(args.user_id, progress=lambda d, t: bar.update(Progress("embed", d, t)))
    return emit(args, {"user_id": args.user_id, "memories_reembedded": done, "embedder": forest.embedder.name},
                lambda r: f"re-embedded {counted(r['memories_reembedded'], 'memory')} with {r['embedder']}\n")


def clear_user(forest: MemoryForest, args: argparse.Namespace) -> int:
    return emit(args, forest.personal.clear_user_memory(args.user_id).to_dict(),
                lambda r: f"removed {counted(r['memories_removed'], 'memory')}\n")


def run_worker(forest: MemoryForest, args: argparse.Namespace) -> int:
    """The personal write queue's worker as a process of its own: every serve process runs one too;
    more share the queue on a server database (claims skip what another worker holds)."""
    import signal
    import time

    def stop(*_: object) -> None:  # `docker stop` and systemd send SIGTERM: stop as on Ctrl-C
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    personal = forest.personal
    personal.start()
    try:
        if args.until_empty:
            while not personal.drain(timeout=60.0):
                pass
        else:
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        personal.stop()  # the item in hand is finished; the rest stays queued for another worker
    state = personal.worker_state().to_dict()
    return emit(args, state, lambda s: f"written {counted(s['written'], 'item')}; "
                                       f"{counted(s['queue']['pending'], 'item')} still queued\n")
