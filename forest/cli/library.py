"""`forest library ...`: import a researcher's library (Zotero, BibTeX, a folder), and its BibTeX."""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from forest.cli.common import add_command, add_group, add_on_duplicate, emit

from forest.views.library_view import import_details, import_summary

if TYPE_CHECKING:
    from forest.records import Progress
    from forest.service import MemoryForest


def register(subparsers: argparse._SubParsersAction) -> None:
    library = add_group(subparsers, "library", help="a researcher's library: import from Zotero, BibTeX or a folder")
    imports = add_command(library, "import", import_library,
                          help="import a Zotero data directory, a .bib file or a folder; each document once "
                               "(run again: only what is new or changed)")
    imports.add_argument("path", metavar="PATH")
    imports.add_argument("--model-id", required=True)
    imports.add_argument("--no-progress", action="store_true")
    add_on_duplicate(imports)
    markdown = add_command(library, "markdown", export_markdown,
                           help="the papers and research sessions as Markdown notes (Obsidian or any editor)")
    markdown.add_argument("folder", metavar="FOLDER")
    markdown.add_argument("--model-id", required=True)
    markdown.add_argument("--session", action="append", dest="sessions", metavar="SESSION_ID",
                          help="only these research sessions (default: all)")
    markdown.add_argument("--archive", action="append", dest="archive_ids", type=int, metavar="ARCHIVE_ID",
                          help="only these papers (default: all)")
    bibtex = add_command(library, "bibtex", export_bibtex, help="the BibTeX of imported papers")
    bibtex.add_argument("archive_ids", nargs="*", type=int, metavar="ARCHIVE_ID",
                        help="these archives' (default: every imported paper of the model_id)")
    bibtex.add_argument("--model-id", required=True)


class _DocumentBar:
    """Documents imported, with tqdm's count, rate and ETA on stderr."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._bar = None

    def __call__(self, event: Progress) -> None:
        if not self.enabled:
            return
        from tqdm import tqdm

        if self._bar is None:
            self._bar = tqdm(total=event.total, desc="import", unit="doc", file=sys.stderr)
        self._bar.n = event.done
        self._bar.set_postfix_str(event.detail[:40], refresh=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def import_library(forest: MemoryForest, args: argparse.Namespace) -> int:
    bar = _DocumentBar(not args.no_progress and sys.stderr.isatty())
    try:
        report = forest.import_library(args.model_id, args.path, progress=bar, on_duplicate=args.on_duplicate)
    finally:
        bar.close()

    def text(r: dict[str, Any]) -> str:
        lines = [f"{r['kind']} {r['source']} into {r['model_id']}: {import_summary(r)}"]
        lines += [f"  imported: archive {i['archive_id']} {i['cite_as'] or i['title']}" for i in r["imported"]]
        lines += [f"  {line}" for line in import_details(r)]
        return "\n".join(lines) + "\n"

    return emit(args, report, text)


def export_markdown(forest: MemoryForest, args: argparse.Namespace) -> int:
    files = forest.export_markdown(args.model_id, args.folder, args.sessions, args.archive_ids)
    return emit(args, {"folder": args.folder, "files": files},
                lambda r: f"wrote {len(r['files'])} notes under {r['folder']} (open index.md)\n")


def export_bibtex(forest: MemoryForest, args: argparse.Namespace) -> int:
    sys.stdout.write(forest.bibtex(args.model_id, args.archive_ids or None))
    return 0
