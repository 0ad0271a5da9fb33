"""Sweep overhead: many tiny trials through the sweep (Ray Tune) vs the same trials in one process.

    python benchmarks/bench_sweep_overhead.py                # 40 trials x 2 seeds, 2 at a time
    python benchmarks/bench_sweep_overhead.py --trials 200 --marginal
    python benchmarks/bench_sweep_overhead.py --trivial --compare-batching

Both sides run the same `run_trial` calls on tiny configs (Z5, MLP, a few steps) and write the
same Parquet files. The reference runs them in a loop in this process; the sweep runs them
through `grokray.sweep` (plan, RayBackend on an embedded Ray, the one writer). Printed: seconds of
overhead per trial and per seed, with and without Ray's start-up (ray.init, once per sweep), and
with --marginal the cost of one more trial (sweeps of N and 2N trials), which excludes every
fixed cost; with --compare-batching, sweeps with tiny configs batched into Tune trials (the
default, backend.tiny_batches) and with one config per Tune trial alternate in the same Ray
session (twice each), so load hits both alike. Overhead = sweep wall time - reference wall time
(trials 2 at a time on 2 CPUs against one at a time in the reference, so for non-trivial trials
it can come out negative).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time


def tiny_spec_text(n: int, seeds: int, steps: int, concurrency: int, out: str, name: str) -> str:
    lrs = ", ".join(f"{1e-3 * (1 + i / n):.6g}" for i in range(n))
    return (f"name: {name}\nout: {out}\nconfig: {{group: Z5, arch: mlp, device: cpu, "
            f"model: {{d: 8, hidden: 16}}}}\naxes:\n  optim.lr: [{lrs}]\nseeds: {seeds}\n"
            f"steps: {steps}\neval_every: {steps}\nresources: {{cpu: 1}}\n"
            f"concurrency: {concurrency}\nretries: 0\n")


def trivial_trial(cfg):
    """A trial that trains nothing: isolates the scheduling cost (--trivial)."""
    from datetime import datetime, timezone

    import pandas as pd

    from grokray.result import SeedResult, TrialResult

    now = datetime.now(timezone.utc)
    seeds = [SeedResult(seed=s, data_seed=s, status="not_grokked", steps_run=cfg.steps)
             for s in cfg.seeds]
    return TrialResult(config=cfg, n_params=0, device="cpu", wall_s=0.0, started_at=now,
                       finished_at=now, seeds=seeds, curves=pd.DataFrame(), group_order=5)


def reference(spec, out: str, trial_fn) -> float:
    """The same trials in a loop in this process (the same trial calls and Parquet writes)."""
    from grokray.sweep.store import write_result

    t0 = time.perf_counter()
    for cfg in spec.trials():
        write_result(trial_fn(cfg), out, sweep=spec.name, run_id="ref")
    return time.perf_counter() - t0


def sweep(spec, num_cpus: int, trial_fn) -> float:
    from grokray.sweep.backend import RayBackend
    from grokray.sweep.runner import make_plan, run_plan

    plan = make_plan(spec)
    backend = RayBackend(name=f"bench-{plan.run_id}", storage_path=spec.sweep_dir + "/_ray",
                         concurrency=spec.concurrency, retries=0, num_cpus=num_cpus,
                         trial_fn=trial_fn)
    t0 = time.perf_counter()
    writer = run_plan(plan, backend)
    dt = time.perf_counter() - t0
    assert len(writer.outcomes) == len(spec.trials())
    assert not any(o.error for o in writer.outcomes), writer.outcomes[0].error
    return dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=2, help="training steps per trial (tiny)")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--trivial", action="store_true",
                    help="trials that train nothing (pure scheduling cost); default: run_trial")
    ap.add_argument("--marginal", action="store_true",
                    help="also run 2N trials to get the cost of one more trial")
    ap.add_argument("--compare-batching", action="store_true",
                    help="alternate batched and one-config-per-Tune-trial sweeps")
    args = ap.parse_args()

    import ray

    from grokray.sweep.backend import RayBackend
    from grokray.sweep.spec import parse_spec

    root = tempfile.mkdtemp(prefix="bench_sweep_")
    try:
        def spec_of(n: int, name: str):
            return parse_spec(tiny_spec_text(n, args.seeds, args.steps, args.concurrency, root,
                                             name), f"{name}.yaml")

        n, s = args.trials, args.seeds
        if args.trivial:
            fn = trivial_trial
        else:
            from grokray.trainer import run_trial as fn
        spec = spec_of(n, "n")
        reference(spec_of(2, "warm"), os.path.join(root, "warm"), fn)  # imports, first-call costs
        t_ref = reference(spec, os.path.join(root, "ref"), fn)

        t0 = time.perf_counter()
        RayBackend(name="init", storage_path=root, num_cpus=args.num_cpus).connect()
        t_init = time.perf_counter() - t0
        t_sweep = sweep(spec, args.num_cpus, fn)

        kind = "trivial trials" if args.trivial else f"run_trial, {args.steps} steps each"
        print(f"{n} trials x {s} seeds ({kind}), {args.concurrency} at a time "
              f"on {args.num_cpus} CPUs (ray {ray.__version__})")
        print(f"  in one process        {t_ref:7.2f} s  ({t_ref / n:.3f} s per trial)")
        print(f"  ray.init              {t_init:7.2f} s  (once per sweep)")
        print(f"  sweep (Tune)          {t_sweep:7.2f} s")
        over = t_sweep - t_ref
        print(f"  overhead per trial    {over / n:7.3f} s   per seed {over / (n * s):.3f} s")
        print(f"  with ray.init         {(over + t_init) / n:7.3f} s   per seed "
              f"{(over + t_init) / (n * s):.3f} s")
        if args.compare_batching:
            import grokray.sweep.backend as backend

            best: dict[str, float] = {}
            for r in range(2):
                for mode in ("batched", "one per trial"):
                    keep = backend.MAX_BATCH
                    backend.MAX_BATCH = keep if mode == "batched" else 1
                    try:
                        t = sweep(spec_of(n, f"c{r}{mode[0]}"), args.num_cpus, fn)
                    finally:
                        backend.MAX_BATCH = keep
                    best[mode] = min(best.get(mode, t), t)
            for mode, t in best.items():
                print(f"  {mode:14s} sweep {t:7.2f} s, overhead per trial "
                      f"{(t - t_ref) / n:7.3f} s (best of 2)")
        if args.marginal:
            spec2 = spec_of(2 * n, "n2")
            t_ref2 = reference(spec2, os.path.join(root, "ref2"), fn)
            t_sweep2 = sweep(spec2, args.num_cpus, fn)
            marg = ((t_sweep2 - t_sweep) - (t_ref2 - t_ref)) / n
            print(f"  {2 * n} trials: in one process {t_ref2:.2f} s, sweep {t_sweep2:.2f} s")
            print(f"  marginal overhead     {marg:7.3f} s per trial, {marg / s:.3f} s per seed "
                  "(no fixed costs)")
        ray.shutdown()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
