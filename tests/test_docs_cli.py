"""Every `forest ...` line in README.md and docs/ names a command the real parser has, and only
options that command takes; a line written out whole in a shell block also parses as it stands
(placeholders in capitals or [brackets] aside). A command or option renamed fails this test until
the docs follow."""
from __future__ import annotations

import argparse
import re
import shlex

import pytest

from conftest import ROOT
from forest.cli import build_parser

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
INLINE = re.compile(r"`(forest [^`]+)`")
SHELL_LINE = re.compile(r"\s*(?:\$ )?(?:[A-Z_]+=\S+ )*(forest [^#]*)")
SHELL_ENDS = {">", ">>", "|", "&", "&&", ";", "2>&1"}
WORD = re.compile(r"[a-z][a-z-]*")


def doc_lines() -> list[tuple[str, str, bool]]:
    """(where, the command line, written out whole in a shell block)."""
    found = []
    for doc in DOCS:
        block: str | None = None
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{doc.name}:{number}"
            if line.lstrip().startswith("```"):
                block = None if block is not None else line.strip()[3:]
            elif block is None:
                found += [(where, m.group(1), False) for m in INLINE.finditer(line)]
            elif block in ("", "bash", "sh", "shell", "console") and (m := SHELL_LINE.fullmatch(line)):
                found.append((where, m.group(1).strip().rstrip("\\").strip(), True))
    return found


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next((a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)), {})


def words(line: str) -> list[str]:
    tokens = shlex.split(line.replace("[", " [ ").replace("]", " ] "))[1:]
    out, depth = [], 0
    for token in tokens:
        if token in SHELL_ENDS:
            break
        depth += (token == "[") - (token == "]")
        if depth == 0 and token != "]":
            out.append(token)
    return out


def check(line: str, whole: bool) -> str | None:
    """What is wrong with a documented command line, or None."""
    argv = words(line)
    if not argv or not WORD.fullmatch(argv[0]):
        return None  # "forest = MemoryForest()", a table's row label: not a command line
    parser, used = build_parser(), []
    while (choices := subcommands(parser)) and argv[len(used):] and not argv[len(used)].startswith("-"):
        name = argv[len(used)]
        if name.isupper() or name == "...":
            return None  # "forest COMMAND --help"
        if name not in choices:
            return f"no command {' '.join(used + [name])!r}"
        parser, used = choices[name], used + [name]
    options = {o for a in parser._actions for o in a.option_strings}
    unknown = [t.split("=")[0] for t in argv if t.startswith("--") and t.split("=")[0] not in options]
    if unknown:
        return f"{' '.join(used)} takes no {unknown}"
    if whole and not any(t.isupper() or t in ("...", "…") for t in argv):
        try:
            build_parser().parse_args(argv)
        except SystemExit as exc:
            return f"does not parse (exit {exc.code})"
    return None


def test_docs_have_command_lines():
    assert len(doc_lines()) > 100


@pytest.mark.parametrize("where,line,whole", doc_lines(), ids=lambda v: v if isinstance(v, str) and ":" in v else "")
def test_documented_command_line_is_the_parsers(where, line, whole, capsys):
    problem = check(line, whole)
    capsys.readouterr()  # argparse's own message; the assertion says it in one line
    assert problem is None, f"{where}: `{line}`: {problem}"


BENCH_RUN = re.compile(r"python3? -m bench\.(\w+)|python3? bench/(\w+)\.py")


def test_every_bench_command_in_the_docs_runs_a_bench_module_that_exists():
    """Benches run as modules from the repository root (`python -m bench.x`): a line that still says
    `python bench/x.py`, or names a bench that is gone, fails here."""
    runs = [(f"{doc.name}:{number}", match) for doc in [*DOCS, ROOT / "Makefile"]
            for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1)
            for match in BENCH_RUN.finditer(line)]
    assert len(runs) > 50, runs  # the docs do name their benches
    as_scripts = [where for where, match in runs if match.group(2)]
    assert not as_scripts, f"say `python -m bench.x`, not `python bench/x.py`: {as_scripts}"
    missing = [(where, match.group(1)) for where, match in runs if not (ROOT / "bench" / f"{match.group(1)}.py").is_file()]
    assert not missing, missing
