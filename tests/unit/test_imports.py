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
                candidates = [module] + [f"{module}.{alias.name}" for alias in node.names]
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
    assert "harnessgen.runner" in graph["harnessgen.fuzz"] or "harnessgen.campaign" in graph["harnessgen.fuzz"]
    graph["harnessgen.layout"] = graph["harnessgen.layout"] | {"harnessgen.fuzz"}    # planted: a stage importing the driver
    assert any("harnessgen.layout" in c and "harnessgen.fuzz" in c for c in cycles(graph))


def test_lower_stages_never_import_the_driver_or_the_subjects():
    graph = import_graph()
    lower = ["harnessgen.layout", "harnessgen.build", "harnessgen.cutout", "harnessgen.triage", "harnessgen.protocol",
             "harnessgen.runtime", "harnessgen.cuda.toolkit", "harnessgen.cuda.sanitizer"]
    upper = {"harnessgen.fuzz", "harnessgen.cli", "harnessgen.campaign", "harnessgen.runner", "harnessgen.subjects"}

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
