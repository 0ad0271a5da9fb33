"""Config-packed trials vs one config at a time, in one process: the same grid, the same seeds.

    python benchmarks/bench_pack.py                   # MLP on D4, FORGE on S3; 500 steps
    python benchmarks/bench_pack.py --archs mlp --groups D4 S4 Z97 --steps 300

A grid of 12 configs (lr 3 x weight decay 2 x, for FORGE, lambda_alg 2, for the MLP, Grokfast
EMA alpha 2) x `--seeds` seeds on each group trains twice: packed (`grokray.pack.run_pack`, all
12 as one stack) and unpacked (`run_trial` per config, one after the other: what `--pack off`
does in one worker). Reported: seed-steps/s on process CPU time (seed-steps = the optimizer
steps every seed ran), the speedup, and the share of (config, seed) with the same status and
grok step. metrics.patience 0 (no early stop) so both sides do the same work. One torch thread.
"""

from __future__ import annotations

import argparse
import itertools
import time

import torch

from grokray.config import TrialConfig
from grokray.pack import run_pack
from grokray.trial import run_trial

LRS, WDS = (3e-3, 1e-2, 3e-2), (0.1, 1.0)
FOURTH = {"mlp": ("grokfast.alpha", (0.9, 0.98)), "forge": ("forge.lambda_alg", (0.01, 0.03))}


def grid(arch: str, group: str, steps: int, seeds: int, dtype: str,
         device: str = "cpu") -> list[TrialConfig]:
    """The 12 configs of one (arch, group)."""
    key, values = FOURTH[arch]
    base = {"arch": arch, "group": group, "steps": steps, "eval_every": 50, "device": device,
            "dtype": dtype, "seeds": list(range(seeds)), "metrics.patience": 0}
    if arch == "mlp":
        base["grokfast.filter"] = "ema"
    return [TrialConfig.from_dict({**base, "optim.lr": lr, "optim.weight_decay": wd, key: v})
            for lr, wd, v in itertools.product(LRS, WDS, values)]


def timed(fn):  # noqa: ANN001, ANN201 - fn() -> [TrialResult]
    c0 = time.process_time()
    out = fn()
    return out, time.process_time() - c0


def outcome(results) -> list[tuple]:  # noqa: ANN001
    return [(s.status, s.grok_step) for r in results for s in r.seeds]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--archs", nargs="+", default=["mlp", "forge"])
    ap.add_argument("--groups", nargs="+", default=None, help="default: D4 (mlp), S3 (forge)")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--dtype", default="float32")
    args = ap.parse_args()
    torch.set_num_threads(1)
    print("arch   group  configs x seeds  unpacked seed-steps/s  packed  speedup  same outcome")
    for arch in args.archs:
        for group in args.groups or (["D4"] if arch == "mlp" else ["S3"]):
            configs = grid(arch, group, args.steps, args.seeds, args.dtype)
            alone, t_alone = timed(lambda c=configs: [run_trial(x) for x in c])
            packed, t_pack = timed(lambda c=configs: run_pack(c))
            work = sum(s.steps_run for r in packed for s in r.seeds)
            same = sum(a == b for a, b in zip(outcome(alone), outcome(packed), strict=True))
            n = len(outcome(alone))
            print(f"{arch:6} {group:6} {len(configs):>7} x {args.seeds:<6} "
                  f"{work / t_alone:>18,.0f}  {work / t_pack:>7,.0f}  {t_alone / t_pack:>6.2f}x"
                  f"  {same}/{n} ({100 * same / n:.0f}%)")


if __name__ == "__main__":
    main()
