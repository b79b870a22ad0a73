"""A comparison of papers (forest.recall.compare) as a table to export or draw: CSV for a
spreadsheet, Markdown for notes and the workbench. A row per paper, named as it is cited when its
library says how ("Buck et al. (2018)"), else by its archive's name; a column per question.

The text comes from documents and from whoever typed the questions, so both formats are made safe:
in CSV a field that a spreadsheet would read as a formula (starting with = + - @, a tab or a
carriage return) gets a leading apostrophe; in Markdown a cell's backslashes and pipes are escaped
and its line breaks become spaces (neither may end the cell), and it goes through safe_markdown
(no image, remote link or raw HTML)."""
from __future__ import annotations

import csv
import io
from collections.abc import Callable

from forest.recall.compare import FOUND_THRESHOLD, NOT_FOUND, Cell, Comparison
from forest.markdown_safety import safe_markdown

# FOUND_THRESHOLD: what a face offers as the threshold before the researcher moves it.
__all__ = ["FOUND_THRESHOLD", "comparison_csv", "comparison_markdown"]
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def comparison_csv(comparison: Comparison) -> str:
    """A row per paper: its name, then for each question the quoted sentences (or "not found")
    and where they are ("p. 7, §4.2 (node 42)")."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = ["paper"]
    for question in comparison.questions:
        header += [question, f"{question} (source)"]
    writer.writerow([_csv_field(h) for h in header])
    for paper in comparison.papers:
        row = [paper.label]
        for cell in comparison.row(paper.archive_id):
            row += [cell.text, _source(cell)]
        writer.writerow([_csv_field(field) for field in row])
    return out.getvalue()


def comparison_markdown(comparison: Comparison, link: Callable[[int], str] | None = None) -> str:
    """A Markdown table: each cell's sentences and, in italics, their page and section, a link to
    `link(node_id)` when given (the workbench's citations open the page)."""
    lines = ["| Paper | " + " | ".join(_md_cell(q) for q in comparison.questions) + " |",
             "| --- |" + " --- |" * len(comparison.questions)]
    for paper in comparison.papers:
        cells = [_md_answer(cell, link) for cell in comparison.row(paper.archive_id)]
        lines.append(f"| {_md_cell(paper.label)} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"_{NOT_FOUND}_: no passage of the paper clears the relevance threshold "
                 f"({comparison.threshold:g}).")
    return "\n".join(lines) + "\n"


def _source(cell: Cell) -> str:
    if not cell.found:
        return ""
    return f"{cell.citation} (node {cell.node_id})" if cell.citation else f"node {cell.node_id}"


def _csv_field(text: str) -> str:
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def _md_cell(text: str) -> str:
    flat = " ".join(text.replace("\\", "\\\\").split())
    return safe_markdown(flat).replace("|", "\\|")


def _md_answer(cell: Cell, link: Callable[[int], str] | None) -> str:
    if not cell.found:
        return f"_{NOT_FOUND}_"
    where = _md_cell((cell.citation or f"node {cell.node_id}").replace("[", "(").replace("]", ")"))
    cited = f"[{where}]({link(cell.node_id)})" if link else where
    return f"{_md_cell(cell.text)} _({cited})_"
