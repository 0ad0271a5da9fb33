"""FORGE's training step vs the matched-budget MLP's on the same group (target: <= 3x).

    python benchmarks/bench_forge_step.py                  # S3 .. Z97, S = 3 and 8, d 32, R 256
    python benchmarks/bench_forge_step.py --groups S4,A5 --seeds 8 --set model.rank=1024

For each group and seed count S, one trial of each architecture is set up exactly as
`grokray run` does (grokray.trainer's Training: split, model, optimizer) and its training step is
timed in place: `--steps` optimizer steps, best of `--repeats` rounds that alternate FORGE and
the MLP (so machine noise hits both alike). Columns (ms per step):

- forge: FORGE's step while lambda_alg > 0 (data loss + algebra losses + optimizer), the step
  that counts for a seed that groks in the first half of the budget;
- old: the same step with `--old-tree DIR`'s FORGE (models/fused.py, structure.py or assoc.py,
  forge.py of another checkout, e.g. `git archive` of an older main, loaded under other module
  names and swapped in as the trial's model class), or without it L_assoc in the R-space forms
  alone (term by term while n^2 <= 3 R and S n^3 R <= assoc.DIRECT_ASSOC_MAX, else Gram); in
  the same process, interleaved: old / forge is the speedup;
- late: FORGE's step once lambda_alg is 0 (the linear schedule's second half);
- mlp: the matched-budget MLP's step (`model.matched_budget`), and the ratio forge / mlp;
- eval: one evaluation (all pairs, plus FORGE's algebra losses for the curves), FORGE and MLP;
- the arithmetic floor (a second table; `--no-floor` skips it): the modelled multiply-adds per
  seed of FORGE's step by part (data loss; L_assoc in the form assoc.assoc_form picks, its maps
  included, assoc.FORMS[form].macs; L_ident + L_inv with g_phi) and of the MLP's step (GEMMs
  only, forward + backward), their ratio (the best forge / mlp possible at equal GEMM
  efficiency), each side's achieved GFLOP/s, and "best": (FORGE's late step + its algebra
  GEMMs at the sgemm rate measured in this process at a K = d shape) / the MLP's step, the ratio
  this machine would give with the algebra losses at that rate and the rest as measured.

Times are the process's CPU time (time.process_time, one torch thread (`--threads`)): on a
shared machine other processes' load does not count (their cache and memory traffic still
does). Nothing here is a test; nothing asserts on time.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
import types
from pathlib import Path

import torch

from grokray.config import TrialConfig
from grokray.models.assoc import DIRECT_ASSOC_MAX, FORMS, assoc_form
from grokray.models.forge import Forge
from grokray.models.mlp import hidden_width
from grokray.trainer import Training
from grokray.trainer.step import train_step
from grokray.trialrun import TrialRun

GROUPS = "S3,D4,A4,S4,F21,Heis3,A5,Z97"
EXTRA: dict = {}
OLD: dict = {}  # "Forge": the --old-tree model class


def load_old_forge(tree: str) -> type:
    """The Forge class of another checkout: its models/fused.py, structure.py and assoc.py (those
    present) and forge.py, executed under other module names (grokray's other modules are
    shared)."""
    names = [n for n in ("fused", "structure", "assoc", "forge")
             if (Path(tree) / "grokray" / "models" / f"{n}.py").exists()]
    for name in names:
        path = Path(tree) / "grokray" / "models" / f"{name}.py"
        src = path.read_text()
        for other in names:
            src = src.replace(f"grokray.models.{other} ", f"_old_grokray_{other} ")
        mod = types.ModuleType(f"_old_grokray_{name}")
        mod.__file__ = str(path)
        sys.modules[mod.__name__] = mod
        exec(compile(src, str(path), "exec"), mod.__dict__)  # noqa: S102
    return sys.modules["_old_grokray_forge"].Forge


def trial(group: str, arch: str, seeds: int, steps: int) -> Training:
    base = {"group": group, "arch": arch, "steps": steps, "train_frac": 0.5,
            "seeds": list(range(seeds)), "device": "cpu", "metrics.patience": 0}
    if arch == "mlp":
        base["model.matched_budget"] = True
    if group == "Z97":
        base["op"] = "add"
    return Training([TrialRun(TrialConfig.from_dict({**base, **EXTRA}))])


def old_form(t: Training) -> None:
    """Make the trial's FORGE the --old-tree one, or compute its L_assoc in the R-space forms
    alone (the choice before the structure-tensor forms)."""
    m = t.stack.model
    if "Forge" in OLD:
        m.__class__ = OLD["Forge"]
        return
    S, n, d = m.params["E"].shape
    small = n * n <= 3 * m.R and S * n**3 * m.R <= DIRECT_ASSOC_MAX
    m._assoc_exact = functools.partial(Forge._assoc_exact, m, form="direct" if small else "gram")


def time_steps(t: Training, first: int, k: int) -> float:
    """ms per step over k steps starting at step `first`."""
    t0 = time.process_time()
    for s in range(first, first + k):
        train_step(t.stack, s)
    return 1e3 * (time.process_time() - t0) / k


def time_eval(t: Training, k: int = 3) -> float:
    best = float("inf")
    for _ in range(k):
        rows = t.stack.runs[0].rows
        n = len(rows)
        t0 = time.process_time()
        t.evaluate(1, list(t.stack.active))
        best = min(best, 1e3 * (time.process_time() - t0))
        del rows[n:]
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
    best.update(macs(fo, ml))
    return best


def macs(fo: Training, ml: Training) -> dict[str, float]:
    """Modelled multiply-adds per seed of one training step (GEMMs, forward + backward): FORGE's
    parts and the MLP's. B: training pairs per step; n elements, n_out classes."""
    cfg, m = fo.stack.cfg, fo.stack.model
    n, n_out, d, R, hg = m.n_in, m.n_out, m.d, m.R, m.hg
    B = min(fo.stack.batch, fo.stack.n_train)
    data = 3 * (2 * n * R * d + B * (R * d + d * n_out))
    form = assoc_form(n, d, R, len(cfg.seeds)) if n <= m.full_max else "sampled"
    if form == "sampled":
        k = m.n_samples
        assoc = 15 * k * R * d
    else:
        assoc = FORMS[form].macs(n, d, R)
    ni = min(n, m.n_samples)
    idinv = 3 * (6 * ni * R * d + 2 * ni * d * hg + 2 * R * d)
    h = hidden_width(ml.stack.cfg, ml.stack.model.n_in, ml.stack.model.n_out)
    Bm = min(ml.stack.batch, ml.stack.n_train)
    mm = ml.stack.model
    mlp = 3 * (2 * mm.n_in * d * h + Bm * h * mm.n_out)
    return {"m_data": data, "m_assoc": assoc, "m_idinv": idinv, "m_mlp": mlp, "form": form}


