"""The Plotly figures and HTML tables draw the analysis results' own numbers (censored values
apart), and `analyze report --html` writes one file that loads nothing from outside."""

import json
import math
import re

import numpy as np
import pytest

from grokray_analysis.dashboard.analyses import analysis_views
from grokray_analysis.dashboard.figures import (
    CENSORED,
    curves_figure,
    phase_figure,
    scaling_figure,
    speedup_figure,
    table_html,
)
from grokray_analysis.load import load
from grokray_analysis.phase import phase_diagrams
from grokray_analysis.powerlaw import scaling
from grokray_analysis.speedup import speedup_table
from grokray_analysis.tables import Bound, Table


@pytest.fixture(scope="module")
def ablation(tmp_path_factory, tiny):
    return load(tiny.write_ablation(tmp_path_factory.mktemp("abl") / "tiny_ablation"))


def test_curves_figure_medians(ablation):
    from grokray_analysis.curves import curve_bands

    res = curve_bands(ablation.curves, metric=("val_acc", "train_acc"))
    fig = curves_figure(res)
    medians = [t for t in fig["data"] if t["meta"]["role"] == "median"]
    assert len(medians) == len(res.bands)
    for t, b in zip(medians, res.bands, strict=True):
        np.testing.assert_allclose(t["y"], b.median)
        assert t["line"]["dash"] == ("solid" if b.metric == "val_acc" else "dash")


def test_speedup_figure_bounds_open(ablation):
    res = speedup_table(ablation.trials, "mlp")
    fig = speedup_figure(res)
    for t in fig["data"]:
        rows = [r for r in res.rows if r.arm == t["name"] and r.kind in
                ("estimate", "lower", "upper")]
        assert t["y"] == [r.speedup if math.isfinite(r.speedup) else None for r in rows]
        assert t["marker"]["symbol"] == [{"estimate": "circle", "lower": "triangle-up-open",
                                          "upper": "triangle-down-open"}[r.kind] for r in rows]


def test_scaling_figure_censored_points(ablation):
    res = scaling(ablation.trials, arms=["mlp"], methods=("aft",), n_boot=0)
    fig = scaling_figure(res)
    cens = [t for t in fig["data"] if "censored" in t.get("name", "")]
    f = res.fits[0]
    assert f.cens_order and cens[0]["x"] == list(f.cens_order)
    assert cens[0]["marker"]["symbol"] == "triangle-up-open"
    assert cens[0]["marker"]["color"] == CENSORED


def test_phase_figure_threshold(tiny, tmp_path):
    T = load(tiny.write_capacity(tmp_path / "cap")).trials
    res = phase_diagrams(T)
    fig = phase_figure(res)
    ph = res.diagrams[0]
    line = next(t for t in fig["data"] if t["mode"] == "lines")
    np.testing.assert_allclose(np.array(line["x"]) * np.array(line["y"]), ph.threshold)
    cells = fig["data"][0]
    assert cells["marker"]["color"] == [c.frac for c in ph.cells]


def test_table_html_marks_bounds():
    t = Table("t <x>", ("a", "b"), ((1.5, Bound(">", 4000.0)),), ("note & more",))
    h = table_html(t)
    assert "<h4>t &lt;x&gt;</h4>" in h
    assert '<td class="censored">&gt; 4000</td>' in h and "<td class=\"\">1.5</td>" in h
    assert "note &amp; more" in h


def test_analysis_views_are_the_reports(ablation):
    items = analysis_views(ablation.trials, None, n_boot=0)
    titles = [it["title"] for it in items]
    assert titles[:2] == ["Speedup", "Sign test mlp+grokfast vs mlp"]
    assert "Scaling" in titles
    speed = items[0]
    assert "<table" in speed["html"] and speed["figure"]["data"]
    json.dumps(items, allow_nan=False)  # the page and the HTML file can carry them


def test_html_report_self_contained(ablation, tmp_path):
    from grokray.cli import main

    out = tmp_path / "r" / "report.html"
    assert main(["analyze", "report", str(ablation.paths[0]), "--html", "-o", str(out),
                 "--bootstrap", "0"]) == 0
    doc = out.read_text()
    assert re.search(r"<script[^>]*\bsrc=", doc) is None
    assert re.search(r"<link[^>]*href=\"(?!data:)", doc) is None
    assert "Plotly.newPlot" in doc and len(doc) > 1_000_000  # plotly.js inlined
    figs = json.loads(re.search(r'<script type="application/json" id="figures">(.*?)</script>',
                                doc, re.S).group(1))
    assert len(figs) == doc.count('class="plot small" id="fig-') >= 4
    assert "<h3>Speedup</h3>" in doc and "<h3>Scaling</h3>" in doc and "</table>" in doc
