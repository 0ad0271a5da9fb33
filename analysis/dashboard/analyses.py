"""The analysis views (power law, speedups, sign tests, phase diagram, paper numbers, ledger),
computed by the analysis package in a separate process so that a slow fit never blocks a page.

`analysis_views` is what that process runs (and what `analyze report --html` runs in-process):
`grokray_analysis.report.report_items` decides what applies to a sweep, exactly as the Markdown
report, from the registered analyses (grokray_analysis.registry); each item shows its
analysis's tables and its figure.
`Background` keeps at most one job per sweep in flight and the newest finished answer.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

import pandas as pd

from grokray.errors import GrokrayError
from grokray_analysis.dashboard.figures import table_html
from grokray_analysis.errors import AnalysisError
from grokray_analysis.report import comparison_table, paper_comparisons, report_items


def analysis_views(trials: pd.DataFrame, curves: pd.DataFrame | None = None, *,
                   n_boot: int = 1000, seed: int = 0) -> list[dict]:
    """Each analysis of one sweep as {title, html (its tables), figure (Plotly dict), skipped}."""
    out = []
    if trials.empty:
        return out
    for it in report_items(trials, curves, n_boot=n_boot, seed=seed):
        if it.skipped:
            out.append({"title": it.title, "skipped": it.skipped, "html": "", "figure": None})
            continue
        a = it.analysis
        out.append({"title": it.title, "skipped": "",
                    "html": "".join(table_html(t) for t in a.tables_of(it.result)),
                    "figure": a.figure(it.result) if a.figure is not None else None})
    try:
        comps = paper_comparisons(trials, n_boot=n_boot, seed=seed)
    except AnalysisError as exc:
        comps, why = [], str(exc)
    else:
        why = ""
    if comps or why:
        out.append({"title": "Paper numbers beside measured ones", "skipped": why,
                    "html": table_html(comparison_table(comps)) if comps else "",
                    "figure": None})
    return out


def ledger_view(root: str) -> dict:
    """The reproduction ledger of an output root (grokray_analysis.ledger), as an HTML table."""
    from grokray_analysis.ledger import ledger, ledger_table

    try:
        L = ledger(Path(root))
    except (GrokrayError, OSError) as exc:
        return {"title": "Reproduction ledger", "skipped": str(exc), "html": "", "figure": None}
    return {"title": "Reproduction ledger", "skipped": "", "html": table_html(ledger_table(L)),
            "figure": None}


def _job(trials: pd.DataFrame, root: str | None, n_boot: int, seed: int) -> list[dict]:
    """Run in the worker process."""
    items = []
    try:
        items = analysis_views(trials, None, n_boot=n_boot, seed=seed)
    except GrokrayError as exc:
        items = [{"title": "Analysis", "skipped": str(exc), "html": "", "figure": None}]
    if root:
        items.append(ledger_view(root))
    return items


class Background:
    """One worker process; per key (a sweep), the newest answer and at most one job running.

    `get(key, version, make_args)` returns {state: "computing"|"ready", version, items}; a new
    data version starts a job when none runs for the key (the old answer stays shown, marked
    as computing for the new version)."""

    def __init__(self, n_boot: int = 1000, seed: int = 0):
        ctx = multiprocessing.get_context("spawn")  # the server's threads are never forked
        self.pool = ProcessPoolExecutor(max_workers=1, mp_context=ctx)
        self.n_boot, self.seed = n_boot, seed
        self.lock = threading.Lock()
        self.done: dict[str, dict] = {}
        self.running: dict[str, tuple[int, Future, float]] = {}

    def get(self, key: str, version: int, make_args) -> dict:
        with self.lock:
            run = self.running.get(key)
            if run is not None and run[1].done():
                v, fut, started = self.running.pop(key)
                try:
                    items = fut.result()
                    self.done[key] = {"version": v, "items": items,
                                      "seconds": time.time() - started}
                except Exception as exc:  # noqa: BLE001 - a crash in the worker is shown
                    self.done[key] = {"version": v, "items": [{
                        "title": "Analysis", "skipped": f"failed: {type(exc).__name__}: {exc}",
                        "html": "", "figure": None}], "seconds": time.time() - started}
                run = None
            have = self.done.get(key)
            if (have is None or have["version"] != version) and run is None:
                trials, root = make_args()
                fut = self.pool.submit(_job, trials, root, self.n_boot, self.seed)
                self.running[key] = (version, fut, time.time())
            computing = key in self.running
            return {"state": "computing" if computing else "ready",
                    "version": have["version"] if have else None,
                    "want_version": version,
                    "items": have["items"] if have else [],
                    "seconds": have["seconds"] if have else None}

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
