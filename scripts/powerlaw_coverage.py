"""Coverage of the power-law exponent's 95% intervals on known truth, with group effects.

Simulates trials tables in the real schema (grokray_analysis.simulate: group, group_order, seed,
arm, status, grok_step, steps_run) with grok steps

    T = c * |G|^alpha * exp(u_group + e_run),   u ~ N(0, group_sd^2),  e ~ N(0, sigma^2),

censored at one budget (`--budget`, or `--censored P`: the budget that censors a share P of the
runs on average), and counts how often each interval covers the true alpha (and c), with the
median width, for every candidate of grokray_analysis.grouped (`per-run` is the interval that
treats every run as independent; `--group-sd 0` is the model without group effects) and for
`fit_power_law`'s default (`default`) and OLS on the grokked runs (`ols`). For example

    python scripts/powerlaw_coverage.py --sims 40
    python scripts/powerlaw_coverage.py --group-sd 0.3 --sigma 0.2 --c 732 --alpha 0.17 \
        --groups ledger --seeds 5 --censored 0.2 --sims 200

benchmarks/bench_powerlaw_groups.py runs the grid of scenarios behind docs/analysis.md's table.
"""

from __future__ import annotations

import argparse

import numpy as np

from grokray_analysis.grouped import CANDIDATES, group_interval
from grokray_analysis.powerlaw import fit_power_law
from grokray_analysis.simulate import arrays, budget_for, simulate

ORDERS = {
    # the CPU ledger's scaling sweep: S3 D4 Q8 A4 Dic3 D6 S3xZ3 F21 S4 Heis3 A5 Z97 S5
    "ledger": (6, 8, 8, 12, 12, 12, 18, 21, 24, 27, 60, 97, 120),
    # grokray's 20-group scaling family (the paper's count), up to A7 (2,520)
    "paper": (6, 8, 8, 12, 12, 12, 18, 21, 24, 27, 60, 97, 120, 125, 168, 360, 660, 720, 1009,
              2520),
    # 12 orders from 6 to 2,520, one group each
    "wide": (6, 8, 12, 24, 60, 120, 168, 360, 660, 720, 1320, 2520),
}


def coverage(args, sims: int, rng: np.random.Generator, methods=CANDIDATES) -> dict:
    """{method: (covered alpha, covered c, widths of alpha's interval, fits, estimates)} and
    the mean censored share over `sims` data sets of one scenario."""
    orders = ORDERS.get(args.groups) or tuple(float(o) for o in args.groups.split(","))
    truth = dict(c=args.c, alpha=args.alpha, sigma=args.sigma, group_sd=args.group_sd)
    budget = args.budget if args.budget else budget_for(args.censored, orders, **truth)
    out = {m: [0, 0, [], 0, []] for m in methods}
    cens = []
    for _ in range(sims):
        df = simulate(rng, orders, args.seeds, budget=budget, **truth)
        cens.append(float((df["status"] != "grokked").mean()))
        x, y, ev, g = arrays(df)
        for m in methods:
            if m == "ols":
                f = fit_power_law(df, "a", method="ols", n_boot=0)
                ok, lo, hi = f.fitted, (np.log(f.c_ci[0]), f.alpha_ci[0]), \
                    (np.log(f.c_ci[1]), f.alpha_ci[1])
            elif m == "default":
                f = fit_power_law(df, "a")
                ok, lo, hi = f.fitted, (np.log(f.c_ci[0]), f.alpha_ci[0]), \
                    (np.log(f.c_ci[1]), f.alpha_ci[1])
            else:
                r = group_interval(x, y, ev, g, m, n_boot=args.n_boot,
                                   seed=int(rng.integers(2**31)))
                ok, lo, hi, f = not r.reason, r.lo, r.hi, r
            if not ok:
                continue
            o = out[m]
            o[4].append(float(f.alpha) if m in ("ols", "default") else float(f.coef[1]))
            o[0] += lo[1] < args.alpha < hi[1]
            o[1] += lo[0] < np.log(args.c) < hi[0]
            o[2].append(hi[1] - lo[1])
            o[3] += 1
    return out, float(np.mean(cens))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--groups", default="wide",
                   help="orders of the groups: ledger (13), paper (20), wide (12, one each), "
                        "or a comma list")
    p.add_argument("--seeds", type=int, default=6, help="runs per group")
    p.add_argument("--c", type=float, default=100.0)
    p.add_argument("--alpha", type=float, default=0.8)
    p.add_argument("--sigma", type=float, default=0.4, help="sd of the run effect (log scale)")
    p.add_argument("--group-sd", type=float, default=0.0,
                   help="sd of the group effect u (log scale; 0: no group effect)")
    p.add_argument("--budget", type=float, default=0.0, help="censoring budget (steps)")
    p.add_argument("--censored", type=float, default=0.2,
                   help="share of runs censored on average, when no --budget (default 0.2)")
    p.add_argument("--sims", type=int, default=20)
    p.add_argument("--n-boot", type=int, default=999, help="group bootstrap resamples")
    p.add_argument("--methods", nargs="+", default=list(CANDIDATES) + ["ols"],
                   choices=list(CANDIDATES) + ["ols", "default"])
    p.add_argument("--rng", type=int, default=1, help="numpy seed")
    return p


def main() -> None:
    a = parser().parse_args()
    out, cens = coverage(a, a.sims, np.random.default_rng(a.rng), a.methods)
    print(f"{a.sims} data sets, {cens:.0%} of runs censored, true alpha {a.alpha}, "
          f"group sd {a.group_sd}, run sd {a.sigma}")
    for m, (ca, cc, w, n, est) in out.items():
        print(f"{m:>10}: alpha covered {ca}/{n} ({ca / max(n, 1):.0%}), c covered {cc}/{n}, "
              f"median width of alpha's interval {np.median(w) if w else float('nan'):.3f}, "
              f"mean estimate {np.mean(est) if est else float('nan'):.3f}")


if __name__ == "__main__":
    main()
