"""`grokray dashboard` in a real browser (Debian's chromium driven by Playwright): the tables and
charts show the Parquet's numbers, rows written while the page is open appear without a reload,
no console errors; the HTML report renders offline. Screenshots go to $GROKRAY_SCREENSHOTS (the
PNGs in docs/img/ come from `GROKRAY_SCREENSHOTS=docs/img pytest this file`) or a temp dir.

Skipped, with the reason, only where no Chromium binary or no Playwright is installed.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from grokray_analysis.curves import curve_bands
from grokray_analysis.load import load

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium found (Debian: apt-get install -y chromium; .ci/run installs it)")


@pytest.fixture(scope="module")
def browser():
    exe = _browser()
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright not installed (pip install -e '.[dev]')")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=ARGS)
        yield b
        b.close()


@pytest.fixture()
def shots(tmp_path):
    d = Path(os.environ.get("GROKRAY_SCREENSHOTS") or tmp_path)
    d.mkdir(parents=True, exist_ok=True)
    return d


def _page(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 950})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return page, errors


def _cell(page, sweep: str, key: str) -> str:
    return page.locator(f'.card[data-sweep="{sweep}"] td[data-k="{key}"]').inner_text()


def test_dashboard_in_chromium(browser, tmp_path, sweepdir, dashboard_proc, shots):
    out = str(tmp_path / "results" / "syn")
    other = str(tmp_path / "results" / "syn_b")
    two = ("mlp", "forge")  # the analysis views' AFT fits take seconds per arm
    sweepdir.write_sweep(out, trials=24, seeds=3, evals=30, arms=two)
    sweepdir.write_plan(out, trials=32, seeds=3)
    sweepdir.write_sweep(other, trials=8, seeds=3, evals=30, start=100, name="syn_b")
    proc, url, _ = dashboard_proc.start([out, other], "--bootstrap", "0")
    page, errors = _page(browser)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    try:
        page.goto(url)
        page.wait_for_selector('.card[data-sweep="syn"] tr[data-arm="forge"]')
        T = load(out).trials
        assert int(_cell(page, "syn", "rows")) == len(T) == 72
        assert int(_cell(page, "syn", "planned")) == 96
        assert int(_cell(page, "syn", "pending")) == 24
        assert int(_cell(page, "syn", "grokked")) == int((T["status"] == "grokked").sum())
        cens = int(T["status"].isin(["not_grokked", "diverged"]).sum())
        assert int(_cell(page, "syn", "censored")) == cens > 0
        forge = page.locator('.card[data-sweep="syn"] tr[data-arm="forge"] td.grokked')
        assert int(forge.inner_text()) == int(((T["arm"] == "forge")
                                               & (T["status"] == "grokked")).sum())
        page.screenshot(path=str(shots / "dashboard-overview.png"), full_page=True)

        # rows a running sweep writes appear without a reload
        page.evaluate("window.__same_page = 42")
        sweepdir.write_sweep(out, trials=2, seeds=3, evals=30, start=24, arms=two)
        page.wait_for_function(
            "document.querySelector('.card[data-sweep=\"syn\"] td[data-k=\"rows\"]')"
            ".textContent === '78'", timeout=10_000)
        assert page.evaluate("window.__same_page") == 42

        # curves: the plotted medians are grokray_analysis.curves' bands of the Parquet
        page.click('#tabs button[data-tab="curves"]')
        page.wait_for_selector("#curves-plot .main-svg")
        page.wait_for_function("document.getElementById('curves-plot').data.length >= 6")
        ref = load(out)
        want = {b.arm: b for b in curve_bands(ref.curves, metric="val_acc").bands}
        traces = page.evaluate("document.getElementById('curves-plot').data.map("
                               "t => [t.name || '', t.meta && t.meta.arm, t.y])")
        medians = {arm: y for name, arm, y in traces if name.startswith(f"{arm} (n=")}
        assert set(medians) == set(want)
        for arm, b in want.items():
            np.testing.assert_allclose(medians[arm], b.median)
            assert f"{arm} (n={b.n_runs}:" in next(n for n, a, _ in traces
                                                  if a == arm and n.startswith(arm))
        page.evaluate("document.getElementById('curves-plot').emit('plotly_click', "
                      "{points: [{data: {meta: {arm: 'mlp'}}}]})")
        page.wait_for_function("(document.getElementById('seeds-plot').data || []).length > 0")
        n_mlp = int((ref.trials["arm"] == "mlp").sum())
        title = page.locator("#seeds-plot .gtitle").text_content()
        assert f"mlp: each seed's val_acc ({n_mlp})" in title
        page.screenshot(path=str(shots / "dashboard-curves.png"), full_page=True)

        # trials: every row, censored rows marked, filtered and sorted by the server
        page.click('#tabs button[data-tab="trials"]')
        page.wait_for_selector("#trials-table tbody tr")
        assert page.locator("#trials-count").inner_text() == "78 of 78 rows"
        assert page.locator("#trials-table tbody tr.censored").count() == int(
            load(out).trials["status"].isin(["not_grokked", "diverged"]).sum())
        page.fill("#trials-filter", "not_grokked")
        n_ng = int((load(out).trials["status"] == "not_grokked").sum())
        page.wait_for_function("document.getElementById('trials-count').textContent === "
                               f"'{n_ng} of 78 rows'", timeout=10_000)
        assert page.locator("#trials-table tbody tr").count() == n_ng
        page.fill("#trials-filter", "")
        page.wait_for_function("document.getElementById('trials-count').textContent === "
                               "'78 of 78 rows'", timeout=10_000)
        page.click('#trials-table th[data-c="grok_step"]')
        page.wait_for_selector('#trials-table th[data-c="grok_step"]:has-text("▲")')
        steps = sorted(load(out).trials["grok_step"].dropna())
        first = page.locator("#trials-table tbody tr").first.locator("td").nth(
            page.locator("#trials-table th").all_inner_texts().index("grok_step ▲"))
        assert float(first.inner_text()) == steps[0]

        page.click('#tabs button[data-tab="parcoords"]')
        page.wait_for_selector("#parcoords-plot .main-svg")

        # analysis views: computed in the background, shown when ready
        page.click('#tabs button[data-tab="analysis"]')
        page.wait_for_selector("#analysis-state .badge.grokked", timeout=120_000)
        titles = page.locator("#analysis .item h3").all_inner_texts()
        assert "Speedup" in titles and "Scaling" in titles
        page.wait_for_function(  # speedup, sign test, scaling
            "document.querySelectorAll('#analysis .js-plotly-plot .main-svg').length >= 3")
        page.screenshot(path=str(shots / "dashboard-analysis.png"), full_page=True)

        page.click('#tabs button[data-tab="compare"]')
        page.wait_for_selector("#cmp-b-view table")
        assert "syn_b" in page.locator("#cmp-b-view h2").inner_text() or \
            "syn_b" in page.locator("#cmp-a-view h2").inner_text()
    finally:
        dashboard_proc.stop(proc)
    assert not errors, errors
    assert all(r.startswith(url) for r in requests), [r for r in requests
                                                     if not r.startswith(url)]


def test_html_report_is_self_contained(browser, tmp_path, sweepdir, shots):
    out = str(tmp_path / "syn")
    sweepdir.write_sweep(out, trials=8, seeds=2, evals=20, arms=("mlp", "forge"))
    report = tmp_path / "report.html"
    r = subprocess.run([sys.executable, "-m", "grokray.cli", "analyze", "report", out, "--html",
                        "-o", str(report), "--bootstrap", "0"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    page, errors = _page(browser)
    requests: list[str] = []
    page.on("request", lambda q: requests.append(q.url))
    page.goto(report.as_uri())
    page.wait_for_selector(".item .main-svg")
    n_plots = page.locator(".js-plotly-plot").count()
    assert n_plots >= 4
    assert page.locator("h3", has_text="Speedup").count() == 1
    page.screenshot(path=str(shots / "report-html.png"))
    assert not errors, errors
    assert requests == [report.as_uri()]
