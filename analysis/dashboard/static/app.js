// grokray dashboard: one page over the server's JSON views; polls /api/state and redraws the
// open tab when its sweep's data version moves (no reload). Every number shown comes from the
// server (the analysis package); this file only lays it out.
"use strict";

const S = { sweeps: [], sweep: 0, tab: "overview", versions: {}, drawn: {}, where: {},
            metric: "val_acc", trials: null, sort: null, busy: false };
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;",
  ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
const num = (v, d = 4) => (v === null || v === undefined) ? "" :
  (typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toPrecision(d)) : String(v));
const PLOT_CFG = { responsive: true, displaylogo: false };
// plotly.min.js (4.6 MB) loads async: the overview paints without it; charts wait for it
const plotlyReady = new Promise((resolve) => {
  if (window.Plotly) return resolve();
  const tag = document.getElementById("plotly-js");
  tag.addEventListener("load", resolve);
  const check = setInterval(() => { if (window.Plotly) { clearInterval(check); resolve(); } }, 100);
});

async function get(path, params = {}) {
  const q = new URLSearchParams(params).toString();
  const r = await fetch(`/api/${path}${q ? "?" + q : ""}`);
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function duration(s) {
  if (s === null || s === undefined) return "–";
  if (s < 90) return `${Math.round(s)} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

// ------------------------------------------------------------------ overview

function overviewCard(o) {
  const st = o.by_status;
  const planned = o.planned_rows === null ? "–" : o.planned_rows;
  const arms = o.arms.map((a) => `<tr data-arm="${esc(a.arm)}">
      <td><span style="color:${a.color}">■</span> ${esc(a.arm)}</td>
      <td class="seeds">${a.seeds}</td><td class="grokked">${a.grokked}</td>
      <td class="censored">${a.censored}</td><td class="failed">${a.failed}</td>
      <td class="rate">${a.grok_rate === null ? "–" : a.grok_rate.toFixed(2)}
        <span class="bar" style="width:${Math.round(60 * (a.grok_rate || 0))}px"></span></td></tr>`).join("");
  const problems = o.problems.length ? `<div class="problems"><b>${o.problems.length} file(s) not read:</b><ul>${
    o.problems.map((p) => `<li>${esc(p)}</li>`).join("")}</ul></div>` : "";
  return `<div class="card" data-sweep="${esc(o.name)}"><h2>${esc(o.name)}</h2>
    <div class="path">${esc(o.path)} · ${o.files} files read · data version ${o.version}</div>
    <table class="grid counts"><tr><th>planned</th><th>done</th><th>failed</th><th>pending</th>
      <th>grokked</th><th>censored</th><th>trials</th><th>ETA</th></tr>
      <tr><td data-k="planned">${planned}</td><td data-k="rows">${o.rows}</td>
      <td data-k="failed">${st.failed}</td><td data-k="pending">${o.pending_rows ?? "–"}</td>
      <td data-k="grokked">${st.grokked}</td>
      <td data-k="censored" class="censored">${st.not_grokked + st.diverged}</td>
      <td data-k="trials">${o.trials}${o.trials_failed ? ` (${o.trials_failed} with failures)` : ""}</td>
      <td data-k="eta">${o.pending_rows ? duration(o.eta_s) : "done"}</td></tr></table>
    <table class="grid arms"><tr><th>arm</th><th>seeds</th><th>grokked</th><th>censored</th>
      <th>failed</th><th>grok rate</th></tr>${arms}</table>
    <div class="path">runs: ${runsText(o.run_ids)}</div>${problems}</div>`;
}

// a few run ids one by one, more counted (`grokray status` says the same)
function runsText(ids) {
  if (ids.length <= 4) return ids.map(esc).join(", ") || "–";
  return `${ids.length} (first ${esc(ids[0])}, last ${esc(ids[ids.length - 1])})`;
}

async function drawOverview() {
  const cards = await Promise.all(S.sweeps.map((s) => get("overview", { sweep: s.id })));
  $("overview").innerHTML = cards.map(overviewCard).join("");
}

// ------------------------------------------------------------------ curves

// the trials view: one page of rows (filtered and sorted by the server) and each swept
// column's values (the curve filters)
const trialsKey = () => JSON.stringify([S.sweep, S.versions[S.sweep],
  $("trials-filter").value.trim(), S.sort]);

async function ensureTrials() {
  const q = $("trials-filter").value.trim();
  const key = trialsKey();
  if (!S.trials || S.trials.key !== key) {
    const params = { sweep: S.sweep, q };
    if (S.sort) { params.sort = S.sort[0]; params.dir = S.sort[1] > 0 ? "asc" : "desc"; }
    const t = await get("trials", params);
    S.trials = { ...t, key };
  }
  return S.trials;
}

function drawFilters(t) {
  const keep = ["group", "arm", "seed", ...t.columns.filter((c) => !["config_hash", "seed",
    "group", "arm", "status", "grok_step", "memorize_step", "steps_run", "final_val_acc",
    "final_train_acc", "wall_s", "run_id"].includes(c))];
  const html = keep.filter((c) => t.values[c]).map((c) => {
    const vals = [...new Set(t.values[c].map((x) => String(x)))].sort((a, b) =>
      (isNaN(a) || isNaN(b)) ? a.localeCompare(b) : a - b);
    const sel = S.where[c] || [];
    return `<label>${esc(c)} <select multiple data-col="${esc(c)}">${vals.map((v) =>
      `<option ${sel.includes(v) ? "selected" : ""}>${esc(v)}</option>`).join("")}</select></label>`;
  }).join("");
  $("filters").innerHTML = html;
  for (const el of $("filters").querySelectorAll("select")) {
    el.onchange = () => {
      const vals = [...el.selectedOptions].map((o) => o.value);
      if (vals.length) S.where[el.dataset.col] = vals; else delete S.where[el.dataset.col];
      drawCurves();
    };
  }
}

function markerTraces(c) {
  const out = [];
  for (const b of c.bands) {
    const at = (x) => { // the median curve's value at step x (nearest eval step at or after)
      const i = b.step.findIndex((s) => s >= x);
      return b.median[i < 0 ? b.median.length - 1 : i];
    };
    if (b.memorize_step !== null) out.push({ type: "scatter", mode: "markers", x: [b.memorize_step],
      y: [at(b.memorize_step)], name: `${b.arm} memorized (median of ${b.memorized})`,
      marker: { symbol: "diamond", size: 10, color: b.color }, legendgroup: b.arm, showlegend: false,
      hovertemplate: `${esc(b.arm)}: median memorization step %{x}<extra></extra>` });
    if (b.grok_step !== null) out.push({ type: "scatter", mode: "markers", x: [b.grok_step],
      y: [at(b.grok_step)], name: `${b.arm} grok step`, legendgroup: b.arm, showlegend: false,
      marker: { symbol: b.grok_censored ? "circle-open" : "circle", size: 12, color: b.grok_censored ? "#9a9a9a" : b.color,
        line: { width: 2, color: b.color } },
      hovertemplate: b.grok_censored ? `${esc(b.arm)}: KM median grok step > %{x} (censored)<extra></extra>`
        : `${esc(b.arm)}: KM median grok step %{x}<extra></extra>` });
  }
  return out;
}

function bandTraces(b, label) {
  const fill = b.color.replace("#", "");
  const rgba = `rgba(${parseInt(fill.slice(0, 2), 16)},${parseInt(fill.slice(2, 4), 16)},${parseInt(fill.slice(4, 6), 16)},0.18)`;
  const x = b.step.map((s) => (s > 0 || $("xscale").value === "linear") ? s : null);
  return [
    { type: "scatter", mode: "lines", x, y: b.hi, line: { width: 0, color: b.color }, hoverinfo: "skip",
      showlegend: false, legendgroup: b.arm, meta: { arm: b.arm } },
    { type: "scatter", mode: "lines", x, y: b.lo, fill: "tonexty", fillcolor: rgba, hoverinfo: "skip",
      line: { width: 0, color: b.color }, showlegend: false, legendgroup: b.arm, meta: { arm: b.arm } },
    { type: "scatter", mode: "lines", x, y: b.median, line: { width: 2, color: b.color }, legendgroup: b.arm,
      name: label || `${b.arm} (n=${b.n_runs}: ${b.grokked} grokked, ${b.censored} censored)`,
      meta: { arm: b.arm }, hovertemplate: `${esc(b.arm)} median %{y:.4g} at step %{x}<extra></extra>` },
  ];
}

async function drawCurves() {
  await plotlyReady;
  const t = await ensureTrials();
  if (!$("filters").childElementCount) drawFilters(t);
  const c = await get("curves", { sweep: S.sweep, metric: S.metric, where: JSON.stringify(S.where) });
  const m = $("metric");
  if (m.options.length !== c.metrics.length) {
    m.innerHTML = c.metrics.map((x) => `<option ${x === S.metric ? "selected" : ""}>${esc(x)}</option>`).join("");
  }
  const data = c.bands.flatMap((b) => bandTraces(b)).concat(markerTraces(c));
  const layout = { title: { text: `${esc(c.metric)}: median and IQR per arm (${c.bands.reduce((n, b) => n + b.n_runs, 0)} runs${c.runs_drawn < c.runs ? `, drawn from the first of ${c.runs} by config hash` : ""})`, font: { size: 13 } },
    xaxis: { title: { text: "step" }, type: $("xscale").value }, yaxis: { title: { text: c.metric } },
    margin: { l: 60, r: 20, t: 40, b: 50 }, legend: { font: { size: 11 } }, hovermode: "closest" };
  const div = $("curves-plot");
  await Plotly.react(div, data, layout, PLOT_CFG);
  if (!div.dataset.bound) {
    div.dataset.bound = "1";
    div.on("plotly_click", (ev) => { const arm = ev.points[0]?.data?.meta?.arm; if (arm) drawSeeds(arm); });
  }
  div.dataset.version = c.version;
  if (S.seedArm) drawSeeds(S.seedArm);
}

async function drawSeeds(arm) {
  await plotlyReady;
  S.seedArm = arm;
  const r = await get("seeds", { sweep: S.sweep, arm, metric: S.metric, where: JSON.stringify(S.where) });
  const data = [];
  for (const run of r.runs) {
    data.push({ type: "scatter", mode: "lines", x: run.step, y: run.value,
      name: `${run.config_hash.slice(0, 8)} seed ${run.seed} (${run.status})`,
      line: { width: 1.2, dash: run.censored ? "dash" : "solid", color: run.censored ? "#9a9a9a" : undefined },
      opacity: run.censored ? 0.8 : 1 });
    const marks = [];
    if (run.memorize_step !== null) marks.push([run.memorize_step, "diamond"]);
    if (run.grok_step !== null) marks.push([run.grok_step, "circle"]);
    for (const [x, sym] of marks) {
      const i = run.step.findIndex((s) => s >= x);
      data.push({ type: "scatter", mode: "markers", x: [x], y: [run.value[i < 0 ? run.value.length - 1 : i]],
        marker: { symbol: sym, size: 8, color: "#333" }, showlegend: false, hoverinfo: "x" });
    }
  }
  const shown = r.runs.length < r.n_total ? ` (first ${r.runs.length} of ${r.n_total})` : ` (${r.n_total})`;
  await Plotly.react($("seeds-plot"), data, {
    title: { text: `${esc(arm)}: each seed's ${esc(r.metric)}${shown}; censored runs grey, dashed; ◆ memorized, ● grokked`, font: { size: 12 } },
    xaxis: { title: { text: "step" }, type: $("xscale").value }, yaxis: { title: { text: r.metric } },
    margin: { l: 60, r: 20, t: 40, b: 50 }, showlegend: r.runs.length <= 12 }, PLOT_CFG);
}

