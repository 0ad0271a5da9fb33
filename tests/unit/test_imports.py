"""The package's import structure, read from the source with ast (nothing is imported).

Every import statement counts, at module level or inside a function, except those under
`if TYPE_CHECKING:` (annotations only).
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "grokray"


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(tree: ast.AST, modules: set[str]) -> set[str]:
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from pkg import sub` imports the submodule; `from mod import name`, the module
            subs = [f"{node.module}.{a.name}" for a in node.names]
            names = [n for n in subs if n in modules] or [node.module]
        else:
            names = []
        for n in names:
            if n in modules:
                out.add(n)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


GRAPH = {}
_MODULES = {_module(p): p for p in PKG.rglob("*.py")}
for _name, _path in _MODULES.items():
    GRAPH[_name] = _imports(ast.parse(_path.read_text()), set(_MODULES)) - {_name}


def _cycle() -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(GRAPH[m]):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state and (c := dfs(n)):
                return c
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(GRAPH):
        if m not in state and (c := dfs(m)):
            return c
    return None


def test_graph_sees_imports():
    # the walk finds real edges (so the checks below can fail)
    assert "grokray.config" in GRAPH["grokray.trial"]
    assert "grokray.families" in GRAPH["grokray.config"]


def test_no_import_cycles():
    cycle = _cycle()
    assert cycle is None, " -> ".join(cycle)


@pytest.mark.parametrize("name", sorted(m for m in GRAPH if m.startswith("grokray.metrics")))
def test_metrics_never_import_models(name):
    assert not {m for m in GRAPH[name] if m.startswith("grokray.models")}


def test_model_files_do_not_import_each_other():
    families = {"grokray.models.mlp", "grokray.models.forge", "grokray.models.transformer",
                "grokray.rfm.model"}
    for m in families:
        assert not GRAPH[m] & families, m


@pytest.mark.parametrize("name", sorted(m for m in GRAPH if m.startswith("grokray.trainer"))
                         + ["grokray.metrics.mechanism"])
def test_trainer_and_metrics_do_not_probe_or_branch_on_the_arch(name):
    tree = ast.parse(_MODULES[name].read_text())
    calls = {n.func.id for n in ast.walk(tree)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert not calls & {"hasattr", "getattr"}
    attrs = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert "arch" not in attrs  # the family comes from the registry (grokray.trial)
    for family in ("forge", "rfm", "transformer"):
        assert family not in attrs, family  # no family's own settings (cfg.forge...)


def _reach(name: str) -> set[str]:
    seen, todo = set(), [name]
    while todo:
        m = todo.pop()
        for n in GRAPH[m] - seen:
            seen.add(n)
            todo.append(n)
    return seen


@pytest.mark.parametrize("name", sorted(m for m in GRAPH if m.startswith("grokray.models")))
def test_families_name_their_training_without_importing_a_trainer(name):
    # a family names a training protocol (Family.train) that grokray.trial resolves
    assert not {m for m in _reach(name)
                if m.startswith(("grokray.trainer", "grokray.trial", "grokray.pack"))
                and m != "grokray.trialrun"}


def test_the_trial_never_reaches_the_sweep_service():
    # a trial runs in a worker: the driver's plans, identities and stores stay out of it
    for name in ("grokray.trial", "grokray.pack"):
        assert not {m for m in _reach(name) if m.startswith("grokray.sweep")}, name
