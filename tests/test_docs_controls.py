"""The docs name only controls the workbench has. In README.md's tour of the workbench and in
docs/workbench.md, a control (a button, a toggle, a tab, a page of the navigation...) is written in
bold, and nothing else is: every bold phrase there must be the label of a control some page draws,
read from the pages' source. A button renamed or removed fails this test until the docs follow."""
from __future__ import annotations

import ast
import re

from conftest import ROOT

DOCS = {"README.md": ("### The workbench", "### The command line"), "docs/workbench.md": ("", "## What changed")}
# The calls whose first argument is the label a person sees (or, for tabs and navigation, a list of them).
LABELLED = {"button", "form_submit_button", "download_button", "toggle", "popover", "checkbox", "link_button",
            "expander", "radio", "selectbox", "multiselect", "text_input", "text_area", "slider", "file_uploader",
            "segmented_control", "tabs", "dialog", "number_input", "confirmed"}
BOLD = re.compile(r"\*\*([^*]+)\*\*")
JS_BUTTON = re.compile(r"<button[^>]*>([^<]+)</button>")   # the tree drawing's own bar (forest_tree.js)


def labels() -> list[re.Pattern[str]]:
    """Every control label the app and its pages draw, as a pattern (an f-string's fields match any text)."""
    found: list[re.Pattern[str]] = []
    for script in [ROOT / "app.py", *sorted((ROOT / "workbench").glob("*.py"))]:
        tree = ast.parse(script.read_text(encoding="utf-8"))
        constants = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
                     for t in node.targets if isinstance(t, ast.Name)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in LABELLED:
                found += [p for arg in node.args[:2] for p in _patterns(arg, constants)]
            if isinstance(node, ast.Tuple) and len(node.elts) == 4 and all(isinstance(e, ast.Constant) for e in node.elts):
                found += [re.compile(re.escape(node.elts[1].value))]   # app.py's PAGES: the navigation's titles
    for script in sorted((ROOT / "workbench").glob("*.js")):
        found += [re.compile(re.escape(label)) for label in JS_BUTTON.findall(script.read_text(encoding="utf-8"))]
    return found


def _patterns(node: ast.AST, constants: dict[str, ast.AST]) -> list[re.Pattern[str]]:
    if isinstance(node, ast.Name) and node.id in constants:
        return _patterns(constants[node.id], constants)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [re.compile(re.escape(node.value))]
    if isinstance(node, ast.JoinedStr):
        return [re.compile("".join(re.escape(v.value) if isinstance(v, ast.Constant) else ".+" for v in node.values))]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [p for element in node.elts for p in _patterns(element, constants)]
    return []


def named_in_docs() -> list[tuple[str, str]]:
    named = []
    for doc, (start, end) in DOCS.items():
        text = (ROOT / doc).read_text(encoding="utf-8")
        text = text[text.index(start) if start else 0: text.index(end) if end else len(text)]
        named += [(doc, " ".join(phrase.split())) for phrase in BOLD.findall(text)]
    return named


def test_every_control_the_docs_name_is_one_the_workbench_draws():
    known = labels()
    named = named_in_docs()
    assert len(named) > 20   # the docs do name the controls
    missing = [(doc, phrase) for doc, phrase in named if not any(p.fullmatch(phrase) for p in known)]
    assert missing == []


def test_the_check_finds_a_control_that_is_not_there():
    known = labels()
    assert any(p.fullmatch("Step through") for p in known) and any(p.fullmatch("Delete archive 3") for p in known)
    assert not any(p.fullmatch("Explore it") for p in known)   # the step-through's button before it was renamed
