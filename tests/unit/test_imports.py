"""Imports run one way: no module of the package imports, at any depth and from inside a
function too, a module that imports it back. (Imports under ``if TYPE_CHECKING:`` never run
and are left out; registries that load a module by name, such as ``subjects.SUBJECTS``, are
not imports.)"""
import ast
from pathlib import Path
from typing import Dict, List, Set

from tests.conftest import REPO

PACKAGE = REPO / "harnessgen"


def _modules() -> Dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _type_checking_only(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _imported(tree: ast.AST) -> List[ast.AST]:
    found, todo = [], [tree]
    while todo:
        node = todo.pop()
        if _type_checking_only(node):
            todo += node.orelse
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        todo += list(ast.iter_child_nodes(node))
    return found


def import_graph() -> Dict[str, Set[str]]:
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        deps = set()
        for node in _imported(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)] if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                submodules = [f"{module}.{alias.name}" for alias in node.names]
                # ``from . import render`` imports the submodule; its package is a parent of
                # every import of a submodule, which the graph leaves out everywhere
                names_only = [alias for alias in node.names if f"{module}.{alias.name}" not in modules]
                candidates = submodules + ([module] if names_only else [])
            else:
                candidates = [alias.name for alias in node.names]
            deps |= {c for c in candidates if c in modules and c != name}
        graph[name] = deps
    return graph


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    out: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_package_has_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_walk_sees_a_cycle_where_there_is_one():
    graph = import_graph()
    assert "harnessgen.campaign.runner" in graph["harnessgen.campaign.fuzz_run"] or "harnessgen.campaign" in graph["harnessgen.campaign.fuzz_run"]
    graph["harnessgen.inputs.layout"] = graph["harnessgen.inputs.layout"] | {"harnessgen.campaign.fuzz_run"}    # planted: a stage importing the driver
    assert any("harnessgen.inputs.layout" in c and "harnessgen.campaign.fuzz_run" in c for c in cycles(graph))


def test_lower_stages_never_import_the_driver_or_the_subjects():
    graph = import_graph()
    lower = ["harnessgen.inputs.layout", "harnessgen.harness.build", "harnessgen.cutout.extract", "harnessgen.triage.classify", "harnessgen.core.protocol",
             "harnessgen.core.runtime", "harnessgen.cuda.toolkit", "harnessgen.cuda.sanitizer"]
    upper = {"harnessgen.campaign.fuzz_run", "harnessgen.cli.commands", "harnessgen.campaign", "harnessgen.campaign.runner", "harnessgen.subjects"}

    def reach(start: str) -> Set[str]:
        seen, todo = set(), [start]
        while todo:
            for dep in graph[todo.pop()]:
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        return seen

    for module in lower:
        assert not (reach(module) & upper), module


# The stage packages, lowest first: a module imports only from its own package and from
# packages of lower layers (one package per layer where it can be: then the layer order is the
# pipeline's). ``(root)`` is the package's ``__init__`` (its version).
LAYERS = [
    ["(root)"],
    ["core", "dacecompat"],
    ["targets", "cuda", "engines"],
    ["plan", "zoo"],
    ["cutout"],
    ["inputs"],
    ["harness", "prove"],
    ["triage", "progen"],
    ["checks"],
    ["bugs", "recipe"],
    ["subjects"],
    ["gpukernels"],
    ["campaign", "pyfuzz"],
    ["api", "ci"],
    ["cli"],
    ["__main__"],
]


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(root)"


def upward_imports(graph: Dict[str, Set[str]]) -> List[str]:
    level = {package: i for i, layer in enumerate(LAYERS) for package in layer}
    found = []
    for module, deps in sorted(graph.items()):
        here = _package(module)
        for dep in sorted(deps):
            there = _package(dep)
            if there != here and level[there] >= level[here]:
                found.append(f"{module} -> {dep}")
    return found


def test_every_package_has_its_layer():
    packages = {_package(m) for m in import_graph()}
    assert packages == {p for layer in LAYERS for p in layer}


def test_no_stage_package_imports_from_its_own_layer_or_above():
    assert upward_imports(import_graph()) == []


def test_an_upward_import_is_seen():
    graph = import_graph()
    graph["harnessgen.inputs.layout"] = graph["harnessgen.inputs.layout"] | {"harnessgen.triage.classify"}
    assert upward_imports(graph) == ["harnessgen.inputs.layout -> harnessgen.triage.classify"]


def test_the_replay_worker_starts_without_dace():
    """``harness.replay --serve`` is started again after every input that kills it (each
    POST_CRASH replay): importing DaCe there costs seconds per replay, which once made a crash's
    triage five times slower. The worker needs the layout and the libraries, never DaCe."""
    import subprocess
    import sys

    probe = "import sys, harnessgen.harness.replay; print(sorted(m for m in ('dace', 'sympy') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout
