"""`grokray analyze report DIR --html`: the report as one self-contained HTML file.

The same analyses as the Markdown report (`grokray_analysis.report.report_items`: every
registered analysis that applies, curves included; the paper numbers), each drawn as its
analysis's interactive Plotly figure, with plotly.min.js inlined from the installed `plotly`
package: the file makes no request of its own and can be mailed.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path

from grokray_analysis.dashboard.analyses import analysis_views
from grokray_analysis.dashboard.figures import plotly_js
from grokray_analysis.load import Sweep, load
from grokray_analysis.report import sweep_summary


def _script_json(value: object) -> str:
    """JSON safe inside <script>: no '</' can end the element early."""
    return json.dumps(value, allow_nan=False, default=str).replace("</", "<\\/")


def _sweep_html(sweep: Sweep, n_boot: int, seed: int, figures: list[dict]) -> str:
    parts = [f"<h2>Sweep <code>{html.escape(sweep.name)}</code></h2>",
             f"<p>{html.escape(sweep_summary(sweep))}</p>"]
    for it in analysis_views(sweep.trials, sweep.curves, n_boot=n_boot, seed=seed):
        parts.append(f'<div class="item"><h3>{html.escape(it["title"])}</h3>')
        if it["skipped"]:
            parts.append(f'<p class="note">Skipped: {html.escape(it["skipped"])}</p>')
        parts.append(it["html"])
        if it["figure"]:
            parts.append(f'<div class="plot small" id="fig-{len(figures)}"></div>')
            figures.append(it["figure"])
        parts.append("</div>")
    return "\n".join(parts)


def build_html_report(paths: list[str | Path], output: str | Path, *, n_boot: int = 1000,
                      seed: int = 0) -> Path:
    """Write the report as one HTML file (tables, interactive plots, no external requests)."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    sweeps = [load(p) for p in paths]
    figures: list[dict] = []
    body = "\n".join(_sweep_html(s, n_boot, seed, figures) for s in sweeps)
    css = resources.files("grokray_analysis.dashboard").joinpath("static", "app.css").read_text()
    names = ", ".join(s.name for s in sweeps)
    doc = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>grokray report: {html.escape(names)}</title>
<link rel="icon" href="data:,">
<style>{css}
main {{ max-width: 1100px; margin: auto; }}</style>
<script>{plotly_js().decode()}</script>
</head><body><header><h1>grokray analysis report: {html.escape(names)}</h1></header><main>
<p>Bootstrap: {n_boot} resamples, seed {seed}. Censored runs (never grokked) are counted,
never dropped or filled in; in the plots they are grey and open, in the tables grey and
italic ("&gt; x": the median is beyond every budget).</p>
{body}
</main>
<script type="application/json" id="figures">{_script_json(figures)}</script>
<script>
const FIGS = JSON.parse(document.getElementById("figures").textContent);
FIGS.forEach((f, i) => Plotly.newPlot(document.getElementById("fig-" + i), f.data, f.layout,
  {{responsive: true, displaylogo: false}}));
</script></body></html>
"""
    output.write_text(doc)
    return output
