"""`grokray status OUT/SWEEP`: counts and grok rate per arm, from the Parquet alone.

Rows of one identity written twice (two drivers on one dir, before the lock) are counted once,
with a warning. A damaged file (truncated, foreign, not a grokray table; trials, curves or
`grokray recompute`'s) is named with how to repair it, and the command exits 2; so does a trial
whose curves file is missing.
`grokray status --repair OUT/SWEEP` moves such files into `OUT/SWEEP/quarantine/` (nothing is
deleted), removes duplicate rows (the newest run is kept) and what an interrupted writer left;
the next `grokray sweep` runs the quarantined trials again.
"""

from __future__ import annotations

import argparse
import json
import sys

from grokray.errors import GrokrayError, SchemaError
from grokray.sweep.lock import WriterLock


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "status",
        help="counts of a sweep's trials and its grok rate per arm (reads Parquet)",
        description="Trials done/failed/pending, seeds grokked, and the grok rate per arm "
                    "(its architecture beside an arm named otherwise), from "
                    "OUT/<sweep>/trials/*.parquet (and plan.json for pending).",
    )
    p.add_argument("sweep_dir", help="a sweep's output dir, e.g. results/smoke")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    p.add_argument("--repair", action="store_true",
                   help="move damaged files and trials without curves into quarantine/, drop "
                        "duplicate rows; then rerun the sweep to fill the gaps")
    p.set_defaults(func=main)


def status_tables(sweep_dir: str) -> dict:
    """The numbers `grokray status` prints (a dict of plain values and DataFrames).

    Raises SchemaError naming every damaged file and every trial whose curves are missing."""
    # lazy: loads pandas, kept out of `grokray --help`
    import pandas as pd

    # lazy: loads pandas, kept out of `grokray --help`
    from grokray import reader
    from grokray.schema import ID_COLUMNS, STATUSES
    from grokray.sweep import store

    try:
        loc = store.Location.of(sweep_dir)
        exists = loc.is_dir()
    except (OSError, ValueError) as exc:
        raise GrokrayError(f"cannot open {sweep_dir}: {' '.join(str(exc).split())[:200]}") \
            from None
    if not exists:
        raise GrokrayError(f"no sweep output at {sweep_dir}; give OUT/<sweep> of a sweep that ran")
    cols = [*ID_COLUMNS, "arch", "arm", "group", "wall_s"]
    t = reader.read_dir(loc, store.TRIALS, columns=cols, required=ID_COLUMNS)
    c = reader.check_dir(loc, store.CURVES, required=("config_hash", "seed", "step"))
    _, r_damaged = reader.read_recomputed(loc, columns=["config_hash"])
    shown = reader.strip_query(sweep_dir)
    problems = [d.line(shown) for d in t.damaged + c.damaged + r_damaged]
    for name in store.missing_curves(sweep_dir, t.frame):
        problems.append(f"{loc.join(store.CURVES, name)}: missing (the curves of "
                        f"{loc.join(store.TRIALS, name)}); repair: grokray status --repair "
                        f"{shown} (moves the trials file to quarantine/; its trials run "
                        "again on the next sweep)")
    if problems:
        raise SchemaError("\n".join(problems))
    df, dropped, dup_ids = reader.dedupe(t.frame)
    plan = reader.read_plan(sweep_dir)
    n_planned = plan["n_trials"] * len(plan["seeds"]) if plan else None
    by_cfg = df["status"].eq("failed").groupby(df["config_hash"]).any() \
        if len(df) else pd.Series(dtype=bool)  # vectorized: one pass, whatever the configs
    counts = df["status"].value_counts().to_dict() if len(df) else {}
    out = {
        "sweep_dir": sweep_dir,
        "rows": len(df),
        "trials": int(df["config_hash"].nunique()) if len(df) else 0,
        "trials_failed": int(by_cfg.sum()),
        "planned_trials": plan["n_trials"] if plan else None,
        "planned_rows": n_planned,
        "pending_rows": None if n_planned is None else max(0, n_planned - len(df)),
        "by_status": {k: int(counts.get(k, 0)) for k in STATUSES},
        "run_ids": sorted(df["run_id"].unique()) if len(df) else [],
        "duplicate_rows": dropped,
        "duplicate_identities": dup_ids,
    }
    ok = df[df["status"] != "failed"] if len(df) else df
    out["grok_rate"] = arm_table(ok)
    return out


