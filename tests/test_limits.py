"""Every limit a caller can meet is named once, in forest/limits.py, with its reason; the faces
(serving, cli, compat, the workbench) define none of their own."""
from __future__ import annotations

import ast
import re

from conftest import ROOT

LIMIT = re.compile(r"(?:MAX_[A-Z0-9_]+|[A-Z0-9_]+_BUDGET)")
FACES = ["forest/serving", "forest/cli", "forest/compat", "workbench"]


def test_every_limit_has_its_reason_beside_it():
    lines = (ROOT / "forest" / "limits.py").read_text(encoding="utf-8").splitlines()
    unexplained = [line.split("=")[0].strip() for number, line in enumerate(lines)
                   if LIMIT.match(line) and "#" not in line and not lines[number - 1].startswith("#")]
    assert not unexplained, f"limits without a reason: {unexplained}"


def test_faces_define_no_limits_of_their_own():
    defined = []
    for folder in FACES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and LIMIT.fullmatch(t.id)
                                                        for t in node.targets):
                    defined.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not defined, f"limits defined in a face, not in forest/limits.py: {defined}"


def test_faces_bound_their_schemas_by_the_named_limits():
    # a tool schema's bound written as a number drifts from the engine's check it stands for
    bounds = {"max_length", "maxLength", "maximum", "le", "lt", "maxItems"}
    written = []
    for folder in FACES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.keyword) and node.arg in bounds and isinstance(node.value, ast.Constant) \
                        and isinstance(node.value.value, int) and node.value.value > 1:
                    written.append(f"{path.relative_to(ROOT)}:{node.value.lineno} {node.arg}={node.value.value}")
    assert not written, f"schema bounds written as numbers, not forest/limits.py names: {written}"


def test_one_top_k_limit_per_kind_of_hit():
    from forest import limits

    names = [name for name in vars(limits) if name.startswith("MAX_TOP_K")]
    assert sorted(names) == ["MAX_TOP_K_MEMORIES", "MAX_TOP_K_PASSAGES"]
