"""The layering the frame promises, read from the source: the planner does no I/O, nothing outside
it tells strategies apart by their class, and the planner sees one judge protocol (a remote model's
state, questions and answers live in `tracetrim.decision._remote`), and JSON is encoded and decoded in
`tracetrim._json` alone."""

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
REMOTE_ASKING = frozenset(
    {
        "tracetrim.decision._remote._observation",
        "tracetrim.decision._remote._batches",
        "tracetrim.decision._remote._answers",
    }
)
"""The remote adapter's own modules: the planner reaches them only through `as_judge`."""
JUDGE_CHOICE = Path("decision/_remote/_judge.py")
"""The one module that tells a judge from a remote model (`as_judge`)."""


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


def _type_tests(tree: ast.Module, classes: frozenset[str]) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("isinstance", "issubclass")
        and len(node.args) == 2
        and _class_names(node.args[1]) & classes
    ]


def _strategy_type_tests(tree: ast.Module) -> list[int]:
    return _type_tests(tree, STRATEGY_CLASSES)


def _imported(tree: ast.Module) -> set[str]:
    """Every module ``tree`` imports, with each name of a ``from`` import as a possible submodule."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return found


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


def test_the_planner_does_not_import_the_remote_asking() -> None:
    found = {
        str(path.relative_to(PACKAGE)): sorted(hits)
        for path, tree in _trees(PLANNER)
        if (hits := _imported(tree) & REMOTE_ASKING)
    }
    assert found == {}
    assert not any((PLANNER / name).exists() for name in ("_observation.py", "_batches.py", "_answers.py"))
    assert _imported(ast.parse("from tracetrim.decision._remote import _batches")) & REMOTE_ASKING


def test_only_as_judge_tells_a_judge_from_a_remote_model() -> None:
    found = {
        str(path.relative_to(PACKAGE)): lines
        for path, tree in _trees(PACKAGE)
        if path.relative_to(PACKAGE) != JUDGE_CHOICE
        and (lines := _type_tests(tree, frozenset({"HistoryJudge"})))
    }
    assert found == {}
    assert _type_tests(
        ast.parse((PACKAGE / JUDGE_CHOICE).read_text(encoding="utf-8")), frozenset({"HistoryJudge"})
    )


JSON_MODULES = frozenset({"json", "orjson"})
JSON_HOME = Path("_json.py")
"""The one module that encodes and decodes JSON (`tracetrim._json`)."""


def _json_calls(tree: ast.Module) -> list[int]:
    """Lines that call into ``json`` or ``orjson`` (``json.dumps(...)``, ``orjson.loads(...)``, ...)."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in JSON_MODULES
    ]


def test_json_is_encoded_and_decoded_in_one_module() -> None:
    found = {
        str(path.relative_to(PACKAGE)): lines
        for path, tree in _trees(PACKAGE)
        if path.relative_to(PACKAGE) != JSON_HOME and (lines := _json_calls(tree))
    }
    assert found == {}


def test_the_json_check_sees_what_it_looks_for() -> None:
    assert _json_calls(ast.parse("import json\njson.dumps({})\nx = 1\norjson.loads(b'1')\n")) == [2, 4]
    assert _json_calls(ast.parse((PACKAGE / JSON_HOME).read_text(encoding="utf-8")))