// ------------------------------------------------------------------ trials

function statusClass(s) { return s === "grokked" ? "grokked" : s === "failed" ? "failed" : "censored"; }

async function drawTrialsTable() {
  const t = await ensureTrials();
  if (t.key !== trialsKey()) return; // a newer filter or sort was asked meanwhile
  const rows = t.rows;
  const si = t.columns.indexOf("status");
  const sorted = S.sort ? t.columns.indexOf(S.sort[0]) : -1;
  const head = `<thead><tr>${t.columns.map((c, i) => `<th data-c="${esc(c)}">${esc(c)}${i === sorted ? (S.sort[1] > 0 ? " ▲" : " ▼") : ""}</th>`).join("")}</tr></thead>`;
  const body = rows.map((r) => `<tr class="${r[si] === "grokked" ? "" : statusClass(r[si])}">${
    r.map((v, i) => i === si ? `<td><span class="badge ${statusClass(v)}">${esc(v)}</span></td>` :
      `<td>${esc(i === 0 ? String(v).slice(0, 12) : num(v))}</td>`).join("")}</tr>`).join("");
  $("trials-table").innerHTML = head + `<tbody>${body}</tbody>`;
  $("trials-count").textContent = `${t.n_match} of ${t.n_rows} rows` + (t.n_match > rows.length ? ` (first ${rows.length} shown)` : "");
  for (const th of $("trials-table").querySelectorAll("th")) {
    th.onclick = () => { const c = th.dataset.c; S.sort = [c, S.sort && S.sort[0] === c ? -S.sort[1] : 1]; drawTrialsTable().catch(report); };
  }
}

