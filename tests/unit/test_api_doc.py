"""docs/api.md runs as written: its shell lines (a real `grokray run`, the synthetic tiny
sweeps) and then every Python block, in order, in one namespace, in a fresh directory; and the
packages' public faces (`grokray.__all__`, `grokray_analysis.__all__`, lazily imported) are
exactly the names the page documents, including what docs/examples/restricted_loss.py imports."""

from __future__ import annotations

import ast
import json
import math
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import grokray
import grokray_analysis

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "api.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC, re.S)


def _table_names() -> tuple[set[str], set[str], set[str]]:
    """(grokray names, grokray_analysis names, grokray_analysis.ledger names) of the table."""
    names = re.findall(r"^\| `([\w.]+)\(", DOC, re.M)
    top = {n.split(".", 1)[1] for n in names if n.startswith("grokray.")}
    ana = {n.split(".", 1)[1] for n in names if n.startswith("grokray_analysis.")}
    led = {n.rsplit(".", 1)[1] for n in ana if n.startswith("ledger.")}
    return top, {n for n in ana if "." not in n}, led


def test_the_public_faces_are_the_documented_names():
    top, ana, led = _table_names()
    assert top == set(grokray.__all__)
    assert ana == set(grokray_analysis.__all__)
    from grokray_analysis import ledger as ledger_pkg

    assert led == {"ledger"} and led <= set(ledger_pkg.__all__)
    for n in grokray.__all__:
        assert callable(getattr(grokray, n)), n
    for n in grokray_analysis.__all__:
        assert callable(getattr(grokray_analysis, n)), n


def test_the_code_uses_only_documented_names():
    code = "\n".join(_blocks("python"))
    used = set(re.findall(r"\bgrokray\.(\w+)", code))
    assert used and used <= set(grokray.__all__), used - set(grokray.__all__)
    for mod, names in re.findall(r"^from (grokray\w*) import (.+)$", code, re.M):
        allowed = set(grokray.__all__ if mod == "grokray" else grokray_analysis.__all__)
        assert {x.strip() for x in names.split(",")} <= allowed, (mod, names)


def test_the_example_metric_imports_the_public_face():
    tree = ast.parse((ROOT / "docs" / "examples" / "restricted_loss.py").read_text())
    froms = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
             and n.module and n.module.startswith("grokray")]
    assert froms and all(n.module == "grokray" for n in froms)
    assert {a.name for n in froms for a in n.names} <= set(grokray.__all__)


def test_importing_the_public_faces_stays_light():
    code = ("import sys, json, grokray, grokray_analysis; print(json.dumps(sorted(m for m in "
            "('torch', 'pandas', 'numpy', 'matplotlib', 'scipy', 'ray') if m in sys.modules)))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == []


@pytest.fixture(scope="module")
def namespace(tmp_path_factory):
    """Every block of the page run in order in a fresh directory: the shell lines, then the
    Python blocks in one namespace (their stdout kept)."""
    import contextlib
    import io
    import os

    tmp = tmp_path_factory.mktemp("api_doc")
    for block in _blocks("bash"):
        for line in block.strip().splitlines():
            words = shlex.split(line.split(" #")[0])
            if words[0] == "grokray":
                cmd = [sys.executable, "-m", "grokray.cli", *words[1:]]
            else:  # python tests/fixtures/tiny.py DIR: the checkout's script
                assert words[:2] == ["python", "tests/fixtures/tiny.py"], line
                cmd = [sys.executable, str(ROOT / words[1]), *words[2:]]
            r = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, f"{line}\n{r.stdout}\n{r.stderr}"
    g: dict = {}
    out = io.StringIO()
    old = os.getcwd()
    os.chdir(tmp)
    try:
        with contextlib.redirect_stdout(out):
            for i, block in enumerate(_blocks("python")):
                exec(compile(block, f"docs/api.md python block {i}", "exec"), g)
    finally:
        os.chdir(old)
        from grokray.metrics.registry import unregister

        unregister("embed_norm")
    return tmp, g, out.getvalue()


def test_every_block_runs(namespace):
    tmp, g, out = namespace
    assert len(_blocks("python")) >= 9
    # the walk: a plot file and a fitted exponent with its interval
    assert (tmp / "scaling.png").stat().st_size > 5000
    fit = g["fit"]
    assert fit.fitted and fit.alpha_ci[0] < fit.alpha < fit.alpha_ci[1]
    assert math.isfinite(fit.alpha)
    assert re.search(r"alpha = [\d.]+, 95% interval \[[\d.]+, [\d.]+\]", out)
    # the real trial: its snapshots, model and a recomputed metric
    assert g["m"].config.group == "Z7" and g["m"].tags.split(",")[-1] == "end"
    assert g["c"]["metric_embed_norm"].notna().sum() > 0
    assert str(g["keys"].dtype) == "torch.bool" and g["keys"].any()
    # the statistics on the synthetic ablation and capacity sweeps
    assert g["t"].n_pairs > 0 and 0 <= g["t"].p_sign <= 1
    assert math.isfinite(g["pd_"].threshold)
    assert {r.arm for r in g["sp"].rows} >= {"forge", "mlp"}
    assert len(g["L"].columns["cpu"]) > 20
