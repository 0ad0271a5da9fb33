"""The dashboard's HTTP server (aiohttp): GET only, JSON views of the in-memory index, assets
from the installed packages.

No endpoint takes a file path: sweeps are named by their position on the command line and runs
by (config_hash, seed), so nothing outside the given dirs can be asked for. Every other method
is refused (405), every unknown path is 404. A background task refreshes the index every
`REFRESH_S` seconds (only new or rewritten files are read); the page polls `/api/state` and
fetches a view again when its sweep's version moved. Views are computed in threads (the index
has a lock), the analysis views in a worker process (`analyses.Background`).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import threading
import time
from collections import OrderedDict
from functools import partial
from importlib import resources

from aiohttp import web

from grokray import reader
from grokray.errors import GrokrayError
from grokray_analysis.dashboard import views
from grokray_analysis.dashboard.analyses import Background
from grokray_analysis.dashboard.figures import plotly_js
from grokray_analysis.dashboard.index import SweepIndex, sweep_dirs

REFRESH_S = 2.0
"""seconds between two looks at the dirs"""
LOOPBACK = ("127.0.0.1", "localhost", "::1")
CSP = ("default-src 'self'; script-src 'self' 'unsafe-eval'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
       "frame-ancestors 'none'; form-action 'none'")
"""'unsafe-eval': Plotly's WebGL traces (parcoords) compile their shaders' code at run time"""


def _asset(name: str) -> bytes:
    return resources.files("grokray_analysis.dashboard").joinpath("static", name).read_bytes()


class Dashboard:
    """The sweeps on the page and the server's state."""

    def __init__(self, paths: list[str], *, n_boot: int = 1000, seed: int = 0):
        self.roots = [p if "://" in p else os.path.abspath(p) for p in paths]
        self.sweeps: list[SweepIndex] = []
        self.ledger_roots: dict[int, str] = {}
        self.background = Background(n_boot=n_boot, seed=seed)
        self.cache: OrderedDict[tuple, bytes] = OrderedDict()
        self.cache_lock = threading.Lock()
        self.started = time.time()
        self.last_refresh_s = 0.0
        """seconds of the last refresh that read or dropped a file"""
        self.last_read = 0
        """files that refresh read"""
        self.refreshes = 0
        """refreshes completed (a reader of the figures above waits for the one after a change)"""
        self._scan_roots()

    def _scan_roots(self) -> bool:
        """Add sweep dirs that appeared under an output root (a sweep started later)."""
        known = {s.path for s in self.sweeps}
        added = False
        for root in self.roots:
            dirs = sweep_dirs(root)
            for d in dirs:
                if d not in known:
                    self.sweeps.append(SweepIndex(d, reader.display_name(d)))
                    if d != root:
                        self.ledger_roots[len(self.sweeps) - 1] = root
                    added = True
        names = [s.name for s in self.sweeps]
        for s in self.sweeps:  # two dirs of one name: tell them apart by their parent
            if names.count(s.name) > 1:
                parent = reader.strip_query(s.path).rstrip("/").rsplit("/", 1)[0]
                s.name = f"{reader.display_name(parent)}/{reader.display_name(s.path)}"
        return added

    def refresh(self) -> bool:
        """Look at every dir; read what is new. True when anything changed."""
        t0 = time.perf_counter()
        changed = self._scan_roots()
        for s in self.sweeps:
            changed |= s.refresh()
        took, read = time.perf_counter() - t0, sum(s.last_read for s in self.sweeps)
        if changed or read:
            self.last_refresh_s, self.last_read = took, read
        self.refreshes += 1
        return changed

    def state(self) -> dict:
        return {"sweeps": [{"id": i, "name": s.name, "path": reader.strip_query(s.path),
                            "version": s.version,
                            "rows": s.n_rows, "problems": len(s.problems)}
                           for i, s in enumerate(self.sweeps)],
                "roots": [reader.strip_query(r) for r in self.roots], "refresh_s": REFRESH_S,
                "now": time.time(),
                "last_refresh_s": self.last_refresh_s, "last_read": self.last_read,
                "refreshes": self.refreshes}

    def sweep(self, request: web.Request, key: str = "sweep") -> tuple[int, SweepIndex]:
        raw = request.query.get(key, "0")
        if not raw.isdigit() or int(raw) >= len(self.sweeps):
            raise web.HTTPBadRequest(
                text=json.dumps({"error": f"{key}={raw[:40]!r}: give a sweep number 0.."
                                          f"{len(self.sweeps) - 1}"}),
                content_type="application/json")
        i = int(raw)
        return i, self.sweeps[i]

    def analysis(self, i: int) -> dict:
        ix = self.sweeps[i]
        root = self.ledger_roots.get(i)

        def args():
            with ix.lock:
                return ix.trials, root  # made for this job: the worker's own copy
        out = self.background.get(str(i), ix.version, args)
        out["ledger_root"] = root
        return out


