"""The cost of what a sweep plan still has to run: CPU hours on this host and nominal GPU hours,
each as an upper bound (every seed to its budget) and an expected time (the steps of earlier
rows of the same configs, else the prior of steps.PRIOR), and the wall time on the sweep's
concurrent slots (longest trials first, as the warm workers take them)."""

from __future__ import annotations

import heapq
import os
from dataclasses import dataclass, field
from typing import Any

from grokray.cost import table as cost_table
from grokray.cost.host import host_gflops
from grokray.cost.model import TrialCost, has_model, trial_cost
from grokray.cost.steps import PRIOR, budget, expected_steps, rows_steps

TRIAL_OVERHEAD_S = 0.04
"""wall seconds per trial outside it on warm workers: the driver's Parquet write (0.02-0.04 s;
benchmarks/README.md, "Sweep overhead")"""
START_S = 6.0
"""wall seconds before a sweep's first trial in a fresh Ray session: ray.init 3-4 s and the
workers' imports 2 s (same source); a later sweep of `grokray reproduce` pays none"""
BUILD_MAX = 5000
"""configs priced one by one up to this many (as many as a dry run resolves `auto` shapes for);
a larger grid is priced as its base config times its size (stated)"""


@dataclass(frozen=True)
class SweepCost:
    """A plan's estimate (seconds; `cpu_*` at this host's speed)."""

    trials: int
    cpu_s_upper: float
    cpu_s_expected: float
    wall_s_upper: float
    wall_s_expected: float
    gpu_s_upper: float
    gpu_s_expected: float
    slots: int
    host_gflops: float
    host_source: str
    ref_gflops: float
    from_rows: int
    """configs whose expected steps came from rows on disk (the rest: the prior)"""
    no_model: list[str] = field(default_factory=list)
    """families without a cost model (their trials are left out of every figure)"""
    approx: str = ""
    """how the configs were priced when not one by one"""


def todo_configs(plan: Any) -> tuple[list[Any], int, str]:  # noqa: ANN401 - Plan
    """(configs to price, how many trials each stands for, a note when approximated)."""
    spec = plan.spec
    if spec.search is not None:
        return [spec.base], plan.n_todo_trials, "a search: its base config x num_samples"
    if not plan.counted:
        return list(plan.todo), 1, ""
    if spec.n_points <= BUILD_MAX:
        return list(spec.trials()), 1, ""
    return [spec.base], spec.n_points, f"{spec.n_points:,} grid points priced as its base config"


