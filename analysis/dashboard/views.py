"""What each part of the page shows, as plain JSON values, from a `SweepIndex` (its trials in
memory as Arrow, each view converting the columns it shows; the curves a view draws read for it).
What a view sends is bounded whatever the store holds: the trials table sends one page of rows
(`TABLE_ROWS`, filtered and sorted here), the curve bands are drawn from at most
`BAND_RUNS_MAX` runs, the parallel coordinates from at most `PARCOORDS_RUNS_MAX`.

Counts are counts of rows; every statistic (median and IQR bands, Kaplan-Meier medians) comes
from the analysis package (`grokray_analysis.curves.curve_bands`, `grokray_analysis.survival`). A
run that did
not grok is censored: it carries `censored: true` wherever a row or a point is sent.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd

from grokray import reader
from grokray.schema import (
    CURVE_KEY_COLUMNS,
    METRIC_PREFIX,
    STATUSES,
)
from grokray_analysis.curves import curve_bands
from grokray_analysis.dashboard.figures import CENSORED, color
from grokray_analysis.dashboard.index import FID, NOT_SWEPT, SweepIndex
from grokray_analysis.errors import AnalysisError
from grokray_analysis.load import require_arms
from grokray_analysis.survival import TIMED, durations, km_median

TABLE_OUTCOME = ["status", "grok_step", "memorize_step", "steps_run", "final_val_acc",
                 "final_train_acc", "wall_s", "run_id"]
BAND_RUNS_MAX = 8_000
"""runs (seeds) the curve bands of one view are drawn from, shared equally by the arms (about
8 * 10^5 curve rows at 100 evals: a view's memory and time stay bounded whatever the store
holds; 2,000 runs per arm of four put a median's and quartiles' sampling error well under the
spread they show)"""
SEED_CURVES_MAX = 40
"""per-seed curves sent for one band (the first by config and seed; the page says how many)"""
TABLE_ROWS = 500
"""rows of the trials table sent at once (the first of the filtered, sorted rows)"""
FILTER_VALUES_MAX = 1000
"""distinct values of one column offered as a filter"""
PARCOORDS_RUNS_MAX = 5000
"""lines of the parallel-coordinates figure (evenly spaced over the runs beyond that)"""
DURATION = ["steps_run", "steps", "grok_step_lo", "memorize_step"]
"""the columns beside `index.BASE` that survival times and markers read"""


def _json(v):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return None
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return _json(float(v))
    if isinstance(v, (np.bool_,)):
        return bool(v)
    if v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, pd.Timestamp):
        return v.isoformat()
    return v


def censored(status) -> bool:
    """A timed run that did not grok (not_grokked, diverged)."""
    return status in TIMED and status != "grokked"


def swept(T: pd.DataFrame) -> list[str]:
    """Config columns whose value varies across the rows (the swept axes), arm first. Looked
    at on one row per config (config columns do not vary within one), each column compared
    with its first value (no hashing of every cell)."""
    cols = [c for c in T.columns if c not in NOT_SWEPT and not c.startswith(METRIC_PREFIX)]
    if "config_hash" in T.columns and len(T):
        T = T.drop_duplicates("config_hash")
    out = []
    for c in cols:
        v = T[c].to_numpy()
        if not len(v):
            continue
        na = pd.isna(v) if v.dtype == object or v.dtype.kind in "fmM" else None
        if na is not None and na.any():
            varies = not na.all()
        else:
            try:
                varies = bool(np.any(v != v[0]))
            except (TypeError, ValueError):  # cells that do not compare (lists): as text
                varies = T[c].astype(str).nunique() > 1
        if varies:
            out.append(c)
    return sorted(out, key=lambda c: (c != "arm", c != "group", c))


def overview(ix: SweepIndex) -> dict:
    """Planned / done / failed / pending, grok rate per arm, ETA, run ids, problems."""
    T = ix.frame(["started_at", "finished_at"])
    plan = ix.plan or {}
    planned = plan["n_trials"] * len(plan["seeds"]) if plan.get("n_trials") and \
        plan.get("seeds") else None
    counts = T["status"].value_counts().to_dict() if len(T) else {}
    failed_cfg = int(T.loc[T["status"] == "failed", "config_hash"].nunique()) if len(T) else 0
    arms = []
    for i, (arm, g) in enumerate(T.groupby("arm", sort=True)) if len(T) else []:
        st = g["status"]
        ok = int((st != "failed").sum())
        k = int((st == "grokked").sum())
        arms.append({"arm": arm, "color": color(i), "seeds": int(len(g)), "grokked": k,
                     "censored": int(st.isin(["not_grokked", "diverged"]).sum()),
                     "failed": int((st == "failed").sum()),
                     "grok_rate": k / ok if ok else None})
    pending = None if planned is None else max(0, planned - len(T))
    return {
        "name": ix.name, "path": reader.strip_query(ix.path), "version": ix.version,
        "rows": int(len(T)), "trials": int(T["config_hash"].nunique()) if len(T) else 0,
        "trials_failed": failed_cfg, "planned_rows": planned,
        "planned_trials": plan.get("n_trials"), "pending_rows": pending,
        "by_status": {s: int(counts.get(s, 0)) for s in STATUSES},
        "eta_s": _eta(T, pending), "arms": arms,
        "run_ids": sorted(T["run_id"].astype(str).unique().tolist()) if len(T) else [],
        "problems": sorted(ix.problems.values()), "files": ix.n_files,
        "changed_at": ix.changed_at, "swept": ix.swept() if len(T) else [],
    }


def _eta(T: pd.DataFrame, pending: int | None) -> float | None:
    """Seconds left at the rate rows were written so far (None when unknown or done)."""
    if not pending or not len(T) or "finished_at" not in T or "started_at" not in T:
        return None
    start = pd.to_datetime(T["started_at"], utc=True, errors="coerce").min()
    end = pd.to_datetime(T["finished_at"], utc=True, errors="coerce").max()
    span = (end - start).total_seconds() if pd.notna(start) and pd.notna(end) else 0.0
    return pending * span / len(T) if span > 0 else None


def _filtered(T: pd.DataFrame, where: dict[str, list[str]]) -> pd.DataFrame:
    """Rows whose column values (as text) are among the given ones, for every filter."""
    for col, values in where.items():
        if col not in T.columns:
            raise AnalysisError(f"no column {col!r} to filter by; columns are: "
                                f"{', '.join(sorted(map(str, T.columns)))}")
        T = T[T[col].astype(str).isin(values)]
    return T


def _selected(ix: SweepIndex, columns: list[str], where: dict[str, list[str]]
              ) -> pd.DataFrame:
    """The trials rows `where` keeps, with `columns` (and the filtered ones) converted."""
    names = {*ix.table.column_names, "arm", "cfg"}
    missing = [c for c in where if c not in names]
    if missing:
        raise AnalysisError(f"no column {missing[0]!r} to filter by; columns are: "
                            f"{', '.join(sorted(map(str, names)))}")
    return _filtered(ix.frame([*columns, *where]), where)


def _keys(cfg, seed) -> np.ndarray:
    return np.asarray(cfg, np.int64) * (1 << 32) + np.asarray(seed, np.int64)


def _runs_curves(ix: SweepIndex, T: pd.DataFrame, metric: str, filtered: bool
                 ) -> pd.DataFrame:
    """The curve rows of the runs in T, with arm and config_hash for `curve_bands`."""
    if metric not in ix.curve_columns or T.empty:
        return pd.DataFrame(columns=["arm", "config_hash", "seed", "step", metric])
    C = ix.read_curves([metric], T if filtered else None)
    if C.empty:
        return pd.DataFrame(columns=["arm", "config_hash", "seed", "step", metric])
    arms = sorted(T["arm"].unique())
    lut = np.full(int(max(C["cfg"].max(), T["cfg"].max())) + 1, -1, np.int32)  # cfg -> arm
    lut[T["cfg"].to_numpy()] = pd.Categorical(T["arm"], categories=arms).codes
    code = lut[C["cfg"].to_numpy()]
    keep = code >= 0  # runs with a trials row
    if filtered:  # a filter may keep some seeds of a config only
        keep &= np.isin(_keys(C["cfg"], C["seed"]), _keys(T["cfg"], T["seed"]))
    C = C.loc[keep, ["cfg", "seed", "step", metric]]
    return C.assign(arm=pd.Categorical.from_codes(code[keep], arms), config_hash=C["cfg"])


def metrics_of(ix: SweepIndex) -> list[str]:
    """The curve columns that can be drawn (val_acc first)."""
    skip = {*CURVE_KEY_COLUMNS, "cfg", FID}
    cols = [c for c in ix.curve_columns if c not in skip]
    return sorted(cols, key=lambda c: (c != "val_acc", c != "train_acc", c))


def _band_runs(T: pd.DataFrame, limit: int | None = None) -> pd.DataFrame:
    """The runs whose curves the bands are drawn from: `limit` (`BAND_RUNS_MAX`) shared
    equally by the arms; every run of an arm within its share, else the runs of its configs
    taken in config_hash order (a hash: no order of the swept values) up to its share. What
    a view reads and holds is then bounded."""
    limit = (BAND_RUNS_MAX if limit is None else limit) // max(1, T["arm"].nunique()) \
        if len(T) else 0
    parts = []
    for _, g in T.groupby("arm", sort=False) if len(T) else []:
        if len(g) <= limit:
            parts.append(g)
            continue
        n = g.groupby("config_hash").size().sort_index().cumsum()
        parts.append(g[g["config_hash"].isin(n.index[n <= limit])])
    return pd.concat(parts) if len(parts) > 1 else parts[0] if parts else T


def curves(ix: SweepIndex, metric: str, where: dict[str, list[str]]) -> dict:
    """Median and IQR band per arm (grokray_analysis.curves.curve_bands) over at most
    `BAND_RUNS_MAX` runs in all (`runs_drawn` of `runs`), with each arm's median
    memorization step and Kaplan-Meier median grok step (of all its runs) as markers."""
    metrics = metrics_of(ix)
    if metric not in metrics:
        raise AnalysisError(f"no curve column {metric!r}; columns are: {', '.join(metrics)}")
    T = _selected(ix, DURATION, where)
    drawn = _band_runs(T)
    C = _runs_curves(ix, drawn, metric, bool(where) or len(drawn) < len(T))
    out = {"metric": metric, "metrics": metrics, "version": ix.version, "bands": [],
           "runs_drawn": int(len(drawn)), "runs": int(len(T))}
    if C.empty:
        return out
    res = curve_bands(C, metric=metric)
    arms_all = sorted(ix.frame([])["arm"].unique())
    for b in res.bands:
        g = T[T["arm"] == b.arm]
        mem = pd.to_numeric(g.get("memorize_step"), errors="coerce").dropna() \
            if "memorize_step" in g else pd.Series(dtype=float)
        try:
            d = durations(g)
            km = km_median(d["time"], d["event"])
            grok, cens, max_t = km.median, km.censored, km.max_time
        except AnalysisError:
            grok, cens, max_t = math.nan, False, math.nan
        out["bands"].append({
            "arm": b.arm, "color": color(arms_all.index(b.arm)) if b.arm in arms_all
            else CENSORED, "n_runs": b.n_runs,
            "grokked": int((g["status"] == "grokked").sum()),
            "censored": int(g["status"].isin(["not_grokked", "diverged"]).sum()),
            "step": [float(s) for s in b.step], "median": [_json(v) for v in b.median],
            "lo": [_json(v) for v in b.lo], "hi": [_json(v) for v in b.hi],
            "memorize_step": _json(float(mem.median())) if len(mem) else None,
            "memorized": int(len(mem)),
            "grok_step": _json(max_t if cens else grok), "grok_censored": bool(cens),
        })
    return out


def seed_curves(ix: SweepIndex, arm: str, metric: str, where: dict[str, list[str]],
                limit: int = SEED_CURVES_MAX) -> dict:
    """The own curves of one band's runs (the first `limit` by config and seed)."""
    require_arms(ix.frame([]), [arm])
    T = _selected(ix, DURATION, where)
    T = T[T["arm"] == arm].sort_values(["config_hash", "seed"])
    shown = T.head(limit)
    runs = []
    if metric in ix.curve_columns and len(shown):
        C = ix.read_curves([metric], shown)
        C = C[np.isin(_keys(C["cfg"], C["seed"]), _keys(shown["cfg"], shown["seed"]))]
        by = {k: g for k, g in C.groupby(["cfg", "seed"], sort=False)}
        for r in shown.itertuples(index=False):
            g = by.get((r.cfg, r.seed))
            if g is None:
                continue
            g = g.sort_values("step")
            runs.append({"config_hash": r.config_hash, "seed": int(r.seed), "status": r.status,
                         "censored": censored(r.status),
                         "grok_step": _json(float(r.grok_step)),
                         "memorize_step": _json(getattr(r, "memorize_step", None)),
                         "step": g["step"].astype(float).tolist(),
                         "value": [_json(v) for v in g[metric].astype(float)]})
    return {"arm": arm, "metric": metric, "n_total": int(len(T)), "runs": runs,
            "version": ix.version}