async function drawTrials() { await drawTrialsTable(); }

// ------------------------------------------------------------------ parcoords, analysis, compare

async function drawParcoords() {
  await plotlyReady;
  const p = await get("parcoords", { sweep: S.sweep });
  await Plotly.react($("parcoords-plot"), p.figure.data, p.figure.layout, PLOT_CFG);
}

async function drawAnalysis() {
  await plotlyReady;
  const a = await get("analysis", { sweep: S.sweep });
  const computing = a.state === "computing";
  $("analysis-state").innerHTML = computing
    ? `<span class="badge computing">computing</span> the analysis package is working on data version ${a.want_version}` +
      (a.version !== null ? ` (showing version ${a.version})` : "") + "…"
    : `<span class="badge grokked">ready</span> data version ${a.version}, computed in ${(a.seconds || 0).toFixed(1)} s by the analysis package`;
  const key = `${S.sweep}:${a.version}`;
  if ($("analysis").dataset.key !== key) {
    $("analysis").dataset.key = key;
    $("analysis").innerHTML = a.items.map((it, k) => `<div class="item"><h3>${esc(it.title)}</h3>${
      it.skipped ? `<p class="note">Skipped: ${esc(it.skipped)}</p>` : it.html}${
      it.figure ? `<div id="fig-${k}" class="plot small"></div>` : ""}</div>`).join("");
    for (const [k, it] of a.items.entries()) {
      if (it.figure) await Plotly.newPlot($(`fig-${k}`), it.figure.data, it.figure.layout, PLOT_CFG);
    }
  }
  if (computing) setTimeout(() => { if (S.tab === "analysis") drawAnalysis().catch(report); }, 2000);
}

