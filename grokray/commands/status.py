"""`grokray status OUT/SWEEP`: counts and grok rate per architecture, from the Parquet alone."""

from __future__ import annotations

import argparse
import os


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "status",
        help="counts of a sweep's trials and its grok rate per architecture (reads Parquet)",
        description="Trials done/failed/pending, seeds grokked, and the grok rate per arch "
                    "and arm, from OUT/<sweep>/trials/*.parquet (and plan.json for pending).",
    )
    p.add_argument("sweep_dir", help="a sweep's output dir, e.g. results/smoke")
    p.set_defaults(func=main)


def status_tables(sweep_dir: str) -> dict:
    """The numbers `grokray status` prints (a dict of plain values and DataFrames)."""
    import pandas as pd

    from grokray.errors import GrokrayError
    from grokray.sweep import store

    loc = store.Location.of(sweep_dir)
    if not loc.exists() and "://" not in sweep_dir:
        raise GrokrayError(f"no sweep output at {sweep_dir}; give OUT/<sweep> of a sweep that ran")
    cols = ["config_hash", "seed", "status", "arch", "arm", "group", "run_id", "wall_s"]
    df = store.read_trials(sweep_dir, cols)
    plan = store.read_plan(sweep_dir)
    n_planned = plan["n_trials"] * len(plan["seeds"]) if plan else None
    by_cfg = df.groupby("config_hash")["status"].agg(lambda s: (s == "failed").any()) \
        if len(df) else pd.Series(dtype=bool)
    trials_failed = int(by_cfg.sum())
    out = {
        "sweep_dir": sweep_dir,
        "rows": len(df),
        "trials": int(df["config_hash"].nunique()) if len(df) else 0,
        "trials_failed": trials_failed,
        "planned_trials": plan["n_trials"] if plan else None,
        "planned_rows": n_planned,
        "pending_rows": None if n_planned is None else max(0, n_planned - len(df)),
        "by_status": df["status"].value_counts().to_dict() if len(df) else {},
        "run_ids": sorted(df["run_id"].unique()) if len(df) else [],
    }
    ok = df[df["status"] != "failed"] if len(df) else df
    rows = []
    for key in ("arch", "arm"):
        if not len(ok) or key not in ok:
            continue
        g = ok.groupby(key)["status"]
        t = pd.DataFrame({
            "seeds": g.size(),
            "grokked": g.apply(lambda s: int((s == "grokked").sum())),
        })
        t["grok_rate"] = t["grokked"] / t["seeds"]
        t.index = [f"{key}={i}" for i in t.index]
        rows.append(t)
    out["grok_rate"] = pd.concat(rows) if rows else pd.DataFrame(
        columns=["seeds", "grokked", "grok_rate"])
    return out


def render_status(sweep_dir: str) -> str:
    """The text `grokray status` prints."""
    s = status_tables(sweep_dir)
    st = s["by_status"]
    planned = s["planned_rows"]
    lines = [
        f"sweep {os.path.basename(sweep_dir.rstrip('/'))} ({sweep_dir}): "
        f"{s['trials']} trials with rows ({s['trials_failed']} with failures), "
        f"{s['rows']} seed-rows" + (f" of {planned} planned, {s['pending_rows']} pending"
                                    if planned is not None else ""),
        "seeds: " + ", ".join(f"{k} {st.get(k, 0)}" for k in
                               ("grokked", "not_grokked", "diverged", "failed")),
        f"runs: {', '.join(s['run_ids']) or '-'}",
    ]
    t = s["grok_rate"]
    if len(t):
        lines.append(f"{'':24s} {'seeds':>6s} {'grokked':>8s} {'rate':>6s}")
        for name, r in t.iterrows():
            lines.append(f"{name:24s} {int(r['seeds']):6d} {int(r['grokked']):8d} "
                         f"{r['grok_rate']:6.2f}")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    print(render_status(args.sweep_dir))
    return 0