def slots_of(spec: Any, n_cpus: int | None = None) -> int:  # noqa: ANN401 - SweepSpec
    """Trials at once on this machine: the spec's concurrency, at most the CPUs its trials fit
    in (a trial holds `cpu` CPUs)."""
    cpus = n_cpus or os.cpu_count() or 1
    fit = max(1, int(cpus // max(spec.cpu, 1e-9))) if spec.cpu else cpus
    return max(1, min(spec.concurrency or fit, fit))


def makespan(times: list[float], slots: int) -> float:
    """Wall time of jobs taken longest first by `slots` workers."""
    load = [0.0] * max(1, slots)
    for t in sorted(times, reverse=True):
        heapq.heapreplace(load, load[0] + t)
    return max(load, default=0.0)


def estimate_plan(plan: Any, *, start_s: float = START_S, n_cpus: int | None = None,  # noqa: ANN401
                  trials_df: Any = None) -> SweepCost:  # noqa: ANN401
    """Price what `plan` still has to run; `trials_df`: rows to read expected steps from
    (default: the rows in the sweep's dir)."""
    spec = plan.spec
    if trials_df is None:
        trials_df = _rows(spec.sweep_dir)
    rows = rows_steps(trials_df)
    ref = float(cost_table.load()["reference_host"]["sgemm_gflops"])
    rate, source = host_gflops()
    scale = ref / rate
    cfgs, mult, approx = todo_configs(plan)
    upper: list[TrialCost] = []
    expected: list[TrialCost] = []
    no_model: set[str] = set()
    from_rows = 0
    for cfg in cfgs:
        if not has_model(cfg):
            no_model.add(cfg.arch)
            continue
        steps, seen = expected_steps(cfg, rows.get(cfg.config_hash()))
        from_rows += seen
        upper += [trial_cost(cfg, [budget(cfg)] * len(cfg.seeds))] * mult
        expected += [trial_cost(cfg, steps)] * mult
    slots = slots_of(spec, n_cpus)
    n = len(upper)

    def wall(costs: list[TrialCost]) -> float:
        if not costs:
            return 0.0
        return start_s + makespan([c.cpu_s * scale for c in costs], slots) + \
            TRIAL_OVERHEAD_S * len(costs)

    return SweepCost(
        trials=n, cpu_s_upper=scale * sum(c.cpu_s for c in upper),
        cpu_s_expected=scale * sum(c.cpu_s for c in expected),
        wall_s_upper=wall(upper), wall_s_expected=wall(expected),
        gpu_s_upper=sum(c.gpu_s for c in upper), gpu_s_expected=sum(c.gpu_s for c in expected),
        slots=slots, host_gflops=rate, host_source=source, ref_gflops=ref,
        from_rows=from_rows * mult, no_model=sorted(no_model), approx=approx)


def _rows(sweep_dir: str) -> Any:  # noqa: ANN401
    from grokray.errors import GrokrayError
    from grokray.sweep import store

    try:
        return store.read_trials(sweep_dir, columns=["config_hash", "seed", "status",
                                                     "steps_run"])
    except (GrokrayError, OSError, ValueError, KeyError):
        return None


def cost_json(c: SweepCost) -> dict[str, Any]:
    """The `--dry-run --json` keys."""
    return {
        "cpu_hours_upper": round(c.cpu_s_upper / 3600, 4),
        "cpu_hours_expected": round(c.cpu_s_expected / 3600, 4),
        "wall_hours_upper": round(c.wall_s_upper / 3600, 4),
        "wall_hours_expected": round(c.wall_s_expected / 3600, 4),
        "gpu_hours_upper": round(c.gpu_s_upper / 3600, 4),
        "gpu_hours_expected": round(c.gpu_s_expected / 3600, 4),
        "gpu_calibrated": False,
        "cost_model": {
            "slots": c.slots, "host_sgemm_gflops": round(c.host_gflops, 1),
            "host_sgemm_source": c.host_source, "reference_sgemm_gflops": c.ref_gflops,
            "expected_from_rows": c.from_rows, "expected_from_prior": c.trials - c.from_rows,
            "prior_share_of_budget": dict(PRIOR), "no_model": c.no_model,
            "approx": c.approx or None,
        },
    }


def _h(s: float) -> str:
    return f"{s / 3600:.2f} h" if s >= 3600 else f"{s / 60:.1f} min"


def cost_text(c: SweepCost) -> str:
    """The dry run's cost lines."""
    rate = f"sgemm {c.host_gflops:.0f} GFLOP/s ({c.host_source}; table {c.ref_gflops:.0f})"
    if c.from_rows == c.trials:
        how = f"expected: steps of earlier rows of the same configs ({c.from_rows} trials)"
    else:
        prior = ", ".join(f"{k} {v:g}" for k, v in PRIOR.items())
        how = (f"expected: steps of earlier rows for {c.from_rows} of {c.trials} trials, the "
               f"rest a prior: a share of the budget ({prior}), then patience evals; the whole "
               "budget with patience 0 or FORGE below its group's faithful rank / d")
    lines = [
        f"cost (this host, {rate}): CPU {c.cpu_s_upper / 3600:.3f} h upper bound (every seed "
        f"to its budget), {c.cpu_s_expected / 3600:.3f} h expected; wall on {c.slots} slot"
        f"{'s' if c.slots != 1 else ''} "
        f"{_h(c.wall_s_upper)} upper, {_h(c.wall_s_expected)} expected",
        f"  {how}",
        f"  GPU {c.gpu_s_upper / 3600:.3f} h upper, {c.gpu_s_expected / 3600:.3f} h expected "
        "(uncalibrated: FLOPs at a nominal rate; no device has measured it)",
    ]
    if c.no_model:
        lines.append(f"  no cost model for {', '.join(c.no_model)}: left out")
    if c.approx:
        lines.append(f"  {c.approx}")
    return "\n".join(lines)