async function drawCompare() {
  await plotlyReady;
  const a = $("cmp-a").value, b = $("cmp-b").value;
  const c = await get("compare", { a, b });
  for (const [side, id] of [["a", a], ["b", b]]) {
    const s = c[side];
    const rows = s.arms.map((r) => `<tr><td>${esc(r.arm)}</td><td>${r.seeds}</td><td>${r.grokked}</td>
      <td class="censored">${r.censored}</td><td class="${r.median_censored ? "censored" : ""}">${
      r.median_grok_step === null ? "–" : (r.median_censored ? "> " : "") + num(r.median_grok_step)}</td></tr>`).join("");
    $(`cmp-${side}-view`).innerHTML = `<div class="card"><h2>${esc(s.name)}</h2><div class="path">${esc(s.path)}</div>
      <table class="grid"><tr><th>arm</th><th>seeds</th><th>grokked</th><th>censored</th><th>KM median grok step</th></tr>${rows}</table>
      <div id="cmp-${side}-plot" class="plot small"></div></div>`;
    const cv = await get("curves", { sweep: id, metric: "val_acc", where: "{}" }).catch(() => null);
    if (cv) await Plotly.newPlot($(`cmp-${side}-plot`), cv.bands.flatMap((bd) => bandTraces(bd)), {
      title: { text: "val_acc: median and IQR per arm", font: { size: 12 } },
      xaxis: { title: { text: "step" }, type: "log" }, yaxis: { range: [0, 1.02] },
      margin: { l: 50, r: 10, t: 40, b: 40 }, legend: { font: { size: 10 } } }, PLOT_CFG);
  }
}

