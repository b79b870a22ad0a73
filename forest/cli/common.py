"""What every `forest` command shares: the one-line usage error, the options accepted before or
after the command name, how a command registers, and how it prints (text, or JSON with --json)."""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from forest.service import MemoryForest

EXIT_ERROR = 1
EXIT_USAGE = 2

Command = Callable[["MemoryForest", argparse.Namespace], int]


class CliParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not argparse's usage dump
        sys.stderr.write(f"forest: {message} (see forest --help)\n")
        sys.exit(EXIT_USAGE)


@cache  # built when the parser is, not at import (a parser's help formatter imports shutil)
def common_options() -> argparse.ArgumentParser:
    """The options accepted before and after any command name."""
    common = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: a flag given before the subcommand is not reset by the subcommand's own default.
    common.add_argument("--data-dir", default=argparse.SUPPRESS,
                        help="store location (default: FOREST_DATA_DIR or data/store)")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON on stdout")
    return common


def add_command(subparsers: argparse._SubParsersAction, name: str, run: Command | None, help: str,
                **options: Any) -> argparse.ArgumentParser:
    """A subcommand taking the common options; `run(forest, args)` carries it out (None for a
    command that only groups subcommands of its own)."""
    parser = subparsers.add_parser(name, parents=[common_options()], help=help, **options)
    if run is not None:
        parser.set_defaults(run=run)
    return parser


def add_on_duplicate(parser: argparse.ArgumentParser) -> None:
    """--on-duplicate: what to do with a paper the model_id's library holds already."""
    parser.add_argument("--on-duplicate", choices=("skip", "replace", "keep"), default="skip",
                        help="a paper already in the library (the same file, text, DOI, arXiv id, or title with "
                             "first author and year): skip it (default), replace its archive, or keep both")


def add_group(subparsers: argparse._SubParsersAction, name: str, help: str) -> argparse._SubParsersAction:
    """A command made of subcommands (`forest memory search ...`)."""
    group = add_command(subparsers, name, None, help)
    return group.add_subparsers(dest=f"{name}_command", required=True, parser_class=CliParser)


def emit(args: argparse.Namespace, data: Any, as_text: Callable[[Any], str]) -> int:
    if args.json:
        json.dump(data, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(as_text(data))
    return 0


class ProgressBar:
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

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.close()
