"""FORGE's training step vs the matched-budget MLP's on the same group (issue 19's <= 3x target).

    python benchmarks/bench_forge_step.py                  # S3 .. Z97, S = 3 and 8, d 32, R 256
    python benchmarks/bench_forge_step.py --groups S4,A5 --seeds 8 --set model.rank=1024

For each group and seed count S, one trial of each architecture is set up exactly as
`grokray run` does (grokray.trainer's _Trial: split, model, optimizer) and its training step is
timed in place: `--steps` optimizer steps, best of `--repeats` rounds that alternate FORGE and
the MLP (so machine noise hits both alike). Columns (ms per step):

- forge: FORGE's step while lambda_alg > 0 (data loss + algebra losses + optimizer), the step
  that counts for a seed that groks in the first half of the budget;
- old: the same step with L_assoc in the form the code before the structure-tensor forms chose
  (R-space term by term while n^2 <= 3 R and S n^3 R <= forge.DIRECT_ASSOC_MAX, else R-space
  Gram), in the same process, interleaved: old / forge is the speedup of that change;
- late: FORGE's step once lambda_alg is 0 (the linear schedule's second half);
- mlp: the matched-budget MLP's step (`model.matched_budget`), and the ratio forge / mlp;
- eval: one evaluation (all pairs, plus FORGE's algebra losses for the curves), FORGE and MLP.

Times are the process's CPU time (time.process_time, one torch thread (`--threads`)): on a
shared machine other processes' load does not count (their cache and memory traffic still
does). Nothing here is a test; nothing asserts on time.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time

import torch

from grokray.config import TrialConfig
from grokray.models.forge import DIRECT_ASSOC_MAX, Forge
from grokray.trainer import _Trial
from grokray.trial import TrialRun

GROUPS = "S3,D4,A4,S4,F21,Heis3,A5,Z97"
EXTRA: dict = {}


def trial(group: str, arch: str, seeds: int, steps: int) -> _Trial:
    base = {"group": group, "arch": arch, "steps": steps, "train_frac": 0.5,
            "seeds": list(range(seeds)), "device": "cpu", "metrics.patience": 0}
    if arch == "mlp":
        base["model.matched_budget"] = True
    if group == "Z97":
        base["op"] = "add"
    return _Trial(TrialRun(TrialConfig.from_dict({**base, **EXTRA})))


def old_form(t: _Trial) -> None:
    """Make the trial's FORGE use the form the code before models/structure.py chose."""
    m = t.model
    S, n, d = m.params["E"].shape
    small = n * n <= 3 * m.R and S * n**3 * m.R <= DIRECT_ASSOC_MAX
    m._assoc_exact = functools.partial(Forge._assoc_exact, m, form="direct" if small else "gram")


def time_steps(t: _Trial, first: int, k: int) -> float:
    """ms per step over k steps starting at step `first`."""
    t0 = time.process_time()
    for s in range(first, first + k):
        t._train_step(s)
    return 1e3 * (time.process_time() - t0) / k


def time_eval(t: _Trial, k: int = 3) -> float:
    best = float("inf")
    for _ in range(k):
        n = len(t.rows)
        t0 = time.process_time()
        t._evaluate(1, final=False)
        best = min(best, 1e3 * (time.process_time() - t0))
        del t.rows[n:]
    return best


def measure(group: str, seeds: int, steps: int, repeats: int) -> dict[str, float]:
    budget = 4000
    fo, ml = trial(group, "forge", seeds, budget), trial(group, "mlp", seeds, budget)
    old = trial(group, "forge", seeds, budget)
    old_form(old)
    late = budget // 2 + 10  # lambda_alg is 0 from half the budget (linear schedule)
    for t, s in ((fo, 0), (old, 0), (fo, late), (ml, 0)):
        time_steps(t, s, 2)  # warm: buffers, caches
    best = {k: float("inf") for k in ("forge", "old", "late", "mlp")}
    for _ in range(repeats):
        best["forge"] = min(best["forge"], time_steps(fo, 5, steps))
        best["mlp"] = min(best["mlp"], time_steps(ml, 5, steps))
        best["old"] = min(best["old"], time_steps(old, 5, steps))
        best["late"] = min(best["late"], time_steps(fo, late, steps))
    best["eval_forge"], best["eval_mlp"] = time_eval(fo), time_eval(ml)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", default=GROUPS)
    ap.add_argument("--seeds", default="3,8", help="comma-separated seed counts S")
    ap.add_argument("--steps", type=int, default=10, help="steps per timed round")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="config override for every run, e.g. model.rank=64")
    args = ap.parse_args(argv)
    EXTRA.update(kv.split("=", 1) for kv in args.set)
    torch.set_num_threads(args.threads)
    probe = trial("S3", "forge", 1, 10).cfg.model
    print(f"torch {torch.__version__}, {args.threads} thread(s), d {probe.d}, R {probe.rank}, "
          f"ms per step, best of {args.repeats} x {args.steps} steps", flush=True)
    print(f"{'group':6s} {'S':>2s} {'forge':>8s} {'old':>8s} {'late':>7s} {'mlp':>7s} "
          f"{'forge/mlp':>9s} {'old/mlp':>8s} {'old/forge':>9s} {'eval forge':>10s} "
          f"{'eval mlp':>8s}", flush=True)
    for group in args.groups.split(","):
        for S in (int(s) for s in args.seeds.split(",")):
            b = measure(group, S, args.steps, args.repeats)
            print(f"{group:6s} {S:2d} {b['forge']:8.2f} {b['old']:8.2f} {b['late']:7.2f} "
                  f"{b['mlp']:7.2f} {b['forge'] / b['mlp']:8.1f}x {b['old'] / b['mlp']:7.1f}x "
                  f"{b['old'] / b['forge']:8.1f}x {b['eval_forge']:10.2f} {b['eval_mlp']:8.2f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
