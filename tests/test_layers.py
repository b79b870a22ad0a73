"""The engine's house rules, read from the source: layers import only downward, no module imports
itself back through others, and forest/ stays a few packages rather than a heap of modules.

Every import counts, wherever it sits (module level, inside a function, under TYPE_CHECKING), since
a deferred import is still a dependency a reader has to follow.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import networkx as nx

FOREST = Path(__file__).resolve().parents[1] / "forest"

# Lowest first; a module may import its own layer and any layer below it.
LAYERS = [
    ["forest.errors", "forest.config", "forest.records", "forest.text", "forest.markdown_safety", "forest.redaction",
     "forest.references", "forest.limits", "forest.validation"],
    ["forest.storage"],
    ["forest.models"],
    ["forest.ingest", "forest.library"],
    ["forest.tree"],
    ["forest.recall"],
    ["forest.research", "forest.personal"],
    ["forest.views"],
    ["forest.doctor", "forest.engine_parts", "forest.service"],
    ["forest.compat"],   # other services' interfaces (mem0) over the service
    ["forest.serving", "forest.cli"],
]


def layer_of(module: str) -> int | None:
    if module == "forest":  # the package's facade (MemoryForest, load_settings) sits above every layer
        return len(LAYERS)
    for index, group in enumerate(LAYERS):
        if any(module == prefix or module.startswith(prefix + ".") for prefix in group):
            return index
    return None


def module_name(path: Path) -> str:
    parts = list(path.relative_to(FOREST.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> list[tuple[str, int]]:
    """(imported forest module, line) for every import in the file; `from package import name`
    counts as importing the submodule when `name` is one."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names if alias.name.split(".")[0] == "forest"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] == "forest":
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.append((submodule if submodule in modules else node.module, node.lineno))
    return found


def import_graph() -> tuple[nx.DiGraph, dict[tuple[str, str], int]]:
    paths = {module_name(path): path for path in sorted(FOREST.rglob("*.py"))}
    graph, lines = nx.DiGraph(), {}
    graph.add_nodes_from(paths)
    for module, path in paths.items():
        for target, line in imports_of(path, set(paths)):
            if target != module and target in paths:
                graph.add_edge(module, target)
                lines.setdefault((module, target), line)
    return graph, lines


def test_every_module_has_a_layer():
    graph, _ = import_graph()
    assert [module for module in graph if layer_of(module) is None] == []


def test_no_import_goes_up_a_layer():
    graph, lines = import_graph()
    upward = [f"{source} -> {target} (line {lines[source, target]})" for source, target in graph.edges
              if layer_of(target) > layer_of(source)]
    assert upward == []


def test_no_import_cycle():
    graph, _ = import_graph()
    # A package's __init__ may name its own modules; a cycle through it is still a cycle.
    cycles = [" -> ".join(cycle) for cycle in nx.simple_cycles(graph)]
    assert cycles == []


def test_the_engine_is_a_few_packages_not_a_heap_of_modules():
    modules = [path for path in FOREST.glob("*.py") if path.name != "__init__.py"]
    packages = [path for path in FOREST.iterdir() if (path / "__init__.py").is_file()]
    assert len(modules) <= 12, sorted(path.name for path in modules)
    assert len(packages) >= 4


def test_the_checks_see_a_real_violation(tmp_path):
    """The walk finds imports inside functions and under `from package import module`."""
    source = tmp_path / "probe.py"
    source.write_text("def late():\n    from forest import service\n    import forest.cli\n")
    assert imports_of(source, {"forest.service"}) == [("forest.service", 2), ("forest.cli", 3)]
    assert layer_of("forest.service") > layer_of("forest.storage.sql.database")
    assert layer_of("forest") > layer_of("forest.cli")


def test_doctor_and_the_serving_tools_do_not_load_the_tree_builder():
    """doctor re-embeds with the leaves' helpers and tools report build Progress (a record): neither
    needs the build, its planner (networkx) or the recursive chunker (langchain) to import."""
    probe = ("import json, sys, forest.doctor, forest.serving.tools; print(json.dumps(sorted(m for m in "
             "('forest.tree.build', 'networkx', 'langchain_text_splitters') if m in sys.modules)))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                            cwd=FOREST.parent)
    assert json.loads(loaded.stdout) == []


def test_a_lower_layer_sees_the_service_through_a_typed_protocol():
    """The agent loop (recall) calls back into MemoryForest at run time, which no import shows: it
    holds a ForestReader, and the service must answer each of its calls with the same parameters."""
    import inspect
    import typing

    from forest.recall.agent import AgentLoop, ForestReader
    from forest.service import MemoryForest

    assert typing.get_type_hints(AgentLoop.__init__)["forest"] is ForestReader
    for name, member in vars(ForestReader).items():
        if name.startswith("_") or not callable(member):
            continue
        wanted = list(inspect.signature(member).parameters)
        assert list(inspect.signature(getattr(MemoryForest, name)).parameters) == wanted, name
    assert isinstance(inspect.getattr_static(MemoryForest, "drill_threshold"), property)
