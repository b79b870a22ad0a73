"""docs/architecture.md's "Where each thing lives" names every module in the row of its package, and
names no module that is not there: a module added, moved or removed fails this test until the
table follows."""
from __future__ import annotations

import re

from conftest import ROOT

MODULE = re.compile(r"`([\w/]+/)?(\w+\.py)`")


def table() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    return text.split("## Where each thing lives", 1)[1].split("\n## ", 1)[0]


def package_rows() -> dict[str, str]:
    """Each row of the table by the package (or folder) its first cell names, e.g. "forest/personal/"."""
    rows: dict[str, str] = {}
    for line in table().splitlines():
        cells = line.split("|")
        if len(cells) > 2:
            for folder in re.findall(r"`([\w/]+/)`", cells[1]):
                rows[folder] = line
    return rows


def modules() -> list[tuple[str, str]]:
    """(the package's row key, the module's path inside it) for every module of the engine, the workbench
    and testkit."""
    found = []
    for folder in ("forest", "workbench", "testkit"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if path.name == "__init__.py" or len(relative.parts) == 2 and folder == "forest":
                continue  # a package's own file; the base modules have rows of their own, checked below
            package = "/".join(relative.parts[:2]) + "/" if folder == "forest" else f"{folder}/"
            found.append((package, path.relative_to(ROOT / package).as_posix()))
    return found


def test_every_module_is_named_in_its_packages_row():
    rows = package_rows()
    missing = [f"{package}{module}" for package, module in modules()
               if package not in rows or module.rsplit("/", 1)[-1] not in rows[package]]
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_every_base_module_has_a_row():
    missing = [p.name for p in sorted((ROOT / "forest").glob("*.py"))
               if p.name != "__init__.py" and p.name not in table()]
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_every_module_the_table_names_exists():
    names_in_tree = {p.name for folder in ("forest", "workbench", "testkit") for p in (ROOT / folder).rglob("*.py")}
    named = {m.group(2) for m in MODULE.finditer(table())}
    assert named - names_in_tree - {"app.py"} == set()