def trials_table(ix: SweepIndex, q: str = "", sort: str | None = None, desc: bool = False,
                 limit: int = TABLE_ROWS) -> dict:
    """The rows holding `q` in some cell (as text, any case), sorted by the column `sort`
    (missing values last, either way): the first `limit` of them, each with its short
    identity, swept values and outcome; `n_match` of `n_rows` rows, and the distinct values
    of each swept column (the page's filters)."""
    names = set(ix.table.column_names) | {"arm"}
    cols = ["config_hash", "seed", *[c for c in ix.swept() if c != "seed"],
            *[c for c in TABLE_OUTCOME if c in names]]
    cols = list(dict.fromkeys(c for c in cols if c in names))
    T = ix.frame(cols)
    n_rows = len(T)
    if q.strip():
        T = T[_holding(T[cols], q.strip().lower())]
    if sort in cols and len(T):
        try:
            T = T.sort_values(sort, ascending=not desc, na_position="last", kind="stable")
        except TypeError:  # cells that do not compare (mixed types): as text
            T = T.iloc[np.argsort(T[sort].astype(str).to_numpy(), kind="stable")[::(
                -1 if desc else 1)]]
    rows = [[_json(v) for v in row]
            for row in T[cols].head(limit).itertuples(index=False, name=None)]
    values = {}
    for c in cols:
        if c in TABLE_OUTCOME or c == "config_hash":
            continue
        u = pd.unique(ix.frame([c])[c].dropna())
        values[c] = [_json(v) for v in u[:FILTER_VALUES_MAX]]
    return {"columns": cols, "rows": rows, "n_rows": int(n_rows), "n_match": int(len(T)),
            "values": values, "version": ix.version}


