"""The house rules of docs/architecture.md, checked over the app's import graph.

Each rule reads the source with `ast` (nothing is imported), so a rule broken
anywhere in `schedules/` fails here with the module and the import named.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parent.parent / "schedules"
# The scheduler's modules that other parts of the app may import (its __init__ says why).
# outcomes: the services end a run outside its scheduler (an operator's cancel) and
# record it as the scheduler would.
SCHEDULER_ENTRY_POINTS = {"process", "hints", "dispatch", "pipeline", "outcomes"}
# Modules outside web/ that exist to mount the web side (Django looks for
# template tags in the app's own templatetags package).
WEB_MOUNTS = {"schedules.urls", "schedules.routing", "schedules.templatetags.sillo"}
# The JSON API is a surface beside the dashboard; of the dashboard it shares only the
# permissions it checks, so both surfaces answer "who may do what" the same way.
API_FROM_WEB = {"schedules.web.access"}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (a name imported from a package resolves to its module)
    line: int
    in_function: bool
    commented: bool


def module_name(path: Path) -> str:
    parts = path.relative_to(APP.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    relative = Path(*name.split("."))
    return (APP.parent / relative).with_suffix(".py").exists() or (
        APP.parent / relative / "__init__.py"
    ).exists()


def resolve(source: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = source.split(".") if is_package else source.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(path: Path) -> list[Import]:
    source = module_name(path)
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    found: list[Import] = []

    def commented(node: ast.stmt) -> bool:
        """A comment on the import's line, or above the block of imports it stands in
        (isort's blank lines between sections included)."""
        if "#" in lines[node.lineno - 1]:
            return True
        above = node.lineno - 2
        while above >= 0 and (
            not lines[above].strip() or lines[above].strip().startswith(("from ", "import "))
        ):
            above -= 1
        return above >= 0 and lines[above].strip().startswith("#")

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue  # annotations only: never executed
            nested = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append(
                        Import(source, alias.name, child.lineno, in_function, commented(child))
                    )
            elif isinstance(child, ast.ImportFrom):
                base = resolve(source, path.name == "__init__.py", child)
                for alias in child.names:
                    full = f"{base}.{alias.name}"
                    target = full if base.startswith("schedules") and is_module(full) else base
                    found.append(
                        Import(source, target, child.lineno, in_function, commented(child))
                    )
            visit(child, nested)

    visit(tree, False)
    return found


ALL = [imp for path in sorted(APP.rglob("*.py")) for imp in imports_of(path)]


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_graph_is_read() -> None:
    sources = {imp.source for imp in ALL}
    assert {"schedules.models", "schedules.scheduler.engine", "schedules.web.views.live"} <= sources
    assert any(imp.target == "schedules.scheduler.claims" for imp in ALL)


def test_the_timing_engine_imports_neither_django_nor_the_rest_of_the_app() -> None:
    wrong = [
        imp
        for imp in ALL
        if within(imp.source, "schedules.timing")
        and (
            within(imp.target, "django")
            or (within(imp.target, "schedules") and not within(imp.target, "schedules.timing"))
        )
    ]
    assert wrong == []


def test_the_scheduler_imports_no_web_module() -> None:
    wrong = [
        imp
        for imp in ALL
        if within(imp.source, "schedules.scheduler") and within(imp.target, "schedules.web")
    ]
    assert wrong == []


def test_the_domain_imports_no_web_module() -> None:
    wrong = [
        imp
        for imp in ALL
        if not within(imp.source, "schedules.web")
        and not within(imp.source, "schedules.api")
        and imp.source not in WEB_MOUNTS
        and within(imp.target, "schedules.web")
    ]
    assert wrong == []


def test_the_api_takes_only_the_permissions_from_the_dashboard() -> None:
    wrong = [
        imp
        for imp in ALL
        if within(imp.source, "schedules.api")
        and within(imp.target, "schedules.web")
        and imp.target not in API_FROM_WEB
    ]
    assert wrong == []


def test_only_the_url_mount_imports_the_api() -> None:
    wrong = [
        imp
        for imp in ALL
        if not within(imp.source, "schedules.api")
        and imp.source not in WEB_MOUNTS
        and within(imp.target, "schedules.api")
    ]
    assert wrong == []


def test_outside_the_scheduler_only_its_entry_points_are_imported() -> None:
    wrong = [
        imp
        for imp in ALL
        if not within(imp.source, "schedules.scheduler")
        and within(imp.target, "schedules.scheduler")
        and imp.target != "schedules.scheduler"
        and imp.target.split(".")[2] not in SCHEDULER_ENTRY_POINTS
    ]
    assert wrong == []


def test_imports_inside_functions_say_why() -> None:
    silent = [imp for imp in ALL if imp.in_function and not imp.commented]
    assert silent == []


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in edges.get(node, ()):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(edges):
        if node not in index:
            connect(node)
    return found


def test_no_import_cycle_in_the_app() -> None:
    edges: dict[str, set[str]] = {}
    for imp in ALL:
        if not imp.in_function and within(imp.target, "schedules") and imp.target != "schedules":
            edges.setdefault(imp.source, set()).add(imp.target)
    assert cycles(edges) == []


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}}, []),
    ],
)
def test_the_cycle_finder_finds_cycles(edges, expected) -> None:
    assert cycles(edges) == expected
