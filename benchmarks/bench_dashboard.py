"""`grokray dashboard` at scale: a synthetic sweep dir in the real schema (written through the
store: 10^4 seed-rows in 2,000 trials files, 10^6 curve rows), each figure against its target.

    python benchmarks/bench_dashboard.py [--dir DIR] [--trials 2000 --seeds 5 --evals 100]

Measures: the dashboard's start (process start to serving, and the index time it prints),
the overview's first paint (in Chromium when Playwright and a browser are installed, else the
HTTP time of everything the page loads), a refresh after 10 new trials (the server's refresh
time and the files it read; the page sees it within one poll), the curves view (HTTP, cold and
filtered; in the browser when available), the server's RSS (and the analysis worker's), and the
time until the analysis views are ready (no target: they are computed in the background).
The dir is built once and kept (--dir) so a rerun measures the dashboard only.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"start": 30.0, "first_paint": 2.0, "refresh": 1.0, "curves": 2.0, "rss_mib": 1024.0}


def _fixture(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "fixtures" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _get(url: str) -> tuple[float, bytes]:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as r:
        body = r.read()
    return time.perf_counter() - t0, body


def _line(what: str, value: float, unit: str, target: float | None) -> None:
    verdict = "" if target is None else ("  ok" if value <= target else "  OVER")
    goal = "" if target is None else f"  (target <= {target:g} {unit})"
    print(f"{what:46s} {value:9.2f} {unit}{goal}{verdict}", flush=True)


def build(out: str, trials: int, seeds: int, evals: int) -> None:
    sweepdir = _fixture("sweepdir")
    t0 = time.perf_counter()
    sweepdir.write_sweep(out, trials=trials, seeds=seeds, evals=evals)
    sweepdir.write_plan(out, trials=trials + 10, seeds=seeds)
    print(f"built {out}: {trials} trials x {seeds} seeds, {trials * seeds * evals} curve rows "
          f"in {time.perf_counter() - t0:.0f} s", flush=True)


def _browser():
    exe = next((shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)),
               None)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None, None
    return (exe, sync_playwright) if exe else (None, None)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", default="/tmp/grokray-bench-dashboard/synthetic")
    p.add_argument("--trials", type=int, default=2000)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--evals", type=int, default=100)
    p.add_argument("--no-browser", action="store_true", help="HTTP timings only")
    a = p.parse_args(argv)
    out = a.dir
    marker = os.path.join(out, ".bench-complete")
    if not os.path.exists(marker):
        shutil.rmtree(out, ignore_errors=True)
        build(out, a.trials, a.seeds, a.evals)
        Path(marker).write_text("")
    n_files = len(os.listdir(os.path.join(out, "trials")))
    print(f"dir {out}: {n_files} trials files", flush=True)
    for sub in ("trials", "curves"):  # a previous run's extra trials: remove them
        for name in os.listdir(os.path.join(out, sub)):
            if name.split("-", 1)[-1].startswith("rbench"):
                os.unlink(os.path.join(out, sub, name))

    dash = _fixture("dashboard")
    t0 = time.perf_counter()
    proc, url, lines = dash.start([out], timeout=300)
    started = time.perf_counter() - t0
    import psutil

    try:
        _line("start: process start to serving", started, "s", TARGETS["start"])
        print("  " + next((ln for ln in lines if ln.startswith("indexed")), ""), flush=True)
        exe, sync_playwright = (None, None) if a.no_browser else _browser()
        page_s = None
        if exe:
            with sync_playwright() as pw:
                b = pw.chromium.launch(executable_path=exe, args=[
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync"])
                page = b.new_page(viewport={"width": 1400, "height": 950})
                t0 = time.perf_counter()
                page.goto(url)
                page.wait_for_selector(".card tr[data-arm]")
                page_s = time.perf_counter() - t0
                _line("overview first paint (Chromium, cold)", page_s, "s",
                      TARGETS["first_paint"])
                t0 = time.perf_counter()
                page.click('#tabs button[data-tab="curves"]')
                page.wait_for_selector("#curves-plot .main-svg")
                page.wait_for_function("(document.getElementById('curves-plot').data || [])"
                                       ".length > 0")
                _line("curves view drawn (Chromium, 10^6 rows)", time.perf_counter() - t0,
                      "s", TARGETS["curves"])
                b.close()
        else:
            total = 0.0
            for path in ("/", "/static/app.css", "/static/app.js", "/static/plotly.min.js",
                         "/api/state", "/api/overview?sweep=0"):
                total += _get(url.rstrip("/") + path)[0]
            _line("overview: HTTP time of all it loads (no browser)", total, "s",
                  TARGETS["first_paint"])

        base = url.rstrip("/")
        sweepdir = _fixture("sweepdir")
        s0 = json.loads(_get(base + "/api/state")[1])["sweeps"][0]
        v0, want = s0["version"], s0["rows"] + 10 * a.seeds
        from grokray.sweep import store
        for i in range(10):  # through the real writer, as a running sweep does
            cfg = sweepdir.config(a.trials + i, a.seeds, 4000, a.evals)
            store.write_result(sweepdir.result(a.trials + i, cfg, a.evals), out,
                               sweep="synthetic", run_id=f"rbench{i:03d}")
        t_written = time.perf_counter()
        refresh_s, files_read, version, pending = 0.0, 0, v0, None
        while True:  # the refreshes that read the 10 trials (a write can straddle two)
            st = json.loads(_get(base + "/api/state")[1])
            s0 = st["sweeps"][0]
            if pending is not None and st["refreshes"] > pending:
                # the refresh that changed the rows has completed: its figures are final
                refresh_s = max(refresh_s, st["last_refresh_s"])
                files_read += st["last_read"]
                pending = None
                if s0["rows"] >= want:
                    break
            if s0["version"] > version:  # seen while that refresh may still be running
                version, pending = s0["version"], st["refreshes"]
                if s0["rows"] >= want:
                    seen = time.perf_counter() - t_written
            time.sleep(0.05)
        _line(f"refresh after 10 new trials (server, {files_read} files read)", refresh_s, "s",
              TARGETS["refresh"])
        _line(f"  all 10 visible to the page (poll {st['refresh_s']:g} s)", seen, "s", None)
        time.sleep(2 * st["refresh_s"])  # the server computes the default views after a change
        t_curves, body = _get(base + "/api/curves?sweep=0&metric=val_acc&where=%7B%7D")
        _line("curves view val_acc (HTTP, prepared after the refresh)", t_curves, "s",
              TARGETS["curves"])
        _line("curves view train_acc (HTTP, computed on request)",
              _get(base + "/api/curves?sweep=0&metric=train_acc&where=%7B%7D")[0], "s",
              TARGETS["curves"])
        c = json.loads(body)
        print(f"  {len(c['bands'])} bands, {sum(b['n_runs'] for b in c['bands'])} runs",
              flush=True)
        where = urllib.request.quote(json.dumps({"group": ["S4", "A4"]}))
        _line("curves view train_loss, group filter (on request)",
              _get(f"{base}/api/curves?sweep=0&metric=train_loss&where={where}")[0], "s",
              TARGETS["curves"])
        _line("trials table (HTTP, every row)", _get(base + "/api/trials?sweep=0")[0], "s",
              None)
        t0 = time.perf_counter()
        while json.loads(_get(base + "/api/analysis?sweep=0")[1])["state"] != "ready":
            time.sleep(1.0)
        _line("analysis views ready (background process)", time.perf_counter() - t0, "s",
              None)
        server = psutil.Process(proc.pid)
        rss = server.memory_info().rss / 2**20
        _line("server RSS", rss, "MiB", TARGETS["rss_mib"])
        for child in server.children(recursive=True):
            _line(f"  analysis worker RSS (pid {child.pid})",
                  child.memory_info().rss / 2**20, "MiB", None)
    finally:
        dash.stop(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