def _holding(T: pd.DataFrame, q: str) -> np.ndarray:
    """Which rows hold `q` in some cell, written as the page writes it (lower case): each
    distinct value of a column is formatted once."""
    hit = np.zeros(len(T), bool)
    for c in T.columns:
        codes, uniq = pd.factorize(T[c], use_na_sentinel=True)
        if not len(uniq):
            continue
        text = np.array([q in _text(v) for v in uniq] + [False])  # -1 (missing): no
        hit |= text[codes]
    return hit


def _text(v) -> str:
    """A cell as the page prints it (JSON, then JavaScript's String): 3.0 -> '3'."""
    v = _json(v)
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v).lower()


def parcoords(ix: SweepIndex) -> dict:
    """A Plotly parallel-coordinates figure of the swept values and the grok step; lines
    coloured by log10 grok step, censored runs grey (at the top of the colour scale); at most
    `PARCOORDS_RUNS_MAX` lines, evenly spaced over the runs (the title says so)."""
    axes = ix.swept()
    T = ix.frame([*axes, *DURATION])
    T = T[T["status"] != "failed"]
    n_runs = len(T)
    if n_runs > PARCOORDS_RUNS_MAX:
        T = T.iloc[np.linspace(0, n_runs - 1, PARCOORDS_RUNS_MAX).round().astype(int)]
    dims = []
    for c in [a for a in swept(T) if a in axes] + ["grok_step"]:
        v = T[c]
        if c == "grok_step":
            budget = durations(T)["time"] if len(T) else v
            vals = np.where(T["status"] == "grokked", v, budget.reindex(T.index))
            dims.append({"label": "grok step (censored: budget)",
                         "values": [_json(float(x)) for x in vals]})
        elif pd.api.types.is_numeric_dtype(v):
            dims.append({"label": c, "values": [_json(float(x)) for x in v]})
        else:
            cats = sorted(v.astype(str).unique())
            dims.append({"label": c, "values": [cats.index(x) for x in v.astype(str)],
                         "tickvals": list(range(len(cats))), "ticktext": cats})
    g = pd.to_numeric(T["grok_step"], errors="coerce").to_numpy(float)
    logg = np.log10(np.where(g > 0, g, np.nan))
    finite = logg[np.isfinite(logg)]
    lo, hi = (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 1.0)
    hi = hi if hi > lo else lo + 1.0
    top = hi + (hi - lo) * 0.05  # censored runs sit above the grokked range: grey
    colour = np.where(T["status"] == "grokked", logg, top)
    cut = (hi - lo) / (top - lo)
    scale = [[0, "#440154"], [cut * 0.5, "#21918c"], [cut, "#fde725"],
             [min(1.0, cut + 1e-6), CENSORED], [1, CENSORED]]
    fig = {"data": [{"type": "parcoords", "dimensions": dims,
                     "line": {"color": [_json(float(x)) for x in colour], "colorscale": scale,
                              "cmin": lo, "cmax": top, "showscale": True,
                              "colorbar": {"title": {"text": "log10 grok step<br>(grey: "
                                                             "censored)"}}}}],
           "layout": {"margin": {"l": 60, "r": 60, "t": 50, "b": 30},
                      "title": {"text": (f"{len(T)} runs" if len(T) == n_runs else
                                         f"{len(T)} of {n_runs} runs, evenly spaced")
                                        + ": swept values and grok step "
                                        f"({int((T['status'] == 'grokked').sum())} grokked, "
                                        f"{int(T['status'].map(censored).sum())} censored)",
                                "font": {"size": 13}}}}
    return {"figure": fig, "version": ix.version}


def compare(a: SweepIndex, b: SweepIndex) -> dict:
    """Two sweeps side by side: per arm, seeds, grokked, censored and the Kaplan-Meier median
    grok step (with '>' when censored)."""
    def arms(ix: SweepIndex) -> list[dict]:
        T = ix.frame(DURATION)
        out = []
        for arm, g in T.groupby("arm", sort=True) if len(T) else []:
            row = {"arm": arm, "seeds": int(len(g)),
                   "grokked": int((g["status"] == "grokked").sum()),
                   "censored": int(g["status"].isin(["not_grokked", "diverged"]).sum())}
            try:
                d = durations(g)
                km = km_median(d["time"], d["event"])
                row["median_grok_step"] = _json(km.max_time if km.censored else km.median)
                row["median_censored"] = bool(km.censored)
            except AnalysisError:
                row["median_grok_step"], row["median_censored"] = None, False
            out.append(row)
        return out

    return {"a": {"name": a.name, "path": reader.strip_query(a.path), "arms": arms(a)},
            "b": {"name": b.name, "path": reader.strip_query(b.path), "arms": arms(b)},
            "at": time.time()}
