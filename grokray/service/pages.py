"""The lab's view in the service's web server: the queue page (the queue's columns, live) and the
accounting page (CPU/GPU-hours per user and per sweep, used vs estimated, seed-runs reused and
the hours they saved), beside the sweeps' dashboard.

    GET /queue             the queue page (HTML; it reads /api/sweeps every second)
    GET /accounting        the accounting page (HTML; it reads /api/accounting)
    GET /api/accounting    the accounting as JSON (grokray.service.accounting.as_json)

The pages hold no data of their own: each asks the service's API with the user's token, which
the page takes from its address (`/queue#token=TOKEN`, kept in the browser's session storage;
the fragment never reaches the server). `add_routes(app, STATE)` registers them on the service's
aiohttp application (grokray.service.api.make_app).
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from grokray.service import accounting

__all__ = ["add_routes", "QUEUE_HTML", "ACCOUNTING_HTML"]

_STYLE = """
body{font:14px system-ui,sans-serif;margin:1.2em;color:#222}
nav a{margin-right:1em} h1{font-size:1.3em} h2{font-size:1.1em;margin-top:1.4em}
table{border-collapse:collapse;margin-top:.5em} th,td{padding:3px 8px;border-bottom:1px solid #ddd}
th{text-align:left;background:#f4f4f4} td.n{text-align:right;font-variant-numeric:tabular-nums}
tr[data-state=running] td{background:#eef7ee} tr[data-state=preempted] td{background:#fff6e5}
tr[data-state=held] td{color:#888} #err{color:#b00}
"""

_COMMON_JS = """
const token = (() => {
  const m = location.hash.match(/token=([^&]+)/);
  if (m) {
    sessionStorage.setItem('grokray-token', m[1]);
    history.replaceState(null, '', location.pathname);
  }
  return sessionStorage.getItem('grokray-token') || '';
})();
async function api(path) {
  const r = await fetch(path, {headers: {'Authorization': 'Bearer ' + token}});
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}
const ESC = {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'};
function esc(s) { return String(s ?? '').replace(/[&<>"]/g, c => ESC[c]); }
function hours(s) { return s ? (s / 3600).toPrecision(3) : '0'; }
"""

QUEUE_HTML = f"""<!doctype html><html><head><meta charset="utf-8"><title>grokray queue</title>
<style>{_STYLE}</style></head><body>
<nav><a href="/queue">queue</a><a href="/accounting">accounting</a></nav>
<h1>The lab's queue</h1><div id="err"></div>
<table id="queue"><thead><tr><th>id</th><th>pos</th><th>user</th><th>priority</th><th>state</th>
<th>progress</th><th>reused</th><th>est CPU-h</th><th>est GPU-h</th><th>used CPU-h</th>
<th>name</th><th>why</th></tr></thead><tbody></tbody></table>
<p id="updated"></p>
<script>{_COMMON_JS}
async function refresh() {{
  try {{
    const q = await api('/api/sweeps?all=1&limit=200');
    const rows = q.sweeps.map(s => `<tr data-id="${{s.id}}" data-state="${{esc(s.state)}}">` +
      `<td class="n" data-k="id">${{s.id}}</td>` +
      `<td class="n" data-k="position">${{s.position || '-'}}</td>` +
      `<td data-k="owner">${{esc(s.owner)}}</td>` +
      `<td class="n" data-k="priority">${{s.priority}}</td>` +
      `<td data-k="state">${{esc(s.state)}}</td>` +
      `<td class="n" data-k="progress">${{s.seed_runs_done}}/${{s.seed_runs_total}}</td>` +
      `<td class="n" data-k="reused">${{s.seed_runs_reused}}</td>` +
      `<td class="n" data-k="estimate_cpu_h">${{hours(s.estimate_cpu_s)}}</td>` +
      `<td class="n" data-k="estimate_gpu_h">${{hours(s.estimate_gpu_s)}}</td>` +
      `<td class="n" data-k="used_cpu_h">${{hours(s.used_cpu_s)}}</td>` +
      `<td data-k="name">${{esc(s.name)}}</td><td data-k="message">${{esc(s.message)}}</td></tr>`);
    document.querySelector('#queue tbody').innerHTML = rows.join('');
    document.getElementById('err').textContent = '';
    document.getElementById('updated').textContent = q.sweeps.length + ' sweeps';
  }} catch (e) {{ document.getElementById('err').textContent = e.message; }}
}}
refresh(); setInterval(refresh, 1000);
</script></body></html>
"""

ACCOUNTING_HTML = f"""<!doctype html><html><head><meta charset="utf-8">
<title>grokray accounting</title><style>{_STYLE}</style></head><body>
<nav><a href="/queue">queue</a><a href="/accounting">accounting</a></nav>
<h1>Accounting</h1><div id="err"></div>
<p>Used: the seconds of the rows each sweep trained (a trial's wall time times the CPUs and GPUs
it holds). Estimated: the cost model's expected figure at submission. Saved: what the reused
rows cost where they were trained.</p>
<h2>Per user</h2><table id="users"></table>
<h2>Per sweep</h2><table id="sweeps"></table>
<script>{_COMMON_JS}
const HEAD = ['owner', 'sweep', 'name', 'state', 'cpu_h_used', 'cpu_h_estimated', 'gpu_h_used',
              'gpu_h_estimated', 'seed_runs', 'seed_runs_reused', 'cpu_h_saved', 'gpu_h_saved'];
function table(id, lines, cols) {{
  const th = cols.map(c => `<th>${{c.replaceAll('_', ' ')}}</th>`).join('');
  const rows = lines.map(x => `<tr data-owner="${{esc(x.owner)}}" data-sweep="${{x.sweep}}">` +
    cols.map(c => c.includes('_h_')
      ? `<td class="n" data-k="${{c}}">${{x[c].toFixed(4)}}</td>`
      : `<td data-k="${{c}}">${{esc(x[c])}}</td>`).join('') + '</tr>');
  document.getElementById(id).innerHTML =
    `<thead><tr>${{th}}</tr></thead><tbody>${{rows.join('')}}</tbody>`;
}}
async function refresh() {{
  try {{
    const a = await api('/api/accounting');
    table('users', a.users, HEAD.filter(c => !['sweep', 'name'].includes(c)));
    table('sweeps', a.sweeps, HEAD);
    document.getElementById('err').textContent = '';
  }} catch (e) {{ document.getElementById('err').textContent = e.message; }}
}}
refresh(); setInterval(refresh, 5000);
</script></body></html>
"""


async def queue_page(_request: web.Request) -> web.Response:
    return web.Response(text=QUEUE_HTML, content_type="text/html")


async def accounting_page(_request: web.Request) -> web.Response:
    return web.Response(text=ACCOUNTING_HTML, content_type="text/html")


def _bearer(request: web.Request) -> str | None:
    auth = request.headers.get("Authorization", "")
    return auth[7:].strip() if auth.startswith("Bearer ") else None


def accounting_json(state_key: web.AppKey) -> Any:  # noqa: ANN401 - a handler
    """The accounting's handler (any user with a token may read the lab's); `state_key`: where
    the application keeps the service's State."""

    async def handler(request: web.Request) -> web.Response:
        state = request.app[state_key]
        loop = asyncio.get_running_loop()
        user = await loop.run_in_executor(None, state.authenticate, _bearer(request))
        if user is None:
            return web.json_response({"error": "no token or a wrong one: send 'Authorization: "
                                      "Bearer TOKEN' (`grokray users add` makes one)",
                                      "type": "Unauthorized"}, status=401)
        return web.json_response(await loop.run_in_executor(None, accounting.as_json, state))

    return handler


def add_routes(app: web.Application, state_key: web.AppKey) -> None:
    """Register the pages and the accounting's JSON on the service's application (`state_key`:
    where it keeps the service's State)."""
    app.router.add_route("GET", "/queue", queue_page)
    app.router.add_route("GET", "/accounting", accounting_page)
    app.router.add_route("GET", "/api/accounting", accounting_json(state_key))
