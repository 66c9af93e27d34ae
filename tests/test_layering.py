"""The layering the frame promises, read from the source: the planner does no I/O, and nothing outside
it tells strategies apart by their class."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tracetrim"
PLANNER = PACKAGE / "compactor"

# Modules that reach the network, the environment or files; the planner gets all of that from its edges.
IO_MODULES = frozenset(
    {"httpx", "os", "pathlib", "io", "shutil", "tempfile", "aiofiles", "dotenv", "socket", "sqlite3", "redis"}
)
STRATEGY_CLASSES = frozenset({"Compactor", "OffloadStrategy", "Strategy"})


def _trees(root: Path) -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text(encoding="utf-8"))) for path in sorted(root.rglob("*.py"))]


def _io_uses(tree: ast.Module) -> list[str]:
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in IO_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            if node.module.split(".")[0] in IO_MODULES:
                found.append(node.module)
        elif isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv"):
            found.append(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
            found.append("open()")
    return found


def _class_names(node: ast.expr) -> set[str]:
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    return {
        item.id if isinstance(item, ast.Name) else item.attr
        for item in items
        if isinstance(item, (ast.Name, ast.Attribute))
    }


def _strategy_type_tests(tree: ast.Module) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("isinstance", "issubclass")
        and len(node.args) == 2
        and _class_names(node.args[1]) & STRATEGY_CLASSES
    ]


def test_the_planner_does_no_io() -> None:
    trees = _trees(PLANNER)
    assert len(trees) > 20  # the walk found the planner's modules, _offload/ included
    uses = {str(path.relative_to(PACKAGE)): found for path, tree in trees if (found := _io_uses(tree))}
    assert uses == {}


def test_the_io_check_sees_what_it_looks_for() -> None:
    source = "import os\nfrom httpx import AsyncClient\nx = os.environ\nopen('f')\n"
    assert _io_uses(ast.parse(source)) == ["os", "httpx", "environ", "open()"]


def test_nothing_outside_the_planner_tests_a_strategys_class() -> None:
    found = {
        str(path.relative_to(PACKAGE)): lines
        for path, tree in _trees(PACKAGE)
        if PLANNER not in path.parents and (lines := _strategy_type_tests(tree))
    }
    assert found == {}
    assert _strategy_type_tests(ast.parse("isinstance(s, (tt.Compactor, int))")) == [1]
