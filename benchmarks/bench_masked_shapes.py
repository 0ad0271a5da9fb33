"""Would a masked pack of a shape grid pay? FORGE on S4 over the capacity grid, CPU.

A masked pack trains every config of a grid (model.rank x model.d) at the grid's largest shape,
the entries beyond a member's own shape held at zero. Its cost is that of one trial of all the
grid's seeds at the largest shape; the configs apart cost the sum of their own trials. This
measures both in one process (process CPU time, one thread: a shared machine's load does not
enter), each as the CPU of a run of `--steps` steps minus one of `--base` steps (setup and the
evals cancel), and prints the ratio masked / apart (> 1: masking would be slower).

    python benchmarks/bench_masked_shapes.py                # sweeps/cpu/capacity.yaml's grid
    python benchmarks/bench_masked_shapes.py --ranks 16 24 32 --ds 8 12   # diag_capacity's
"""

from __future__ import annotations

import argparse
import time

import torch

from grokray.config import TrialConfig
from grokray.trial import run_trial


def seed_step_cpu(rank: int, d: int, seeds: int, steps: int, base: int, group: str) -> float:
    """Process CPU seconds per optimizer step of FORGE (rank, d) on `group` with `seeds` seeds
    (a run of `steps` steps minus one of `base`)."""
    def run(n: int) -> float:
        cfg = TrialConfig.from_dict({
            "arch": "forge", "group": group, "train_frac": 0.5, "device": "cpu",
            "model.rank": rank, "model.d": d, "seeds": list(range(seeds)), "steps": n,
            "eval_every": 10**6, "metrics.patience": 0})
        t0 = time.process_time()
        run_trial(cfg)
        return time.process_time() - t0

    return (run(steps) - run(base)) / (steps - base)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--group", default="S4")
    ap.add_argument("--ranks", type=int, nargs="+", default=[8, 16, 24, 32, 64])
    ap.add_argument("--ds", type=int, nargs="+", default=[8, 12, 16, 32])
    ap.add_argument("--seeds", type=int, default=2, help="seeds per config (the sweep's)")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--base", type=int, default=10)
    args = ap.parse_args()
    torch.set_num_threads(1)
    shapes = [(r, d) for r in args.ranks for d in args.ds]
    apart = 0.0
    for r, d in shapes:
        t = seed_step_cpu(r, d, args.seeds, args.steps, args.base, args.group)
        apart += t
        print(f"R {r:4d} d {d:3d}  {args.seeds} seeds: {1e3 * t:8.2f} ms/step", flush=True)
    big = (max(args.ranks), max(args.ds))
    masked = seed_step_cpu(*big, args.seeds * len(shapes), args.steps, args.base, args.group)
    print(f"apart (sum of {len(shapes)} configs): {1e3 * apart:.1f} ms/step")
    print(f"masked (R {big[0]} d {big[1]}, {args.seeds * len(shapes)} seeds): "
          f"{1e3 * masked:.1f} ms/step")
    print(f"masked / apart: {masked / apart:.2f}")


if __name__ == "__main__":
    main()
