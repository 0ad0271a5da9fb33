"""CPU seconds (and nominal GPU seconds) of one trial, for the steps each seed runs.

A seed that grokked stops early (patience), so a trial's cost is its per-step cost integrated
over the seeds still active: with r_i the steps seed i runs, a kind's step cost a + S (b + c M)
sums to a * max(r_i) + (b + c M) * sum(r_i). FORGE's steps with the algebra losses on (by its
lambda schedule) and after them are separate kinds. Metrics add their cost per evaluation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grokray.cost import table as cost_table
from grokray.cost.work import algebra_steps, shape, step_macs

FAMILY_KIND = {"mlp": "mlp", "forge": "forge", "transformer": "transformer", "rfm": "rfm",
               "hamiltonian": "hamiltonian"}
"""the kind whose set-up and prior a family uses; a family not listed has no cost model"""


@dataclass(frozen=True)
class TrialCost:
    """One trial's estimate."""

    cpu_s: float
    """process CPU seconds at the reference host's sgemm rate (scale by ref / host rate)"""
    gpu_s: float
    """seconds on one GPU, uncalibrated (FLOPs at a nominal rate plus a per-step floor)"""


def has_model(cfg: Any) -> bool:  # noqa: ANN401 - TrialConfig
    """Whether the stored table covers this config's family."""
    kind = FAMILY_KIND.get(cfg.arch)
    return kind is not None and kind in cost_table.load()["kinds"]


def _phases(cfg: Any) -> list[tuple[str, int, float]]:  # noqa: ANN401
    """(kind, first step, end step) of each stretch of the trial with one step cost."""
    if cfg.arch != "forge":
        return [(FAMILY_KIND[cfg.arch], 0, float("inf"))]
    A = algebra_steps(cfg)
    return [("forge", 0, A), ("forge_late", A, float("inf"))]


def trial_cost(cfg: Any, steps_run: list[int], table: dict | None = None) -> TrialCost:  # noqa: ANN401
    """Cost of `cfg` when its seeds run `steps_run` steps each (RFM: iterations)."""
    t = table or cost_table.load()
    kinds, gpu = t["kinds"], t["gpu"]
    r = [max(0, int(x)) for x in steps_run]
    longest = max(r, default=0)
    main = kinds[FAMILY_KIND[cfg.arch]]
    s = shape(cfg)
    cpu = main["s0"] + main["s1"] * s.pairs / 1e6
    gpu_s = 0.0
    for kind, lo, hi in _phases(cfg):
        k = kinds[kind]
        steps = max(0.0, min(longest, hi) - lo)
        seed_steps = sum(max(0.0, min(x, hi) - lo) for x in r)
        if not steps:
            continue
        M = step_macs(cfg, kind)
        cpu += k["a"] * steps + (k["b"] + k["c"] * M) * seed_steps
        flops = 2e6 * M * seed_steps
        gpu_s += gpu["step_floor_s"] * steps + flops / (gpu["nominal_tflops"] * 1e12)
    cpu += _metrics_s(cfg, r, t["metrics"], min(s.pairs, 2 * cfg.metrics.eval_max_pairs))
    return TrialCost(cpu_s=cpu, gpu_s=gpu_s)


def _metrics_s(cfg: Any, r: list[int], coef: dict[str, float], pairs: int) -> float:  # noqa: ANN401
    """The mechanism metrics' evaluations: cheap ones at every eval, costly ones every
    costly_every evals; a metric the table has not measured costs nothing here."""
    m = cfg.metrics
    evals = sum(x // cfg.eval_every + 1 for x in r)
    per = sum(coef.get(n, 0.0) for n in m.cheap) + \
        sum(coef.get(n, 0.0) for n in m.costly) / m.costly_every
    return per * evals * pairs / 1e6
