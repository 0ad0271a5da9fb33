"""`grokray slurm --dry-run`: the cost model's time for the sweep against what the allocation
grants (nodes x --time), and how many allocations the sweep is likely to need."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from grokray.sweep.plan import Plan

START_S = 60.0
"""seconds of an allocation before the first trial: Ray's head and workers joining (about
20-30 s on one node), the driver's start"""


@dataclass(frozen=True)
class AllocationFit:
    """A plan's estimate on an allocation."""

    slots: int
    usable_s: float
    """seconds of trial time per allocation: --time less the signal's lead and START_S"""
    wall_s_expected: float
    wall_s_upper: float
    longest_s: float | None
    """the longest trial's upper bound (seconds), None without a cost model"""
    cpu_per_node: int
    cpus_given: bool

    def allocations(self, wall_s: float) -> int:
        return max(1, math.ceil(wall_s / self.usable_s)) if wall_s > 0 else 0


def fit(plan: Plan, nodes: int, cpus_per_node: int | None, gpus_per_node: int,
        time_s: int, signal_s: int) -> AllocationFit:
    """Price `plan` on `nodes` nodes of `cpus_per_node` CPUs (1 when not given: Slurm's default
    CPUs per task) and `gpus_per_node` GPUs."""
    from grokray.cost.sweep import estimate_plan, todo_configs
    from grokray.slurm.deadline import trial_seconds

    spec = plan.spec
    cpus = cpus_per_node or 1
    cost = estimate_plan(plan, n_cpus=nodes * cpus, start_s=0.0)
    if spec.gpu > 0 and gpus_per_node:
        slots = max(1, int(nodes * gpus_per_node // spec.gpu))
        if spec.concurrency:
            slots = min(slots, spec.concurrency)
        exp = cost.gpu_s_expected / slots
        upper = cost.gpu_s_upper / slots
    else:
        slots, exp, upper = cost.slots, cost.wall_s_expected, cost.wall_s_upper
    cfgs, _, _ = todo_configs(plan)
    secs = [s for c in cfgs if (s := trial_seconds(c, spec.gpu if gpus_per_node else 0.0))]
    return AllocationFit(slots=slots, usable_s=max(60.0, time_s - signal_s - START_S),
                         wall_s_expected=exp, wall_s_upper=upper,
                         longest_s=max(secs) if secs else None, cpu_per_node=cpus,
                         cpus_given=cpus_per_node is not None)


def _t(s: float) -> str:
    return f"{s / 3600:.2f} h" if s >= 3600 else f"{s / 60:.1f} min"


def fit_text(f: AllocationFit, nodes: int, time_s: int, signal_s: int,
             max_requeues: int) -> str:
    """The dry run's allocation lines."""
    from grokray.slurm.timefmt import format_time

    cpus = f"{f.cpu_per_node} CPU{'s' if f.cpu_per_node != 1 else ''} per node" + \
        ("" if f.cpus_given else " (no --cpus-per-node: Slurm's default CPUs per task, often 1)")
    lines = [
        f"allocation: {nodes} node{'s' if nodes != 1 else ''} x {format_time(time_s)} = "
        f"{nodes * time_s / 3600:.2f} node-hours; {cpus}; {f.slots} trial slot"
        f"{'s' if f.slots != 1 else ''}; about {_t(f.usable_s)} of trials per allocation "
        f"(the signal comes {signal_s} s before the limit, Ray starts in about {START_S:.0f} s)",
    ]
    if f.wall_s_upper <= 0:
        lines.append("  nothing to run (or no cost model for its families)")
        return "\n".join(lines)
    likely, most = f.allocations(f.wall_s_expected), f.allocations(f.wall_s_upper)
    lines.append(f"  sweep on {f.slots} slots: {_t(f.wall_s_expected)} expected, "
                 f"{_t(f.wall_s_upper)} upper bound: likely {likely} allocation"
                 f"{'s' if likely != 1 else ''}, at most {most}")
    runs = max_requeues + 1
    if most > runs:
        lines.append(f"  --max-requeues {max_requeues} allows {runs} allocations: the sweep may "
                     "stop before its end (submit again, ask for more --time or nodes)")
    if f.longest_s is not None and f.longest_s > f.usable_s:
        lines.append(f"  the longest trial may take {_t(f.longest_s)} (every seed to its "
                     f"budget), longer than an allocation: without checkpoints it is not "
                     "started; ask for a longer --time")
    return "\n".join(lines)