def sgemm_gflops(d: int) -> float:
    """GFLOP/s of a [576, d] x [d, 768] sgemm (the d-space L_assoc's GEMM shape at 24
    elements), 8 at a time, best of 5 rounds, process CPU time."""
    A, Bm = torch.randn(8, 576, d), torch.randn(8, d, 768)
    C = torch.empty(8, 576, 768)
    best = float("inf")
    for _ in range(5):
        t0 = time.process_time()
        for _ in range(20):
            torch.bmm(A, Bm, out=C)
        best = min(best, (time.process_time() - t0) / 20)
    return 2 * 8 * 576 * d * 768 / best / 1e9


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", default=GROUPS)
    ap.add_argument("--seeds", default="3,8", help="comma-separated seed counts S")
    ap.add_argument("--steps", type=int, default=10, help="steps per timed round")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="config override for every run, e.g. model.rank=64")
    ap.add_argument("--old-tree", default=None, metavar="DIR",
                    help="the 'old' column: FORGE from this checkout (e.g. a git archive)")
    ap.add_argument("--no-floor", action="store_true", help="skip the arithmetic-floor table")
    args = ap.parse_args(argv)
    EXTRA.update(kv.split("=", 1) for kv in args.set)
    torch.set_num_threads(args.threads)
    if args.old_tree:
        OLD["Forge"] = load_old_forge(args.old_tree)
    probe = trial("S3", "forge", 1, 10).stack.cfg.model
    gf = sgemm_gflops(probe.d)
    old = f"FORGE from {args.old_tree}" if args.old_tree else "the R-space forms alone"
    print(f"torch {torch.__version__}, {args.threads} thread(s), d {probe.d}, R {probe.rank}, "
          f"ms per step, best of {args.repeats} x {args.steps} steps; old: {old}; sgemm "
          f"[576, {probe.d}] x [{probe.d}, 768]: {gf:.1f} GFLOP/s", flush=True)
    print(f"{'group':6s} {'S':>2s} {'forge':>8s} {'old':>8s} {'late':>7s} {'mlp':>7s} "
          f"{'forge/mlp':>9s} {'old/mlp':>8s} {'old/forge':>9s} {'eval forge':>10s} "
          f"{'eval mlp':>8s}", flush=True)
    rows = []
    for group in args.groups.split(","):
        for S in (int(s) for s in args.seeds.split(",")):
            b = measure(group, S, args.steps, args.repeats)
            rows.append((group, S, b))
            print(f"{group:6s} {S:2d} {b['forge']:8.2f} {b['old']:8.2f} {b['late']:7.2f} "
                  f"{b['mlp']:7.2f} {b['forge'] / b['mlp']:8.1f}x {b['old'] / b['mlp']:7.1f}x "
                  f"{b['old'] / b['forge']:8.1f}x {b['eval_forge']:10.2f} {b['eval_mlp']:8.2f}",
                  flush=True)
    if not args.no_floor:
        print_floor(rows, gf)
    return 0


def print_floor(rows: list, gf: float) -> None:
    """The arithmetic floor table (see the module docstring)."""
    print(f"\nmodelled multiply-adds per seed and step (M, GEMMs, forward + backward); floor = "
          f"forge / mlp multiply-adds; best = (late + algebra GEMMs at {gf:.1f} GFLOP/s) / mlp; "
          "GF/s achieved", flush=True)
    print(f"{'group':6s} {'S':>2s} {'form':>13s} {'data':>7s} {'assoc':>8s} {'id/inv':>6s} "
          f"{'forge':>8s} {'mlp':>6s} {'floor':>7s} {'best':>6s} {'measured':>8s} "
          f"{'GF/s forge':>10s} {'GF/s mlp':>8s}", flush=True)
    for group, S, b in rows:
        fm = b["m_data"] + b["m_assoc"] + b["m_idinv"]
        alg_ms = 2e3 * S * (b["m_assoc"] + b["m_idinv"]) / (gf * 1e9)
        print(f"{group:6s} {S:2d} {b['form']:>13s} {b['m_data'] / 1e6:7.2f} "
              f"{b['m_assoc'] / 1e6:8.2f} {b['m_idinv'] / 1e6:6.2f} {fm / 1e6:8.2f} "
              f"{b['m_mlp'] / 1e6:6.2f} {fm / b['m_mlp']:6.1f}x "
              f"{(b['late'] + alg_ms) / b['mlp']:5.1f}x {b['forge'] / b['mlp']:7.1f}x "
              f"{2e-6 * S * fm / b['forge']:10.1f} {2e-6 * S * b['m_mlp'] / b['mlp']:8.1f}",
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