// ------------------------------------------------------------------ wiring

const DRAW = { overview: drawOverview, curves: drawCurves, trials: drawTrials,
               parcoords: drawParcoords, analysis: drawAnalysis, compare: drawCompare };

function report(err) { $("live").textContent = `error: ${err.message}`; }

async function redraw() {
  if (S.busy) return;
  S.busy = true;
  try {
    const seen = JSON.stringify(S.versions);
    await DRAW[S.tab]();
    S.drawn[S.tab] = seen;
  } catch (err) { report(err); } finally { S.busy = false; }
}

async function poll() {
  try {
    const st = await get("state");
    const fresh = st.sweeps.length !== S.sweeps.length;
    S.sweeps = st.sweeps;
    for (const s of st.sweeps) S.versions[s.id] = s.version;
    if (fresh) fillSelects();
    const t = new Date(st.now * 1000).toLocaleTimeString();
    $("live").textContent = `live · ${st.sweeps.reduce((n, s) => n + s.rows, 0)} seed-rows · checked ${t}`;
    if (S.drawn[S.tab] !== JSON.stringify(S.versions)) await redraw();
  } catch (err) { report(err); }
  setTimeout(poll, 2000);
}

function fillSelects() {
  const opts = S.sweeps.map((s) => `<option value="${s.id}">${esc(s.name)}</option>`).join("");
  $("sweep-select").innerHTML = opts;
  $("sweep-select").value = String(S.sweep);
  $("cmp-a").innerHTML = opts; $("cmp-b").innerHTML = opts;
  $("cmp-a").value = "0"; $("cmp-b").value = String(Math.min(1, S.sweeps.length - 1));
}

function show(tab) {
  S.tab = tab;
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.tab === tab);
  for (const s of document.querySelectorAll(".tab")) s.classList.toggle("active", s.id === `tab-${tab}`);
  redraw();
}

window.addEventListener("DOMContentLoaded", () => {
  for (const b of document.querySelectorAll("#tabs button")) b.onclick = () => show(b.dataset.tab);
  $("sweep-select").onchange = () => {
    S.sweep = +$("sweep-select").value; S.where = {}; S.seedArm = null; $("filters").innerHTML = "";
    S.drawn = {}; redraw();
  };
  $("metric").onchange = () => { S.metric = $("metric").value; drawCurves().catch(report); };
  $("xscale").onchange = () => drawCurves().catch(report);
  $("clear-filters").onclick = () => { S.where = {}; $("filters").innerHTML = ""; drawCurves().catch(report); };
  $("trials-filter").oninput = () => drawTrialsTable().catch(report);
  $("cmp-a").onchange = $("cmp-b").onchange = () => drawCompare().catch(report);
  const hash = location.hash.slice(1);
  if (DRAW[hash]) S.tab = hash;
  poll().then(() => { if (S.tab !== "overview") show(S.tab); });
});
