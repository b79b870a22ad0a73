"""`forest` command: a thin face over MemoryForest. JSON on stdout with --json; errors are one
message on stderr and a non-zero exit."""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from forest.config import load_settings
from forest.errors import ForestError
from forest.text import counted

if TYPE_CHECKING:
    from forest.service import MemoryForest

EXIT_ERROR = 1
EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not argparse's usage dump
        sys.stderr.write(f"forest: {message} (see forest --help)\n")
        sys.exit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: a flag given before the subcommand is not reset by the subcommand's own default.
    common.add_argument("--data-dir", default=argparse.SUPPRESS,
                        help="store location (default: FOREST_DATA_DIR or data/store)")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON on stdout")

    parser = _Parser(prog="forest", description="Memory Forest: documents as memory trees for agents.",
                     parents=[common])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    ingest = sub.add_parser("ingest", parents=[common], help="build an archive from each file (.pdf, .txt, .md)")
    ingest.add_argument("paths", nargs="+", metavar="PATH")
    ingest.add_argument("--model-id", required=True)
    ingest.add_argument("--name", help="archive name (default: the document's title, else the file name; "
                                       "only with one PATH)")
    ingest.add_argument("--append-to", type=int, metavar="ARCHIVE_ID",
                        help="add the files to this archive instead of building new ones")
    ingest.add_argument("--chunk-size", type=int)
    ingest.add_argument("--threshold", type=float, help="merge similarity threshold (0-1 scale)")
    ingest.add_argument("--no-progress", action="store_true")

    archives = sub.add_parser("archives", parents=[common], help="list a model_id's archives")
    archives.add_argument("--model-id", required=True)

    tree = sub.add_parser("tree", parents=[common], help="an archive's tree: titles, pages, summaries")
    tree.add_argument("archive_id", type=int, metavar="ARCHIVE_ID")
    tree.add_argument("--model-id", required=True)

    rebuild = sub.add_parser("rebuild", parents=[common],
                             help="re-plan an archive's tree over its stored leaves (nothing re-embedded but "
                                  "the new summary nodes)")
    rebuild.add_argument("archive_id", type=int, metavar="ARCHIVE_ID")
    rebuild.add_argument("--model-id", required=True)
    rebuild.add_argument("--no-progress", action="store_true")

    retrieve = sub.add_parser("retrieve", parents=[common], help="representative nodes for a query")
    retrieve.add_argument("query", metavar="QUERY")
    retrieve.add_argument("--model-id", required=True)
    retrieve.add_argument("--top-k", type=int)

    explore = sub.add_parser("explore", parents=[common], help="a node's children reranked against a query")
    explore.add_argument("node_id", type=int, metavar="NODE_ID")
    explore.add_argument("--query", required=True)
    explore.add_argument("--model-id", required=True)
    explore.add_argument("--threshold", type=float)

    context = sub.add_parser("context", parents=[common], help="the leaf chunks to put in a prompt")
    context.add_argument("question", metavar="QUESTION")
    context.add_argument("--model-id", required=True)
    context.add_argument("--budget", type=int, help="token budget (default: context_budget_tokens)")

    delete = sub.add_parser("delete", parents=[common], help="delete an archive (SQLite and vectors)")
    delete.add_argument("archive_id", type=int, metavar="ARCHIVE_ID")
    delete.add_argument("--model-id", required=True)

    export = sub.add_parser("export", parents=[common], help="write an archive to one JSON file")
    export.add_argument("archive_id", type=int, metavar="ARCHIVE_ID")
    export.add_argument("--model-id", required=True)
    export.add_argument("--vectors", action="store_true", help="include the vectors (reused by the same embedder)")
    export.add_argument("-o", "--output", help="file to write (default: stdout)")

    import_ = sub.add_parser("import", parents=[common], help="recreate an exported archive, ids remapped")
    import_.add_argument("file", metavar="FILE")
    import_.add_argument("--model-id", required=True)
    import_.add_argument("--name", help="archive name (default: the exported one)")

    merge = sub.add_parser("merge-archives", parents=[common],
                           help="list archives whose trees are similar; --join puts them under one super-root")
    merge.add_argument("--model-id", required=True)
    merge.add_argument("--threshold", type=float, default=0.0,
                       help="list pairs at least this similar (0-1 scale; default 0: all, best first)")
    merge.add_argument("--join", type=int, nargs="+", metavar="ARCHIVE_ID",
                       help="join these archives (the first one absorbs the others)")
    merge.add_argument("--name", help="name of the joined archive (default: the first one's)")

    ask = sub.add_parser("ask", parents=[common], help="answer a question with the ANSWER/EXPLORE loop")
    ask.add_argument("question", metavar="QUESTION")
    ask.add_argument("--model-id", required=True)
    ask.add_argument("--session", help="research session: use and update its memory")
    ask.add_argument("--archive", type=int, action="append", dest="archive_ids", metavar="ARCHIVE_ID",
                     help="ask over this archive only; repeat for several (default: all of the model_id's)")

    memory = sub.add_parser("memory", parents=[common], help="research memory: episodic search, knowledge, notes")
    tasks = memory.add_subparsers(dest="memory_command", required=True, parser_class=_Parser)
    search = tasks.add_parser("search", parents=[common], help="search_episodic_memory")
    search.add_argument("query", metavar="QUERY")
    search.add_argument("--model-id", required=True)
    search.add_argument("--time-range", help="e.g. 24h, 7d, 2026-11-01..2026-11-15")
    search.add_argument("--session", help="only this session's events")
    search.add_argument("--top-k", type=int, default=5)
    know = tasks.add_parser("know", parents=[common], help="update_semantic_knowledge: record a conclusion")
    know.add_argument("topic", metavar="TOPIC")
    know.add_argument("conclusion", metavar="CONCLUSION")
    know.add_argument("--model-id", required=True)
    knowledge = tasks.add_parser("knowledge", parents=[common], help="the conclusions in force, or a topic's history")
    knowledge.add_argument("--model-id", required=True)
    knowledge.add_argument("--topic", help="show this topic with every earlier version")
    note = tasks.add_parser("note", parents=[common], help="add a workspace note to a session")
    note.add_argument("kind", choices=("focus", "constraint", "finding"))
    note.add_argument("text", metavar="TEXT")
    note.add_argument("--model-id", required=True)
    note.add_argument("--session", required=True)
    note.add_argument("--source", default="")
    brief = tasks.add_parser("brief", parents=[common], help="the session's prompt preamble (directives, briefing)")
    brief.add_argument("--model-id", required=True)
    brief.add_argument("--session", required=True)
    compact = tasks.add_parser("compact", parents=[common], help="compact the session's conversation now")
    compact.add_argument("--model-id", required=True)
    compact.add_argument("--session", required=True)

    personal = sub.add_parser("personal", parents=[common], help="personal memory: process, search, add, history...")
    acts = personal.add_subparsers(dest="personal_command", required=True, parser_class=_Parser)
    process = acts.add_parser("process", parents=[common], help="process_memory: context now, write in the background")
    process.add_argument("text", metavar="TEXT")
    process.add_argument("--debug", action="store_true", help="run synchronously and explain every stage")
    for name, helptext in (("add", "add memories directly (each TEXT one memory)"),
                           ("search", "search the user's memories")):
        act = acts.add_parser(name, parents=[common], help=helptext)
        act.add_argument("text", nargs="+", metavar="TEXT")
        act.add_argument("--agent-id")
        act.add_argument("--run-id")
    acts.add_parser("history", parents=[common], help="every change to the user's memories")
    acts.add_parser("graph", parents=[common], help="the user's knowledge graph")
    tags = acts.add_parser("tags", parents=[common], help="preference and topic tags (dry run unless --apply)")
    tags.add_argument("--apply", action="store_true")
    acts.add_parser("clear", parents=[common], help="delete everything remembered about the user")
    for act in acts.choices.values():
        act.add_argument("--user-id", required=True)

    serve = sub.add_parser("serve", parents=[common], help="serve the tools over MCP (stdio or HTTP, with REST "
                                                           "and an OpenAI-compatible endpoint)")
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    serve.add_argument("--host", help="HTTP bind address (default: server_host, 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP port (default: server_port, 8765)")

    doctor = sub.add_parser("doctor", parents=[common], help="report (and repair) drift between the stores")
    doctor.add_argument("--repair", action="store_true")

    reembed = sub.add_parser("reembed", parents=[common],
                             help="re-embed a model_id's episodic events with the configured embedder")
    reembed.add_argument("--model-id", required=True)

    sub.add_parser("config", parents=[common], help="print the configuration in force")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.json = getattr(args, "json", False)
    logging.basicConfig(level=logging.WARNING, format="forest: %(levelname)s: %(message)s")
    try:
        settings = load_settings({"data_dir": getattr(args, "data_dir", None)})
        if args.command == "config":
            return _emit(args, settings.describe(), _text_config)
        from forest.service import MemoryForest  # the engine loads after argument parsing

        # A command answers vector reads from snapshots when it owns the store (no chromadb
        # import); `forest serve` is a long-running owner and searches Chroma's index.
        forest = MemoryForest(settings, vector_snapshots=args.command != "serve")
        try:
            return COMMANDS[args.command](forest, args)
        finally:
            forest.close()
    except ForestError as exc:
        print(f"forest: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # a bug, not bad input: still one line unless FOREST_DEBUG is set
        if os.environ.get("FOREST_DEBUG"):
            raise
        print(f"forest: internal error: {type(exc).__name__}: {exc} (set FOREST_DEBUG=1 for details)",
              file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("forest: interrupted; nothing half-built was kept", file=sys.stderr)
        return 130


def _emit(args: argparse.Namespace, data: Any, as_text) -> int:
    if args.json:
        json.dump(data, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(as_text(data))
    return 0


def _cmd_ingest(forest: MemoryForest, args) -> int:
    if args.name and (len(args.paths) > 1 or args.append_to is not None):
        raise ForestError("--name needs exactly one PATH and no --append-to")
    made = []
    for path in args.paths:
        with _ProgressBar(enabled=not args.no_progress and sys.stderr.isatty(), label=Path(path).name) as bar:
            if args.append_to is not None:
                archive = forest.append_file(path, args.model_id, args.append_to, progress=bar.update)
            else:
                archive = forest.ingest_file(path, args.model_id, name=args.name, chunk_size=args.chunk_size,
                                             threshold=args.threshold, progress=bar.update)
        made.append(archive.to_dict())
    return _emit(args, made, lambda rows: "".join(
        f"archive {a['id']} '{a['name']}': {_shape(a)}\n" for a in rows))


def _shape(archive: dict[str, Any]) -> str:
    return (f"{counted(archive['leaves'], 'leaf', 'leaves')}, {counted(archive['nodes'], 'node')}, "
            f"{counted(archive['roots'], 'root')}, depth {archive['depth']}")


def _cmd_rebuild(forest: MemoryForest, args) -> int:
    with _ProgressBar(enabled=not args.no_progress and sys.stderr.isatty(), label=f"archive {args.archive_id}") as bar:
        archive = forest.rebuild_archive(args.model_id, args.archive_id, progress=bar.update).to_dict()
    return _emit(args, archive, lambda a: f"archive {a['id']} '{a['name']}' rebuilt: {_shape(a)}\n")


def _cmd_merge_archives(forest: MemoryForest, args) -> int:
    if args.join:
        archive = forest.join_archives(args.model_id, args.join, name=args.name)
        return _emit(args, archive.to_dict(), lambda a: (
            f"joined into archive {a['id']} '{a['name']}': {_shape(a)}\n"))
    pairs = [p.to_dict() for p in forest.similar_archives(args.model_id, args.threshold)]

    def text(rows: list[dict]) -> str:
        if not rows:
            return "no pair of archives is that similar\n"
        lines = [f"{r['similarity']:.3f}  {r['archive_ids'][0]} '{r['names'][0]}' + "
                 f"{r['archive_ids'][1]} '{r['names'][1]}'" for r in rows]
        return "\n".join(lines) + "\njoin with: forest merge-archives --model-id M --join ID ID ...\n"

    return _emit(args, pairs, text)


def _cmd_serve(forest: MemoryForest, args) -> int:
    from forest.serving.http import serve_http, serve_stdio

    forest.own_store()
    if args.transport == "stdio":
        serve_stdio(forest)
    else:
        serve_http(forest, args.host or forest.settings.server_host, args.port or forest.settings.server_port)
    return 0


def _cmd_archives(forest, args) -> int:
    rows = [a.to_dict() for a in forest.archives(args.model_id)]
    return _emit(args, rows, lambda rows: "".join(
        f"{a['id']:>6}  {a['name']}  leaves={a['leaves']} nodes={a['nodes']} roots={a['roots']} "
        f"depth={a['depth']} chars={a['chars']} {a['created_at']}\n" for a in rows) or "no archives\n")


def _cmd_tree(forest, args) -> int:
    rows = [n.to_dict() for n in forest.tree(args.model_id, args.archive_id)]
    by_parent: dict[Any, list[dict]] = {}
    for n in rows:
        by_parent.setdefault(n["parent_id"], []).append(n)

    def line(node: dict) -> str:
        indent, pages = "  " * node["depth"], f" ({node['citation']})" if node["citation"] else ""
        if node["leaf_index"] is not None:
            return f"{indent}[{node['id']}] leaf {node['leaf_index']}{pages}: {node['summary'][:90]}"
        merged = "joined archives" if node["merge_similarity"] is None else f"merged at {node['merge_similarity']:.2f}"
        return (f"{indent}[{node['id']}] {node['title'] or '(untitled)'}{pages}, "
                f"{counted(node['leaf_count'], 'leaf', 'leaves')}, {merged}\n{indent}    {node['summary'][:160]}")

    def text(_rows) -> str:
        # Depth first with a stack, not recursion: an imported tree can be thousands of levels deep.
        lines: list[str] = []
        stack = sorted(by_parent.get(None, []), key=lambda c: c["first_leaf"], reverse=True)
        while stack:
            node = stack.pop()
            lines.append(line(node))
            stack.extend(sorted(by_parent.get(node["id"], []), key=lambda c: c["first_leaf"], reverse=True))
        return "\n".join(lines) + "\n"

    return _emit(args, rows, text)


def _cmd_retrieve(forest, args) -> int:
    reps = [r.to_dict() for r in forest.retrieve(args.model_id, args.query, args.top_k)]
    return _emit(args, reps, lambda rows: "".join(
        f"[{r['id']}] {r['node_type']} {r['kind']} score={r['score']:.3f} hits={r['hit_ids']} archive={r['archive_id']}\n"
        f"    {r['summary']}\n    hint: {r['hint']}\n" for r in rows) or "no hits\n")


def _cmd_explore(forest, args) -> int:
    rows = [s.to_dict() for s in forest.explore(args.model_id, args.node_id, args.query, args.threshold)]
    return _emit(args, rows, lambda rows: "".join(
        f"[{r['id']}] {r['node_type']} relevance={r['relevance_score']:.3f}\n    {r['summary']}\n"
        for r in rows) or "no child clears the threshold\n")


def _cmd_context(forest, args) -> int:
    result = forest.context(args.model_id, args.question, args.budget).to_dict()
    return _emit(args, result, lambda r: "".join(
        f"--- [{leaf['id']}] leaf {leaf['leaf_index']} of archive {leaf['archive_id']}"
        f"{', ' + leaf['citation'] if leaf['citation'] else ''} (relevance {leaf['relevance_score']:.3f})\n"
        f"{leaf['content']}\n" for leaf in r["leaves"])
        + f"--- {r['used_tokens']} of {r['budget_tokens']} tokens\n")


def _cmd_delete(forest, args) -> int:
    forest.delete_archive(args.model_id, args.archive_id)
    return _emit(args, {"deleted": args.archive_id}, lambda d: f"deleted archive {d['deleted']}\n")


def _cmd_export(forest, args) -> int:
    document = forest.export_archive(args.model_id, args.archive_id, with_vectors=args.vectors)
    text = json.dumps(document, ensure_ascii=False)
    if not args.output:
        sys.stdout.write(text + "\n")
        return 0
    Path(args.output).write_text(text, encoding="utf-8")
    return _emit(args, {"archive_id": args.archive_id, "file": args.output, "nodes": len(document["nodes"])},
                 lambda d: f"exported archive {d['archive_id']} ({d['nodes']} nodes) to {d['file']}\n")


def _cmd_import(forest, args) -> int:
    from forest.tree.archive_io import MAX_IMPORT_BYTES, read_export
    from forest.ingest.files import read_limited

    raw = read_limited(args.file, MAX_IMPORT_BYTES, f"the import limit of {MAX_IMPORT_BYTES:,} bytes")
    document = read_export(raw, Path(args.file).name)
    archive = forest.import_archive(args.model_id, document, name=args.name).to_dict()
    return _emit(args, archive, lambda a: f"imported as archive {a['id']} '{a['name']}': {a['nodes']} nodes\n")


def _cmd_reembed(forest, args) -> int:
    done = {"model_id": args.model_id, "events_reembedded": forest.research.reembed(args.model_id)}
    return _emit(args, done, lambda d: f"re-embedded {d['events_reembedded']} episodic events of {d['model_id']}\n")


def _cmd_doctor(forest, args) -> int:
    report = forest.doctor(repair_drift=args.repair).to_dict()

    def text(r) -> str:
        q = r["write_queue"]
        queue = (f"personal write queue: {q['pending']} pending ({q['retrying']} waiting to retry), "
                 f"{q['done']} done, {q['failed']} failed" + (f"; newest error: {q['last_error']}" if q["last_error"] else ""))
        if r["healthy"]:
            return f"healthy: SQLite and the vector store agree\n{queue}\n"
        lines = [queue, f"stale builds (archives): {r['stale_builds']}" if r["stale_builds"] else "",
                 *(f"vectors without a node ({m}): {len(ids)}" for m, ids in r["orphan_vectors"].items()),
                 *(f"nodes without a vector ({m}): {len(ids)}" for m, ids in r["missing_vectors"].items()),
                 f"nodes with a wrong path or depth: {len(r['bad_paths'])}" if r["bad_paths"] else "",
                 *(f"readable by other users: {entry}" for entry in r["loose_permissions"]),
                 *(f"archive {a} has malformed settings: {'; '.join(problems)}"
                   for a, problems in r["bad_settings"].items()),
                 "repaired" if r["repaired"] else "run `forest doctor --repair` to fix"]
        return "\n".join(line for line in lines if line) + "\n"

    _emit(args, report, text)
    return 0 if report["healthy"] or report["repaired"] else EXIT_ERROR


def _text_config(settings: dict) -> str:
    return "".join(f"{key} = {value}\n" for key, value in settings.items())


class _ProgressBar:
    """One tqdm bar per stage on stderr; silent when stderr is not a terminal."""

    def __init__(self, enabled: bool, label: str) -> None:
        self.enabled = enabled
        self.label = label
        self._bar = None
        self._key = None

    def update(self, event) -> None:
        if not self.enabled:
            return
        from tqdm import tqdm

        key = (event.stage, event.detail if event.stage != "merge" else "", event.total)
        if key != self._key:
            if self._bar is not None:
                self._bar.close()
            self._bar = tqdm(total=event.total, desc=f"{self.label}: {event.stage} {event.detail}".strip(),
                             file=sys.stderr, leave=False, unit="it")
            self._key = key
        self._bar.n = event.done
        self._bar.refresh()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.close()


def _cmd_ask(forest, args) -> int:
    if args.session:
        state, turn = forest.ask_in_session(args.model_id, args.session, args.question, archive_ids=args.archive_ids)
        result = {**state.to_dict(), "research": turn.to_dict()}
    else:
        result = forest.ask(args.model_id, args.question, archive_ids=args.archive_ids).to_dict()
    return _emit(args, result, _text_answer)


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


def _cmd_memory(forest, args) -> int:
    research, task = forest.research, args.memory_command
    if task == "search":
        found = [e.to_dict() for e in research.search_episodic(args.model_id, args.query, args.time_range,
                                                               args.top_k, args.session)]
        return _emit(args, found, lambda rows: "".join(
            f"[{e['id']}] {e['created_at']} {e['kind']} (session {e['session_id']}) score={e['score']:.3f} "
            f"= similarity {e['similarity']:.3f} x retention {e['retention']:.3f}\n    {e['content'][:300]}\n"
            for e in rows) or "no events\n")
    if task == "know":
        result = research.update_knowledge(args.model_id, args.topic, args.conclusion)
        return _emit(args, result, lambda r: f"{r['topic']} (version {r['version']}): {r['conclusion']}\n")
    if task == "knowledge":
        rows = [k.to_dict() for k in research.knowledge(args.model_id, args.topic, with_history=bool(args.topic))]
        return _emit(args, rows, lambda rows: "".join(
            f"{k['topic']} v{k['version']}{' (superseded ' + k['superseded_at'] + ')' if k['superseded_at'] else ''}: "
            f"{k['conclusion']}\n" for k in rows) or "no semantic knowledge yet\n")
    if task == "note":
        item = research.add_note(args.model_id, args.session, args.kind, args.text, args.source).to_dict()
        return _emit(args, item, lambda i: f"added {i['kind']} {i['id']}\n")
    if task == "brief":
        preamble = research.preamble(args.model_id, args.session)
        return _emit(args, {"preamble": preamble}, lambda d: d["preamble"] + "\n")
    report = research.compact(args.model_id, args.session).to_dict()
    return _emit(args, report, lambda r: f"compacted {counted(r['compacted_messages'], 'message')}: {r['tokens_before']} -> "
                                         f"{r['tokens_after']} tokens ({r['made_by']})\n")


def _cmd_personal(forest, args) -> int:
    personal, task, user = forest.personal, args.personal_command, args.user_id
    if task == "process" and args.debug:
        return _emit(args, {"trace": personal.debug_process_memory(user, args.text)}, lambda r: r["trace"] + "\n")
    if task == "process":
        context = personal.process_memory(user, args.text)
        personal.drain()  # a command line process would exit before the background write
        return _emit(args, context, lambda c: json.dumps(c, ensure_ascii=False, indent=2) + "\n")
    if task in ("add", "search", "history"):
        text = getattr(args, "text", None)
        reply = personal.memory_tool(task, user, text=text if task == "add" else None,
                                     query=" ".join(text) if task == "search" else None,
                                     agent_id=getattr(args, "agent_id", None), run_id=getattr(args, "run_id", None),
                                     actor="cli")
        if reply["status"] != "success":
            raise ForestError(reply["payload"].get("error") or reply["payload"].get("reason"))
        return _emit(args, reply, lambda r: json.dumps(r["payload"], ensure_ascii=False, indent=2) + "\n")
    if task == "graph":
        graph = personal.user_graph(user)
        return _emit(args, graph, lambda g: "".join(
            f"{r['source']} --[{r['relationship']}]--> {r['target']}\n" for r in g["relations"]) or "no relations\n")
    if task == "tags":
        result = personal.tags(user, dry_run=not args.apply)
        return _emit(args, result, lambda r: "".join(
            f"{t['tag']} ({t['kind']}) {t['weight']:.2f}\n" for t in r["candidates"]) or "no tags\n")
    return _emit(args, personal.clear_user_memory(user), lambda r: f"removed {counted(r['memories_removed'], 'memory')}\n")


COMMANDS = {"ask": _cmd_ask, "memory": _cmd_memory, "personal": _cmd_personal, "ingest": _cmd_ingest, "archives": _cmd_archives, "tree": _cmd_tree, "retrieve": _cmd_retrieve,
            "explore": _cmd_explore, "context": _cmd_context, "delete": _cmd_delete, "export": _cmd_export,
            "import": _cmd_import, "merge-archives": _cmd_merge_archives, "serve": _cmd_serve,
            "doctor": _cmd_doctor, "rebuild": _cmd_rebuild, "reembed": _cmd_reembed}

if __name__ == "__main__":
    sys.exit(main())
