"""grokray as a user installs it: an sdist built from the checkout's sources, a wheel built from
that sdist (offline: `pip wheel --no-deps --no-build-isolation`), the wheel installed into a
fresh venv, and grokray used from an unrelated directory that has an `analysis/` package of its
own: the shipped specs listed, the ledger's dry run and a spec copied out. The smoke sweep run by
name on Ray from the wheel, then `grokray.load` in Python, the HTML report and the dashboard
(about a minute: an embedded Ray and six trials) is slow (--runslow); CI runs it
(`.ci/run`), the default run builds the wheel and checks what it carries.

The venv reuses this interpreter's installed dependencies (torch, Ray, ...) through a .pth file
naming their site-packages; a .pth file only adds its lines to sys.path (the .pth files inside
those folders are not run), so the editable grokray of the test's own venv, a finder hook
started by one of those files, does not reach the new venv: the test checks that every grokray
module it imports there comes from the wheel."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("grokray", "analysis", "sweeps", "pyproject.toml", "README.md")
"""what the build reads (the checkout's own build/ and egg-info leftovers are not copied)"""
USER = "MINE = 'the user analysis module'\n"


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    assert r.returncode == 0, f"{cmd}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("build")
    src = tmp / "src"
    src.mkdir()
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    for name in SOURCES:
        p = ROOT / name
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=skip)
        else:
            shutil.copy(p, src / name)
    dist = tmp / "dist"
    _run([sys.executable, "-c", "import sys; from setuptools import build_meta as b; "
          "print(b.build_sdist(sys.argv[1]))", str(dist)], cwd=src)
    (sdist,) = dist.glob("grokray-*.tar.gz")
    with tarfile.open(sdist) as t:
        names = t.getnames()
    assert any(n.endswith("/sweeps/cpu/scaling.yaml") for n in names)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
          "-w", str(dist), str(sdist)], cwd=tmp)
    (whl,) = dist.glob("grokray-*.whl")
    return whl


def test_the_wheel_carries_the_sweeps_the_ledger_and_the_assets(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {p.relative_to(ROOT / "sweeps").as_posix()
               for p in (ROOT / "sweeps").rglob("*.yaml")}
    assert {n.removeprefix("grokray_sweeps/") for n in names
            if n.startswith("grokray_sweeps/") and n.endswith(".yaml")} == shipped
    assert {"grokray_sweeps/smoke.yaml", "grokray_sweeps/paper/scaling.yaml",
            "grokray_sweeps/run/mlp_z97.yaml", "grokray_analysis/ledger/claims.yaml",
            "grokray_analysis/dashboard/static/app.css", "grokray/cost/table.json"} <= names
    assert not [n for n in names if n.split("/")[0] in ("sweeps", "analysis", "tests")]


@pytest.fixture(scope="module")
def user(wheel, tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    """(venv, the user's project dir, the environment) with the wheel installed."""
    tmp = tmp_path_factory.mktemp("user")
    env_dir = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)])
    py = env_dir / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps",
          "--no-index", str(wheel)])
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
                     ).stdout.strip())
    deps = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    (site / "zz_grokray_test_deps.pth").write_text("\n".join(deps) + "\n")
    proj = tmp / "project"
    (proj / "analysis").mkdir(parents=True)
    (proj / "analysis" / "__init__.py").write_text(USER)
    (proj / "analysis" / "load.py").write_text("raise ImportError('user analysis.load')\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "RAY_ADDRESS")}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env_dir, proj, env


def _grokray(user, *args: str) -> subprocess.CompletedProcess:
    env_dir, proj, env = user
    return _run([str(env_dir / "bin" / "grokray"), *args], cwd=proj, env=env)


def test_grokray_imports_from_the_wheel_not_the_checkout(user):
    env_dir, proj, env = user
    code = ("import grokray, grokray_analysis, grokray_sweeps, grokray.cli; "
            "from grokray import shipped; import analysis; "
            "print(grokray.__file__, grokray_analysis.__file__, shipped.root(), analysis.MINE, "
            "sep='\\n')")
    out = _run([str(env_dir / "bin" / "python"), "-c", code], cwd=proj, env=env).stdout
    *paths, mine = out.splitlines()
    assert mine == "the user analysis module"
    for p in paths:
        assert Path(p).resolve().is_relative_to(env_dir.resolve()), p


def test_specs_lists_the_shipped_files_with_their_cost(user):
    rows = {r["name"]: r for r in json.loads(_grokray(user, "specs", "--json").stdout)}
    env_dir = user[0].resolve()
    assert {"smoke", "cpu/scaling", "paper/scaling", "run/mlp_z97"} <= set(rows)
    assert rows["smoke"]["kind"] == "sweep spec" and rows["run/mlp_z97"]["kind"] == "run config"
    assert rows["smoke"]["description"].startswith("tiny groups, MLP vs FORGE")
    assert rows["smoke"]["trials"] == 6 and rows["smoke"]["expected_wall_s"] > 0
    assert rows["paper/scaling"]["expected_cpu_s"] > 100 * rows["smoke"]["expected_cpu_s"]
    assert all(Path(r["path"]).resolve().is_relative_to(env_dir) for r in rows.values())


def test_a_shipped_spec_is_copied_out_to_edit(user):
    env_dir, proj, _ = user
    out = _grokray(user, "specs", "copy", "cpu/rfm", "mine").stdout
    assert (proj / "mine" / "rfm.yaml").read_text() == (ROOT / "sweeps/cpu/rfm.yaml").read_text()
    assert "grokray sweep mine/rfm.yaml" in out


@pytest.mark.ray
@pytest.mark.slow
def test_smoke_by_name_then_load_report_and_dashboard(user, dashboard_proc):
    env_dir, proj, env = user
    r = _grokray(user, "sweep", "smoke", "--out", "results", "--plain", "--num-cpus", "2")
    assert "sweep smoke: 6 trials written to results/smoke" in r.stdout
    T = pd.concat(pd.read_parquet(p) for p in (proj / "results/smoke/trials").glob("*.parquet"))
    assert len(T) == 12 and set(T["group"]) == {"Z11", "S3", "D4"}
    assert (T["status"] != "failed").all()

    code = ("import grokray, analysis; s = grokray.load('results/smoke'); "
            "print(len(s.trials), sorted(s.trials['arch'].unique()), analysis.MINE)")
    out = _run([str(env_dir / "bin" / "python"), "-c", code], cwd=proj, env=env).stdout
    assert out.strip() == "12 ['forge', 'mlp'] the user analysis module"

    _grokray(user, "analyze", "report", "results/smoke", "--html", "--bootstrap", "50")
    page = (proj / "results/smoke/report/report.html").read_text()
    assert "grokray analysis report: smoke" in page and "Plotly" in page

    proc, url, _ = dashboard_proc.start(["results/smoke"], cwd=str(proj), env=env,
                                        python=str(env_dir / "bin" / "python"))
    try:
        u = urlsplit(url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        conn.request("GET", "/")
        resp = conn.getresponse()
        assert resp.status == 200 and "grokray" in resp.read().decode().lower()
        conn.request("GET", "/static/app.css")
        resp = conn.getresponse()
        assert resp.status == 200 and len(resp.read()) > 100
    finally:
        dashboard_proc.stop(proc)


def test_reproduce_dry_run_finds_its_specs_and_claims(user):
    out = _grokray(user, "reproduce", "--scale", "cpu", "--dry-run", "--out", "L").stdout
    for name in ("scaling_cpu", "nonabelian_cpu", "rfm_cpu"):
        assert f"-> L/{name}" in out
    assert "estimated wall time left (cost model, one Ray session)" in out

