"""analysis/ reads the Parquet contract only: no training, config or sweep code, no torch or Ray,
neither at module level nor inside a function (read with ast), nor once a ledger has run."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ANALYSIS = sorted((ROOT / "analysis").rglob("*.py"))
SHARED = {"grokray", "grokray.errors", "grokray.reader", "grokray.schema"}
"""the grokray modules analysis may import: the shared contract (no torch, no Ray)"""
TRAINING = ("torch", "ray", "grokray.config", "grokray.sweep", "grokray.models",
            "grokray.trainer", "grokray.trial", "grokray.metrics", "grokray.optim",
            "grokray.tasks", "grokray.groups", "grokray.commands")


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import statement, wherever it stands, except under
    `if TYPE_CHECKING:` (annotations only)."""
    out: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.append((node.lineno, "." * node.level + (node.module or "")))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return out


IMPORTS = {p.relative_to(ROOT).as_posix(): _imports(p) for p in ANALYSIS}


def test_the_walk_sees_imports_inside_functions():
    measures = dict((m, n) for n, m in IMPORTS["analysis/ledger/measures.py"])
    # imported inside functions
    assert "grokray_analysis.survival" in measures and "grokray_analysis.speedup" in measures
    assert ("grokray.reader" in {m for _, m in IMPORTS["analysis/ledger/sweeps.py"]})
    assert sum(len(v) for v in IMPORTS.values()) > 150


@pytest.mark.parametrize("path", sorted(IMPORTS))
def test_analysis_imports_only_the_shared_contract_of_grokray(path):
    bad = [f"{path}:{line}: {mod}" for line, mod in IMPORTS[path]
           if mod.split(".")[0] in ("torch", "ray")
           or (mod.split(".")[0] == "grokray" and mod not in SHARED)]
    assert not bad, "; ".join(bad)


def test_analysis_imports_no_module_by_name():
    for p in ANALYSIS:
        text = p.read_text()
        assert "import_module(" not in text and "__import__(" not in text, p


def test_a_ledger_run_loads_no_training_code(tmp_path, tiny):
    # a fresh interpreter computes a ledger from fixture sweeps (a plan.json naming their rows,
    # so the current-rows path runs too) and writes it; then nothing of training is loaded
    tiny.write_ablation(tmp_path / "fourier_sign_cpu")
    d = tiny.write_capacity(tmp_path / "capacity_cpu")
    from grokray_analysis.load import load

    T = load([d]).trials
    (d / "plan.json").write_text(json.dumps({
        "sweep": "capacity_cpu", "config_hashes": sorted(set(T["config_hash"])),
        "seeds": sorted(set(T["seed"].astype(int)))}))
    code = (
        "import sys, json; from grokray_analysis.ledger import ledger, write_ledger;"
        f"L = ledger({str(tmp_path)!r}); write_ledger(L, {str(tmp_path / 'w')!r});"
        f"bad = [m for m in sys.modules if m.startswith({TRAINING!r})];"
        "print(json.dumps({'bad': bad, 'v': {r.claim.key: r.verdict for r in L.columns['cpu']}}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["bad"] == []
    assert res["v"]["forge.eff_modes"] == "reproduced"  # measures ran (sign test, bootstrap)
    assert res["v"]["forge.capacity.threshold"] == "same direction, different size"
    assert (tmp_path / "w" / "ledger.json").exists()