def _where(request: web.Request) -> dict[str, list[str]]:
    raw = request.query.get("where", "{}")
    try:
        w = json.loads(raw)
        assert isinstance(w, dict) and all(isinstance(v, list) for v in w.values())
    except (ValueError, AssertionError):
        raise web.HTTPBadRequest(
            text=json.dumps({"error": 'where: a JSON object {"column": ["value", ...]}'}),
            content_type="application/json") from None
    return {str(k): [str(x) for x in v] for k, v in w.items()}


def _json_response(body: bytes) -> web.Response:
    return web.Response(body=body, content_type="application/json",
                        headers={"Cache-Control": "no-store"})


def _computed(dash: Dashboard, key: tuple, fn) -> bytes:
    """The JSON of a view, from the cache (per data version and parameters) or computed."""
    with dash.cache_lock:
        body = dash.cache.get(key)
    if body is None:
        body = json.dumps(fn(), allow_nan=False, default=views._json).encode()
        with dash.cache_lock:
            dash.cache[key] = body
            while len(dash.cache) > 64:
                dash.cache.popitem(last=False)
    return body


async def _view(request: web.Request, key: tuple, fn) -> web.Response:
    """Compute a view in a thread (a GrokrayError is the answer's 400)."""
    loop = asyncio.get_running_loop()
    try:
        body = await loop.run_in_executor(None, _computed, request.app["dash"], key, fn)
    except GrokrayError as exc:
        return web.json_response({"error": str(exc)}, status=400)
    return _json_response(body)


def default_views(dash: Dashboard, i: int) -> list[tuple[tuple, object]]:
    """What the page asks first of sweep i (overview, curves of val_acc, trials): computed
    after each refresh that changed it, so the page finds them ready."""
    ix = dash.sweeps[i]
    return [(("overview", i, ix.version), _locked(ix, views.overview)),
            (("curves", i, ix.version, "val_acc", "{}"), _locked(ix, views.curves, "val_acc",
                                                                  {})),
            (("trials", i, ix.version, "", None, False), _locked(ix, views.trials_table))]


def warm(dash: Dashboard) -> None:
    for i in range(len(dash.sweeps)):
        for key, fn in default_views(dash, i):
            try:
                _computed(dash, key, fn)
            except GrokrayError:
                pass  # e.g. no val_acc column: the page asks for what there is


def _locked(ix: SweepIndex, fn, *args):
    def run():
        with ix.lock:
            return fn(ix, *args)
    return run


async def state(request):
    return web.json_response(request.app["dash"].state(), headers={"Cache-Control": "no-store"})


async def overview(request):
    i, ix = request.app["dash"].sweep(request)
    return await _view(request, ("overview", i, ix.version), _locked(ix, views.overview))


async def curves(request):
    i, ix = request.app["dash"].sweep(request)
    metric, where = request.query.get("metric", "val_acc"), _where(request)
    key = ("curves", i, ix.version, metric, json.dumps(where, sort_keys=True))
    return await _view(request, key, _locked(ix, views.curves, metric, where))


async def seeds(request):
    i, ix = request.app["dash"].sweep(request)
    arm, metric, where = request.query.get("arm", ""), request.query.get("metric", "val_acc"), \
        _where(request)
    key = ("seeds", i, ix.version, arm, metric, json.dumps(where, sort_keys=True))
    return await _view(request, key, _locked(ix, views.seed_curves, arm, metric, where))


