"""Known truth for the power law's intervals: trials tables in the real schema (group,
group_order, seed, arm, status, grok_step, steps_run) with grok steps

    T = c * |G|^alpha * exp(u_group + e_run),   u ~ N(0, group_sd^2),  e ~ N(0, sigma^2),

censored at one budget. scripts/powerlaw_coverage.py, benchmarks/bench_powerlaw_groups.py and
tests/unit/test_analysis_grouped.py count on these tables how often an interval covers the true
alpha; one simulator serves all three, so a coverage figure in docs/analysis.md and a test's
check are made on the same data.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd


def label(j: int, order: float) -> str:
    """The group name of entry j of `orders` (equal orders are distinct groups): G{j}_{order}."""
    return f"G{j}_{order:g}"


def simulate(rng: np.random.Generator, orders, seeds: int, *, c: float, alpha: float,
             sigma: float, group_sd: float = 0.0, budget: float = np.inf,
             arm: str = "a") -> pd.DataFrame:
    """One trials table: `seeds` runs of one group per entry of `orders` (group orders, named
    by `label`; or a mapping of group name to order), each group's effect u drawn first, then
    its runs' effects e, from `rng` in that order. A run with T <= budget grokked at T; the rest
    did not grok and ran `budget` steps (a grokked run's steps_run is the budget, or T when
    there is none)."""
    named = isinstance(orders, Mapping)
    groups = list(orders.items()) if named else [(label(j, n), n) for j, n in enumerate(orders)]
    rows = []
    for name, n in groups:
        u = group_sd * rng.normal()
        for s in range(seeds):
            t = c * n**alpha * np.exp(u + sigma * rng.normal())
            ok = t <= budget
            run = budget if np.isfinite(budget) else t
            rows.append({"group": name, "group_order": float(n), "seed": s, "arm": arm,
                         "status": "grokked" if ok else "not_grokked",
                         "grok_step": float(t) if ok else np.nan, "steps_run": float(run)})
    return pd.DataFrame(rows)


def budget_for(share: float, orders, *, c: float, alpha: float, sigma: float,
               group_sd: float = 0.0, draws: int = 20000, seed: int = 12345) -> float:
    """The budget that censors a share of the runs on average (inf for a share of 0): the
    (1 - share) quantile of log T over `draws` simulated tables (its own numpy seed)."""
    if share <= 0:
        return float("inf")
    rng = np.random.default_rng(seed)
    x = np.log(np.asarray(orders, float))
    logt = np.log(c) + alpha * x[None, :] + rng.normal(0, np.hypot(group_sd, sigma),
                                                        (draws, len(x)))
    return float(np.exp(np.quantile(logt, 1 - share)))


def arrays(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(log order, log time, event, group) of a trials table: what `grouped.group_interval`
    takes; the time is the grok step of a grokked run and steps_run of the others."""
    ev = (df["status"] == "grokked").to_numpy()
    t = np.where(ev, df["grok_step"], df["steps_run"]).astype(float)
    return np.log(df["group_order"].to_numpy(float)), np.log(t), ev, df["group"].to_numpy()
