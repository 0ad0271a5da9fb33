"""The tests share their helpers one way: the package tests/helpers, imported as
`tests.helpers.<module>` (pyproject.toml's pytest `pythonpath` puts the repository root on the
path). No test edits sys.path, and none imports a module of tests/ by its bare file name (which
works only through pytest's insertion of the test's own folder into sys.path)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
FILES = sorted(TESTS.rglob("*.py"))


def _calls_on_sys_path(tree: ast.AST) -> list[int]:
    """Lines calling sys.path.insert/append/extend (code only: a script in a string is text)."""
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("insert", "append", "extend")
                and ast.unparse(node.func.value) == "sys.path"):
            out.append(node.lineno)
    return out


def _bare_test_imports(tree: ast.AST, local: set[str]) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return [n for n in names if n.split(".")[0] in local]


def test_the_scan_sees_the_tests():
    names = {p.relative_to(TESTS).as_posix() for p in FILES}
    assert {"conftest.py", "helpers/sweeps.py", "unit/test_test_layout.py"} <= names
    assert len(FILES) > 100


def test_no_test_edits_sys_path_or_imports_a_test_module_by_its_file_name():
    local = {p.stem for p in FILES if p.stem != "__init__"} - {"tests"}
    bad = []
    for p in FILES:
        tree = ast.parse(p.read_text(), str(p))
        rel = p.relative_to(ROOT)
        bad += [f"{rel}:{n}: sys.path edited" for n in _calls_on_sys_path(tree)]
        bad += [f"{rel}: imports {m} (use tests.helpers.<module>)"
                for m in _bare_test_imports(tree, local)]
    assert bad == []


def test_the_checks_see_what_they_look_for():
    tree = ast.parse("import sys\nsys.path.insert(0, 'x')\nfrom _sweep_helpers import a\n"
                     "import toy_groups\nfrom tests.helpers import sweeps\n"
                     "CODE = 'import sys; sys.path.insert(0, 1)'\n")
    assert _calls_on_sys_path(tree) == [2]
    assert _bare_test_imports(tree, {"_sweep_helpers", "toy_groups", "sweeps"}) == [
        "_sweep_helpers", "toy_groups"]