async def trials(request):
    i, ix = request.app["dash"].sweep(request)
    q, sort = request.query.get("q", "")[:200], request.query.get("sort") or None
    desc = request.query.get("dir") == "desc"
    key = ("trials", i, ix.version, q, sort, desc)
    return await _view(request, key, _locked(ix, views.trials_table, q, sort, desc))


async def parcoords(request):
    i, ix = request.app["dash"].sweep(request)
    return await _view(request, ("parcoords", i, ix.version), _locked(ix, views.parcoords))


async def compare(request):
    dash = request.app["dash"]
    i, a = dash.sweep(request, "a")
    j, b = dash.sweep(request, "b")

    def run():
        with a.lock, b.lock:
            return views.compare(a, b)
    return await _view(request, ("compare", i, a.version, j, b.version), run)


async def analysis(request):
    dash = request.app["dash"]
    i, _ = dash.sweep(request)
    loop = asyncio.get_running_loop()
    out = await loop.run_in_executor(None, dash.analysis, i)
    return web.json_response(out, headers={"Cache-Control": "no-store"},
                             dumps=partial(json.dumps, default=views._json))


def _static_handler(body: bytes, content_type: str):
    packed = gzip.compress(body, 6)

    async def handler(request):
        headers = {"Cache-Control": "no-cache"}
        if "gzip" in request.headers.get("Accept-Encoding", ""):
            headers["Content-Encoding"] = "gzip"
            return web.Response(body=packed, content_type=content_type, headers=headers)
        return web.Response(body=body, content_type=content_type, headers=headers)
    return handler


@web.middleware
async def guard(request, handler):
    """Loopback only answers to loopback Host names (no DNS rebinding); headers that keep the
    page from loading anything but its own assets."""
    allowed = request.app["hosts"]
    host = (request.host or "").rsplit(":", 1)[0].strip("[]")
    if allowed is not None and host not in allowed:
        return web.Response(status=403, text=f"host {host!r} not served; use 127.0.0.1\n")
    resp = await handler(request)
    resp.headers["Content-Security-Policy"] = CSP
    resp.headers["X-Content-Type-Options"] = "nosniff"
    resp.headers["Referrer-Policy"] = "no-referrer"
    return resp


async def _refresher(app):
    dash: Dashboard = app["dash"]
    loop = asyncio.get_running_loop()
    changed = True  # the first round warms what the page asks first
    while True:
        try:
            if changed:
                changed = False
                await loop.run_in_executor(None, warm, dash)
            await asyncio.sleep(REFRESH_S)
            changed = await loop.run_in_executor(None, dash.refresh)
        except Exception as exc:  # noqa: BLE001 - a bad moment on disk never stops the server
            print(f"grokray dashboard: refresh failed: {type(exc).__name__}: {exc}", flush=True)
            await asyncio.sleep(REFRESH_S)


async def _start_refresher(app):
    app["refresher"] = asyncio.create_task(_refresher(app))


async def _stop(app):
    app["refresher"].cancel()
    app["dash"].background.close()


def make_app(dash: Dashboard, host: str) -> web.Application:
    """The aiohttp application (GET routes only)."""
    app = web.Application(middlewares=[guard])
    app["dash"] = dash
    app["hosts"] = set(LOOPBACK) if host in LOOPBACK else None
    static = {"app.js": "application/javascript", "app.css": "text/css"}
    app.router.add_get("/", _static_handler(_asset("index.html"), "text/html"))
    for name, ctype in static.items():
        app.router.add_get(f"/static/{name}", _static_handler(_asset(name), ctype))
    app.router.add_get("/static/plotly.min.js",
                       _static_handler(plotly_js(), "application/javascript"))
    for path, h in (("state", state), ("overview", overview), ("curves", curves),
                    ("seeds", seeds), ("trials", trials), ("parcoords", parcoords),
                    ("compare", compare), ("analysis", analysis)):
        app.router.add_get(f"/api/{path}", h)
    app.on_startup.append(_start_refresher)
    app.on_cleanup.append(_stop)
    return app