def arm_table(ok):  # noqa: ANN001, ANN201 - DataFrames (pandas imported lazily)
    """Seeds, grokked and grok rate per arm (the arch where rows carry no arm), indexed by the
    arm; `arch`: its architecture(s), shown beside an arm named otherwise."""
    # lazy: loads pandas, kept out of `grokray --help`
    import pandas as pd

    key = "arm" if "arm" in ok and ok["arm"].notna().all() else "arch"
    if not len(ok) or key not in ok:
        return pd.DataFrame(columns=["arch", "seeds", "grokked", "grok_rate"])
    g = ok.groupby(key)
    tab = pd.DataFrame({
        "arch": g["arch"].agg(lambda a: ",".join(sorted(set(map(str, a))))),
        "seeds": g.size(),
        "grokked": ok["status"].eq("grokked").groupby(ok[key]).sum().astype(int),
    })
    tab["grok_rate"] = tab["grokked"] / tab["seeds"]
    tab.index = tab.index.map(str)
    return tab


def _warning(s: dict) -> str | None:
    if not s["duplicate_rows"]:
        return None
    return (f"warning: {s['duplicate_rows']} duplicate row(s) of {s['duplicate_identities']} "
            "identities (config_hash, seed) counted once, the newest run kept (two drivers "
            f"wrote this dir?); `grokray status --repair {s['sweep_dir']}` removes them")


def render_status(sweep_dir: str, s: dict | None = None) -> str:
    """The text `grokray status` prints (a URL shown without its query, which may carry an
    endpoint or credentials)."""
    from grokray.reader import display_name, strip_query  # lazy: loads pandas
    s = s or status_tables(sweep_dir)
    st = s["by_status"]
    planned = s["planned_rows"]
    lines = [
        f"sweep {display_name(sweep_dir)} ({strip_query(sweep_dir)}): "
        f"{s['trials']} trials with rows ({s['trials_failed']} with failures), "
        f"{s['rows']} seed-rows" + (f" of {planned} planned, {s['pending_rows']} pending"
                                    if planned is not None else ""),
        "seeds: " + ", ".join(f"{k} {v}" for k, v in st.items()),
        runs_line(s["run_ids"]),
    ]
    t = s["grok_rate"]
    if len(t):
        names = [name if r["arch"] == name else f"{name} ({r['arch']})"
                 for name, r in t.iterrows()]
        width = max(24, *map(len, names))
        lines.append(f"{'arm':{width}s} {'seeds':>6s} {'grokked':>8s} {'rate':>6s}")
        for name, (_, r) in zip(names, t.iterrows(), strict=True):
            lines.append(f"{name:{width}s} {int(r['seeds']):6d} {int(r['grokked']):8d} "
                         f"{r['grok_rate']:6.2f}")
    return "\n".join(lines)


RUNS_SHOWN = 4
"""run ids `status` names one by one; more are counted, the oldest and newest named"""


def runs_line(run_ids: list[str]) -> str:
    """`runs: a, b` for a few run ids (sorted: ids begin with their start time), else `runs: N
    (first A, last B)`: a store of 10^5 trials may hold thousands of runs (`--json` lists
    every one)."""
    if len(run_ids) <= RUNS_SHOWN:
        return f"runs: {', '.join(run_ids) or '-'}"
    return f"runs: {len(run_ids)} (first {run_ids[0]}, last {run_ids[-1]})"


def status_json(s: dict) -> str:
    """`--json`: every figure, the grok-rate table as a list of rows."""
    t = s["grok_rate"]
    plain = {k: v for k, v in s.items() if k != "grok_rate"}
    plain["grok_rate"] = [{"arm": name, "arch": r["arch"], "seeds": int(r["seeds"]),
                           "grokked": int(r["grokked"]), "grok_rate": float(r["grok_rate"])}
                          for name, r in t.iterrows()]
    return json.dumps(plain)


def repair(sweep_dir: str) -> int:
    # lazy: loads torch and pandas, kept out of `grokray --help`
    from grokray.sweep import store

    with WriterLock(sweep_dir, f"grokray status --repair {sweep_dir}"):
        done = store.repair_damaged(sweep_dir)
        from grokray.sweep.checkpoint_store import repair as repair_checkpoints  # as `store` above

        done.update({k: [str(v)] for k, v in repair_checkpoints(sweep_dir).items()})
    for path in done["damaged"]:
        print(f"moved damaged file to {path}")
    for path in done["missing_curves"]:
        print(f"moved trials file without curves to {path} (its trials run again on the next "
              "sweep)")
    print("removed: " + ", ".join(f"{k.replace('_', ' ')} {v[0]}" for k, v in done.items()
                                  if k not in ("damaged", "missing_curves")))
    return 0


def main(args: argparse.Namespace) -> int:
    if args.repair:
        repair(args.sweep_dir)
    s = status_tables(args.sweep_dir)
    warn = _warning(s)
    if warn:
        print(warn, file=sys.stderr)
    print(status_json(s) if args.json else render_status(args.sweep_dir, s))
    return 0
