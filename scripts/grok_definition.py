"""The power law's exponent under other grok-step definitions, from a sweep's stored curves.

For each definition (the stored one; val acc threshold 0.95; eval grids of 100, 250 and 500
steps read from the same curves, grokray_analysis.regrok; a fixed delay of 500 steps added to
every run) prints the censored fit's alpha with its group-unit, per-run and group-bootstrap 95%
intervals; then alpha without each group in turn (`--drop-each`). No training: only the Parquet
the sweep wrote.

    python scripts/grok_definition.py OUT/scaling_cpu [OUT/other_dir ...] --arm forge
"""

from __future__ import annotations

import argparse

from grokray_analysis.load import load
from grokray_analysis.powerlaw import fit_power_law
from grokray_analysis.regrok import redefine

DEFINITIONS = (
    ("as stored (val acc >= 0.99, the sweep's eval grid)", {}),
    ("val acc >= 0.95", {"threshold": 0.95}),
    ("eval grid 100 steps", {"grid": 100}),
    ("eval grid 250 steps", {"grid": 250}),
    ("eval grid 500 steps", {"grid": 500}),
    ("val acc >= 0.95, eval grid 500 steps", {"threshold": 0.95, "grid": 500}),
)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="+", metavar="OUT/SWEEP")
    p.add_argument("--arm", default="forge")
    p.add_argument("--drop-each", action="store_true", help="also alpha without each group")
    a = p.parse_args()
    sweep = load(a.paths)
    T = sweep.trials[sweep.trials["arm"].astype(str) == a.arm]
    T = T.drop_duplicates(["config_hash", "seed"])  # a config run into two dirs counts once
    print("| data | alpha | 95% (groups as unit) | 95% (per run) | 95% (group bootstrap) | c | "
          "grokked/runs |")
    print("|---|---|---|---|---|---|---|")
    rows = [(name, redefine(T, sweep.curves, **kw)) for name, kw in DEFINITIONS]
    rows.append(("500 steps added to every grok step",
                 T.assign(grok_step=T["grok_step"] + 500)))
    if a.drop_each:
        rows += [(f"without {g}", T[T["group"] != g]) for g in T["group"].unique()]
    for name, D in rows:
        f = fit_power_law(D, a.arm)
        if not f.fitted:
            print(f"| {name} | {f.reason} | | | | | {f.n_grokked}/{f.n_runs} |")
            continue
        b = fit_power_law(D, a.arm, interval="group-bootstrap")
        print(f"| {name} | {f.alpha:.3f} | [{f.alpha_ci[0]:.3f}, {f.alpha_ci[1]:.3f}] | "
              f"[{f.alpha_run_ci[0]:.3f}, {f.alpha_run_ci[1]:.3f}] | "
              f"[{b.alpha_ci[0]:.3f}, {b.alpha_ci[1]:.3f}] | {f.c:.0f} | "
              f"{f.n_grokked}/{f.n_runs} |")


if __name__ == "__main__":
    main()
