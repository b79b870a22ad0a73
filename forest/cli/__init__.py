"""`forest` command: a thin face over MemoryForest. JSON on stdout with --json; errors are one
message on stderr and a non-zero exit. Each module here registers one group of commands next to
the code that runs them; nothing heavier than argparse loads before the arguments are parsed."""
from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from forest.cli import archives, library, maintenance, memory, personal, postgres, recall, server
from forest.cli.common import EXIT_ERROR, CliParser, common_options
from forest.config import load_settings
from forest.errors import ForestError

# The order of `forest --help`.
COMMAND_GROUPS = (archives, library, recall, memory, personal, server, maintenance, postgres)


def build_parser() -> argparse.ArgumentParser:
    parser = CliParser(prog="forest", description="Memory Forest: documents as memory trees for agents.",
                       parents=[common_options()])
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=CliParser)
    for group in COMMAND_GROUPS:
        group.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.json = getattr(args, "json", False)
    logging.basicConfig(level=logging.WARNING, format="forest: %(levelname)s: %(message)s")
    try:
        settings = load_settings({"data_dir": getattr(args, "data_dir", None)})
        if "run_without_engine" in args:
            return args.run_without_engine(settings, args)
        from forest.service import MemoryForest  # the engine loads after argument parsing

        # A command answers vector reads from snapshots when it owns the store (no chromadb
        # import); a long-running owner (`forest serve`) sets vector_snapshots=False.
        forest = MemoryForest(settings, vector_snapshots=getattr(args, "vector_snapshots", True))
        try:
            return args.run(forest, args)
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
