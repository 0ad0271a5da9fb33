"""The power law's exponent under other grok-step definitions, from a sweep's stored curves.

For each definition (the stored one; val acc threshold 0.95; eval grids of 100, 250 and 500
steps read from the same curves; grokray_analysis.regrok) prints the censored fit's alpha with
its group-unit and per-run 95% intervals. No training: only the Parquet the sweep wrote.

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
    a = p.parse_args()
    sweep = load(a.paths)
    T = sweep.trials[sweep.trials["arm"].astype(str) == a.arm]
    print("| definition | alpha | 95% (groups as unit) | 95% (per run) | c | grokked/runs |")
    print("|---|---|---|---|---|---|")
    for name, kw in DEFINITIONS:
        f = fit_power_law(redefine(T, sweep.curves, **kw), a.arm)
        if not f.fitted:
            print(f"| {name} | {f.reason} | | | | {f.n_grokked}/{f.n_runs} |")
            continue
        print(f"| {name} | {f.alpha:.3f} | [{f.alpha_ci[0]:.3f}, {f.alpha_ci[1]:.3f}] | "
              f"[{f.alpha_run_ci[0]:.3f}, {f.alpha_run_ci[1]:.3f}] | {f.c:.0f} | "
              f"{f.n_grokked}/{f.n_runs} |")


if __name__ == "__main__":
    main()
