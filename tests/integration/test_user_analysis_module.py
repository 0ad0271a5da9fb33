"""A researcher's own `analysis` module (a folder in their project, or an `analysis.py` on their
path) neither shadows grokray's analysis package (installed as `grokray_analysis`) nor is
shadowed by it: `grokray.load`, `grokray analyze`, `grokray dashboard` and `grokray reproduce
--dry-run` all work from such a directory, and the user's module stays theirs."""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
from urllib.parse import urlsplit

import pytest

USER = "MINE = 'the user analysis module'\n"


@pytest.fixture(params=["package", "module"])
def project(request, tmp_path, sweepdir):
    """A user's project dir (the working directory) with its own `analysis` package or
    `analysis.py`, a second `analysis.py` on PYTHONPATH, and a sweep dir inside."""
    proj = tmp_path / "project"
    proj.mkdir()
    if request.param == "package":
        (proj / "analysis").mkdir()
        (proj / "analysis" / "__init__.py").write_text(USER)
        (proj / "analysis" / "load.py").write_text("raise ImportError('user analysis.load')\n")
    else:
        (proj / "analysis.py").write_text(USER)
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "analysis.py").write_text(USER)
    out = proj / "results" / "syn"
    sweepdir.write_sweep(str(out), trials=8, seeds=2, evals=10)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(extra), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return proj, out, env


def _run(proj, env, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=proj, env=env, capture_output=True,
                          text=True, timeout=300)


def test_grokray_load_and_the_users_module_both_work(project):
    proj, out, env = project
    code = ("import analysis, grokray; s = grokray.load('results/syn');"
            "print(analysis.MINE); print(len(s.trials), s.trials['seed'].nunique())")
    r = _run(proj, env, "-c", code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["the user analysis module", "16 2"]


def test_analyze_from_a_project_with_its_own_analysis(project):
    proj, out, env = project
    r = _run(proj, env, "-m", "grokray.cli", "analyze", "speedup", "results/syn",
             "--baseline", "mlp")
    assert r.returncode == 0, r.stderr
    assert "forge" in r.stdout and "speedup" in r.stdout.lower()


def test_reproduce_dry_run_from_a_project_with_its_own_analysis(project):
    proj, out, env = project
    r = _run(proj, env, "-m", "grokray.cli", "reproduce", "--scale", "cpu", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "scaling_cpu" in r.stdout


def test_dashboard_from_a_project_with_its_own_analysis(project, dashboard_proc):
    proj, out, env = project
    proc, url, _ = dashboard_proc.start([str(out)], cwd=str(proj), env=env)
    try:
        u = urlsplit(url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        conn.request("GET", "/")
        r = conn.getresponse()
        page = r.read().decode()
        assert r.status == 200 and "grokray" in page.lower()
        conn.request("GET", "/static/app.css")
        r = conn.getresponse()
        assert r.status == 200 and len(r.read()) > 100
    finally:
        dashboard_proc.stop(proc)
