"""FORGE's associativity loss: exact (all |G|^3 triples) vs sampled, in wall-clock time to grok.

    python benchmarks/bench_algebra_loss.py                       # ablation + scaling groups
    python benchmarks/bench_algebra_loss.py --groups S3,A5 --seeds 4 --steps 3000

For each group, FORGE at the default config (train fraction 0.5, eval every 50 steps) is trained
twice on the same seeds: once with L_assoc over all |G|^3 triples (`forge.alg_full_max` 64, the
exact loss) and once with `forge.alg_samples` triples sampled per step (`forge.alg_full_max` 0).
Printed per group and mode: seeds grokked / seeds (a seed that did not grok within --steps is
censored, shown as '>steps'), the (upper) median grok step, the median wall-clock seconds to
grok (the trial's process CPU time at the eval where that seed grokked, S seeds trained together;
censored seeds count as the whole run; with 1 torch thread that is the wall-clock time of a quiet
machine, and other processes' load does not count), and the ms per step while every seed trains
with lambda_alg > 0. The exact loss is computed in the form assoc.assoc_form picks.
The last columns time one step of each mode and of the matched-budget MLP on the same group
(best of --repeats interleaved measurements, each the difference of runs of 2 and 1 times
--time-steps steps, so setup and the two evals cancel): the FORGE / MLP step ratio.

    python benchmarks/bench_algebra_loss.py --aux --groups S3,D4,Q8,A4,Z14,D8,S4,A5 --seeds 8

times L_assoc alone (forward + backward, ms of process CPU time, best of --repeats rounds that
alternate the forms): the four exact forms of models/assoc.py (R-space term by term and Gram;
through the structure tensor, term by term and Gram) and the sampled one (forge.alg_samples
triples), and the form assoc.assoc_form picks;
with `--old-tree DIR` also that checkout's FORGE on the same parameters, in the form it picks
(column 'old'; e.g. a `git archive` of an older main).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

from grokray.config import TrialConfig
from grokray.trial import run_trial

MODES = {"exact": {"forge.alg_full_max": 64}, "sampled": {"forge.alg_full_max": 0}}
GROUPS = "S3,D4,A4,Q8,D6,Dic3,F21,S4,Heis3,A5"
EXTRA: dict = {}  # --set overrides, for every run
OLD: dict = {}  # "Forge": the --old-tree model class (bench_forge_step.load_old_forge)


def cfg_of(group: str, arch: str, seeds: int, steps: int, over: dict) -> TrialConfig:
    base = {"group": group, "arch": arch, "steps": steps, "eval_every": 50, "train_frac": 0.5,
            "seeds": list(range(seeds)), "device": "cpu"}
    if arch == "mlp":
        base["model.matched_budget"] = True
    return TrialConfig.from_dict({**base, **EXTRA, **over})


def time_to_grok(group: str, seeds: int, steps: int, over: dict) -> dict:
    """One trial; per seed the grok step and the seconds at that eval: the trial's process CPU
    time (1 torch thread: the wall-clock time of a quiet machine, without other processes'
    load)."""
    stamps: dict[int, float] = {}
    t0 = time.process_time()

    def progress(p) -> None:
        stamps[p.step] = time.process_time() - t0

    cfg = cfg_of(group, "forge", seeds, steps, over)
    r = run_trial(cfg, progress)
    wall = time.process_time() - t0
    grok = [s.grok_step for s in r.seeds]
    secs = [wall if g is None else stamps.get(g, wall) for g in grok]
    # ms per step while all seeds train with the algebra loss on: up to the first grok/eval
    first = min([g for g in grok if g is not None] or [steps])
    early = max([s for s in stamps if s <= first] or [min(stamps)])
    return {"grok": grok, "secs": secs, "wall": wall,
            "ms_step": 1e3 * stamps[early] / max(early, 1)}


def step_ms(group: str, arch: str, seeds: int, n: int, over: dict) -> float:
    """ms per step with the algebra loss on (lambda_alg > 0 throughout), setup excluded: the
    difference of runs of 2n and n steps (eval only at step 0 and the last), over n."""
    over = {**over, "forge.lambda_end": 1.0, "metrics.patience": 0, "eval_every": 100 * n}
    walls = []
    for k in (n, 2 * n):
        cfg = cfg_of(group, arch, seeds, k, over)
        t0 = time.process_time()
        run_trial(cfg)
        walls.append(time.process_time() - t0)
    return 1e3 * max(walls[1] - walls[0], 1e-9) / n


def step_timing(group: str, seeds: int, time_steps: int, repeats: int) -> str:
    """The step columns: exact, sampled and matched-MLP step ms, best of `repeats` rounds."""
    step_ms(group, "forge", seeds, 2, {})  # warm: group, caches
    best: dict[str, float] = {}
    for _ in range(repeats):
        for name, over in (*MODES.items(), ("mlp", {})):
            arch = "mlp" if name == "mlp" else "forge"
            ms = step_ms(group, arch, seeds, time_steps, over)
            best[name] = min(best.get(name, ms), ms)
    return (f"| {best['exact']:6.1f} {best['sampled']:6.1f} {best['mlp']:5.1f} "
            f"{best['exact'] / best['mlp']:7.1f}x {best['sampled'] / best['mlp']:7.1f}x")


EXACT = ("direct", "gram", "tensor_direct", "tensor_gram")


def aux_ms(group: str, seeds: int, repeats: int) -> dict[str, float]:
    """ms (process CPU time) of one L_assoc forward + backward per form, best of `repeats`
    alternating rounds: the four exact forms (Forge._assoc_exact) and the sampled one."""
    from grokray.models.assoc import DIRECT_ASSOC_MAX, FORMS, assoc_sampled
    from grokray.models.forge import Forge
    from grokray.tasks import make_task

    n = make_task(group).n_in
    cfg = cfg_of(group, "forge", seeds, 1, {})
    m = Forge(cfg, n, n, cfg.seeds)
    p = m.params
    ps = list(p.values())
    idx = m._sample((cfg.forge.alg_samples, 3), n)
    S, d, R = seeds, cfg.model.d, cfg.model.rank

    def run(form: str) -> None:
        Ut, Vt = m._tables()
        if form == "old":
            loss = old._assoc_exact(Ut, Vt)
        elif form == "sampled":
            i, j, k = idx[..., 0], idx[..., 1], idx[..., 2]
            loss = assoc_sampled(Ut, Vt, p["U"], p["V"], p["W"], i, j, k, m.ws)
        else:
            loss = m._assoc_exact(Ut, Vt, form)
        torch.autograd.grad(loss.sum(), ps, allow_unused=True)

    old = None
    if OLD:  # the same parameters in the --old-tree FORGE, its own choice of form
        from grokray.models.fused import Workspace

        old = object.__new__(OLD["Forge"])
        old.__dict__.update(m.__dict__)
        old.ws = Workspace()

    forms = [f for f in (*EXACT, "sampled")
             if f == "sampled" or FORMS[f].buffer(n, d, R, S) <= DIRECT_ASSOC_MAX]
    if old is not None:
        forms.append("old")
    best = {f: float("inf") for f in forms}
    for f in forms:
        run(f)  # warm buffers
    for _ in range(repeats):
        for f in forms:
            t0 = time.process_time()
            run(f)
            best[f] = min(best[f], 1e3 * (time.process_time() - t0))
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", default=GROUPS)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--time-steps", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-grok", action="store_true", help="only the step timings")
    ap.add_argument("--no-timing", action="store_true", help="only the time to grok")
    ap.add_argument("--modes", default="exact,sampled", help="L_assoc modes to grok with")
    ap.add_argument("--aux", action="store_true", help="only L_assoc, per form")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="config override for every run, e.g. model.rank=64")
    ap.add_argument("--old-tree", default=None, metavar="DIR",
                    help="--aux: also time the L_assoc of this checkout's FORGE (column 'old')")
    args = ap.parse_args(argv)
    EXTRA.update(kv.split("=", 1) for kv in args.set)
    if args.old_tree:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_forge_step import load_old_forge

        OLD["Forge"] = load_old_forge(args.old_tree)
    torch.set_num_threads(args.threads)
    if args.aux:
        from grokray.models.assoc import assoc_form
        from grokray.tasks import make_task

        reps = max(args.repeats, 5)
        probe = cfg_of("S3", "forge", 1, 1, {}).model
        print(f"L_assoc forward + backward, ms of process CPU time, S = {args.seeds}, d "
              f"{probe.d}, R {probe.rank}, best of {reps}; '-': its n^3 buffer is over "
              "assoc.DIRECT_ASSOC_MAX", flush=True)
        cols = (*EXACT, "sampled", *(("old",) if OLD else ()))
        print(f"{'group':7s} {'n':>3s} " + " ".join(f"{f:>13s}" for f in cols)
              + "  chosen", flush=True)
        for group in args.groups.split(","):
            n = make_task(group).n_in
            b = aux_ms(group, args.seeds, reps)
            cells = " ".join(f"{'-' if f not in b else f'{b[f]:.2f}':>13s}" for f in cols)
            print(f"{group:7s} {n:3d} {cells}  {assoc_form(n, probe.d, probe.rank, args.seeds)}",
                  flush=True)
        return 0
    print(f"torch {torch.__version__}, {args.threads} thread(s), S = {args.seeds}, budget "
          f"{args.steps} steps, eval every 50", flush=True)
    print(f"{'group':7s} {'mode':8s} {'grokked':>7s} {'med step':>8s} {'med s':>7s} "
          f"{'ms/step':>7s} | step ms: exact sampled mlp  exact/mlp sampled/mlp", flush=True)
    modes = {k: MODES[k] for k in args.modes.split(",")}
    for group in args.groups.split(","):
        if args.no_timing:
            timing = ""
        else:
            timing = step_timing(group, args.seeds, args.time_steps, args.repeats)
        if args.no_grok:
            print(f"{group:7s} {'-':8s} {'':7s} {'':8s} {'':7s} {'':7s} {timing}", flush=True)
            continue
        for name, over in modes.items():
            r = time_to_grok(group, args.seeds, args.steps, over)
            ok = [g for g in r["grok"] if g is not None]
            # the upper median: a censored seed in the middle makes the median censored too
            med = statistics.median_high([args.steps + 1 if g is None else g for g in r["grok"]])
            med_txt = f">{args.steps}" if med > args.steps else f"{med:.0f}"
            print(f"{group:7s} {name:8s} {len(ok):3d}/{len(r['grok']):<3d} {med_txt:>8s} "
                  f"{statistics.median(r['secs']):7.1f} {r['ms_step']:7.1f} {timing}  "
                  f"steps {r['grok']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
