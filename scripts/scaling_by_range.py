"""The power law's exponent per arm over all orders and per order range, from a sweep's rows.

For each arm (`--by`, default the arm: a label such as `dihedral` or `linear_4k`) prints the
censored fit's alpha with its group-unit and per-run 95% intervals over every group, then over
the groups of order <= `--split` and > `--split` (grokray_analysis.powerlaw.fit_power_law, the
fit `grokray analyze scaling` makes). No training: only the Parquet the sweep wrote.

    python scripts/scaling_by_range.py OUT/diag_order_family --split 24
    python scripts/scaling_by_range.py OUT/scaling_cpu OUT/diag_capacity_margin --by model_rank \
        --groups S3 Heis3 A5 Z97 S5 --seeds 0 1
"""

from __future__ import annotations

import argparse

from grokray_analysis.load import load
from grokray_analysis.powerlaw import fit_power_law


def _row(T, arm: str, by: str, what: str) -> str:
    f = fit_power_law(T, arm, by=by, n_boot=0)
    orders = sorted(int(o) for o in T.loc[T[by].astype(str) == arm, "group_order"].unique())
    span = f"{orders[0]}-{orders[-1]}" if orders else "-"
    if not f.fitted:
        return f"| {arm} | {what} | {span} | {f.reason} | | | |"
    note = f" ({f.note})" if f.note else ""
    return (f"| {arm} | {what} | {span} | {f.alpha:.3f} | [{f.alpha_ci[0]:.3f}, "
            f"{f.alpha_ci[1]:.3f}]{note} | [{f.alpha_run_ci[0]:.3f}, {f.alpha_run_ci[1]:.3f}] | "
            f"{f.n_groups} / {f.n_grokked}/{f.n_runs} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="+", metavar="OUT/SWEEP")
    p.add_argument("--by", default="arm", help="column whose values are fitted apart")
    p.add_argument("--split", type=int, default=24, help="order at which the ranges split")
    p.add_argument("--groups", nargs="+", help="only these groups (default: all)")
    p.add_argument("--seeds", nargs="+", type=int, help="only these seeds (default: all)")
    a = p.parse_args()
    T = load(a.paths).trials.drop_duplicates(["config_hash", "seed"])
    if a.groups:
        T = T[T["group"].astype(str).isin(a.groups)]
    if a.seeds:
        T = T[T["seed"].isin(a.seeds)]
    print("| arm | groups | orders | alpha | 95% (groups as unit) | 95% (per run) | "
          "groups / grokked/runs |")
    print("|---|---|---|---|---|---|---|")
    for arm in sorted(T[a.by].astype(str).unique()):
        sub = T[T[a.by].astype(str) == arm]
        print(_row(sub, arm, a.by, "all"))
        for what, keep in ((f"order <= {a.split}", sub["group_order"] <= a.split),
                           (f"order > {a.split}", sub["group_order"] > a.split)):
            print(_row(sub[keep], arm, a.by, what) if keep.any() else
                  f"| {arm} | {what} | - | no groups | | | |")


if __name__ == "__main__":
    main()
