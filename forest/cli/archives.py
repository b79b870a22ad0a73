"""Archive commands: ingest, archives, tree, rebuild, delete, export, import, merge-archives."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from forest.cli.common import ProgressBar, add_command, add_on_duplicate, emit
from forest.errors import AlreadyInLibrary, ForestError
from forest.storage.private_files import open_private
from forest.text import counted

if TYPE_CHECKING:
    from forest.service import MemoryForest


def register(subparsers: argparse._SubParsersAction) -> None:
    ingest = add_command(subparsers, "ingest", ingest_files, help="build an archive from each file (.pdf, .txt, .md)")
    ingest.add_argument("paths", nargs="+", metavar="PATH")
    ingest.add_argument("--model-id", required=True)
    ingest.add_argument("--name", help="archive name (default: the document's title, else the file name; "
                                       "only with one PATH)")
    ingest.add_argument("--append-to", type=int, metavar="ARCHIVE_ID",
                        help="add the files to this archive instead of building new ones")
    ingest.add_argument("--chunk-size", type=int)
    ingest.add_argument("--threshold", type=float, help="merge similarity threshold (0-1 scale)")
    ingest.add_argument("--no-progress", action="store_true")
    add_on_duplicate(ingest)

    listing = add_command(subparsers, "archives", list_archives, help="list a model_id's archives")
    listing.add_argument("--model-id", required=True)

    tree = add_command(subparsers, "tree", show_tree, help="an archive's tree: titles, pages, summaries")
    tree.add_argument("archive_id", type=int, metavar="ARCHIVE_ID")
    tree.add_argument("--model-id", required=True)

    rebuild = add_command(subparsers, "rebuild", rebuild_archive,
                          help="re-plan an archive's tree over its stored leaves (nothing re-embedded but "
                               "the new summary nodes)")
    rebuild.add_argument("archive_id", type=int, metavar="ARCHIVE_ID")
    rebuild.add_argument("--model-id", required=True)
    rebuild.add_argument("--no-progress", action="store_true")

    delete = add_command(subparsers, "delete", delete_archive, help="delete an archive (SQLite and vectors)")
    delete.add_argument("archive_id", type=int, metavar="ARCHIVE_ID")
    delete.add_argument("--model-id", required=True)

    export = add_command(subparsers, "export", export_archive, help="write an archive to one JSON file")
    export.add_argument("archive_id", type=int, metavar="ARCHIVE_ID")
    export.add_argument("--model-id", required=True)
    export.add_argument("--vectors", action="store_true", help="include the vectors (reused by the same embedder)")
    export.add_argument("-o", "--output", help="file to write (default: stdout)")

    import_ = add_command(subparsers, "import", import_archive, help="recreate an exported archive, ids remapped")
    import_.add_argument("file", metavar="FILE")
    import_.add_argument("--model-id", required=True)
    import_.add_argument("--name", help="archive name (default: the exported one)")
    import_.add_argument("--no-progress", action="store_true")
    add_on_duplicate(import_)

    merge = add_command(subparsers, "merge-archives", merge_archives,
                        help="list archives whose trees are similar; --join puts them under one super-root")
    merge.add_argument("--model-id", required=True)
    merge.add_argument("--threshold", type=float, default=0.0,
                       help="list pairs at least this similar (0-1 scale; default 0: all, best first)")
    merge.add_argument("--join", type=int, nargs="+", metavar="ARCHIVE_ID",
                       help="join these archives (the first one absorbs the others)")
    merge.add_argument("--name", help="name of the joined archive (default: the first one's)")


def ingest_files(forest: MemoryForest, args: argparse.Namespace) -> int:
    if args.name and (len(args.paths) > 1 or args.append_to is not None):
        raise ForestError("--name needs exactly one PATH and no --append-to")
    made = []
    for path in args.paths:
        with ProgressBar(enabled=not args.no_progress and sys.stderr.isatty(), label=Path(path).name) as bar:
            try:
                if args.append_to is not None:
                    archive = forest.append_file(path, args.model_id, args.append_to, progress=bar.update)
                else:
                    archive = forest.ingest_file(path, args.model_id, name=args.name, chunk_size=args.chunk_size,
                                                 threshold=args.threshold, progress=bar.update,
                                                 on_duplicate=args.on_duplicate)
            except AlreadyInLibrary as held:   # skipped, as asked: the other files go on
                made.append({"path": str(path), "already_in_library": held.archive_id, "said": str(held)})
                continue
        made.append(archive.to_dict())
    return emit(args, made, lambda rows: "".join(
        f"{a['path']}: {a['said']}: skipped (--on-duplicate replace or keep adds it)\n" if "said" in a
        else f"archive {a['id']} '{a['name']}': {_shape(a)}\n" for a in rows))


def list_archives(forest: MemoryForest, args: argparse.Namespace) -> int:
    rows = [a.to_dict() for a in forest.archives(args.model_id)]
    return emit(args, rows, lambda rows: "".join(
        f"{a['id']:>6}  {a['name']}{'  [' + a['cite_as'] + ']' if a['cite_as'] not in (None, a['name']) else ''}  leaves={a['leaves']} "
        f"nodes={a['nodes']} roots={a['roots']} "
        f"depth={a['depth']} chars={a['chars']} {a['created_at']}\n" for a in rows) or "no archives\n")


def show_tree(forest: MemoryForest, args: argparse.Namespace) -> int:
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

    return emit(args, rows, text)


def rebuild_archive(forest: MemoryForest, args: argparse.Namespace) -> int:
    with ProgressBar(enabled=not args.no_progress and sys.stderr.isatty(), label=f"archive {args.archive_id}") as bar:
        archive = forest.rebuild_archive(args.model_id, args.archive_id, progress=bar.update).to_dict()
    return emit(args, archive, lambda a: f"archive {a['id']} '{a['name']}' rebuilt: {_shape(a)}\n")


def delete_archive(forest: MemoryForest, args: argparse.Namespace) -> int:
    forest.delete_archive(args.model_id, args.archive_id)
    return emit(args, {"deleted": args.archive_id}, lambda d: f"deleted archive {d['deleted']}\n")


def export_archive(forest: MemoryForest, args: argparse.Namespace) -> int:
    document = forest.export_archive(args.model_id, args.archive_id, with_vectors=args.vectors)
    text = json.dumps(document, ensure_ascii=False)
    if not args.output:
        sys.stdout.write(text + "\n")
        return 0
    with open_private(args.output) as out:   # an archive holds the documents' text: 0600, as the store
        out.write(text.encode("utf-8"))
    return emit(args, {"archive_id": args.archive_id, "file": args.output, "nodes": len(document["nodes"])},
                lambda d: f"exported archive {d['archive_id']} ({d['nodes']} nodes) to {d['file']}\n")


def import_archive(forest: MemoryForest, args: argparse.Namespace) -> int:
    with ProgressBar(enabled=not args.no_progress and sys.stderr.isatty(), label=Path(args.file).name) as bar:
        try:
            archive = forest.import_archive_file(args.model_id, args.file, name=args.name, progress=bar.update,
                                                 on_duplicate=args.on_duplicate).to_dict()
        except AlreadyInLibrary as held:
            return emit(args, {"file": args.file, "already_in_library": held.archive_id, "said": str(held)},
                        lambda d: f"{d['file']}: {d['said']}: not imported (--on-duplicate replace or keep adds it)\n")
    return emit(args, archive, lambda a: f"imported as archive {a['id']} '{a['name']}': {a['nodes']} nodes\n")


def merge_archives(forest: MemoryForest, args: argparse.Namespace) -> int:
    if args.join:
        archive = forest.join_archives(args.model_id, args.join, name=args.name)
        return emit(args, archive.to_dict(), lambda a: (
            f"joined into archive {a['id']} '{a['name']}': {_shape(a)}\n"))
    pairs = [p.to_dict() for p in forest.similar_archives(args.model_id, args.threshold)]

    def text(rows: list[dict]) -> str:
        if not rows:
            return "no pair of archives is that similar\n"
        lines = [f"{r['similarity']:.3f}  {r['archive_ids'][0]} '{r['names'][0]}' + "
                 f"{r['archive_ids'][1]} '{r['names'][1]}'" for r in rows]
        return "\n".join(lines) + "\njoin with: forest merge-archives --model-id M --join ID ID ...\n"

    return emit(args, pairs, text)


def _shape(archive: dict[str, Any]) -> str:
    return (f"{counted(archive['leaves'], 'leaf', 'leaves')}, {counted(archive['nodes'], 'node')}, "
            f"{counted(archive['roots'], 'root')}, depth {archive['depth']}")


