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

CPU seconds are printed beside the wall times: this process's, plus (for the sweep) those of
every process under it (Ray's GCS, raylet, workers and trial actors, sampled every 0.5 s so
that an actor that exits is counted up to its last sample). On a shared, loaded machine the
wall time measures mostly the load; CPU seconds measure the work each side asks for.
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


class TreeCPU:
    """CPU seconds (user + system) of this process and all its descendants while inside."""

    def __init__(self, interval: float = 0.5) -> None:
        self.interval = interval
        self.seconds = 0.0

    def _sample(self) -> None:
        import psutil

        me = psutil.Process()
        for p in [me, *me.children(recursive=True)]:
            try:
                key = (p.pid, p.create_time())
                t = p.cpu_times()
            except psutil.Error:
                continue
            self.last[key] = t.user + t.system
            self.first.setdefault(key, self.last[key] if self.started else 0.0)
            kind = _kind(p)  # a worker's title changes when it becomes an actor
            if kind != "?" or key not in self.names:
                self.names[key] = kind

    def _loop(self) -> None:
        while not self.stop.wait(self.interval):
            self._sample()

    def __enter__(self) -> TreeCPU:
        import threading

        self.first: dict = {}
        self.last: dict = {}
        self.names: dict = {}
        self.started = True
        self._sample()  # processes alive now: count from here
        self.started = False  # processes born later: count from 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()
        self._sample()
        self.seconds = sum(v - self.first[k] for k, v in self.last.items())
        self.by_kind: dict[str, float] = {}
        for k, v in self.last.items():
            kind = self.names.get(k, "?")
            self.by_kind[kind] = self.by_kind.get(kind, 0.0) + v - self.first[k]


def _kind(p) -> str:
    """A short name for a process: this one, a Ray service, a Ray worker."""
    import psutil

    try:
        if p.pid == os.getpid():
            return "driver (this process)"
        cmd = " ".join(p.cmdline())
    except psutil.Error:
        return "?"
    if not cmd:  # exiting
        return "?"
    for key in ("gcs_server", "raylet", "monitor.py", "log_monitor.py", "dashboard.py",
                "DashboardAgent", "RuntimeEnvAgent", "ImplicitFunc", "IDLE", "default_worker"):
        if key in cmd:
            return {"ImplicitFunc": "trial actors", "IDLE": "idle workers",
                    "default_worker": "workers starting"}.get(key, key)
    return cmd.split(" ")[0].rsplit("/", 1)[-1][:30]


def reference(spec, out: str, trial_fn) -> float:
    """The same trials in a loop in this process (the same trial calls and Parquet writes)."""
    from grokray.sweep.store import write_result

    with TreeCPU() as cpu:
        t0 = time.perf_counter()
        for cfg in spec.trials():
            write_result(trial_fn(cfg), out, sweep=spec.name, run_id="ref")
        dt = time.perf_counter() - t0
    reference.cpu = cpu.seconds
    return dt


def sweep(spec, num_cpus: int, trial_fn) -> float:
    from grokray.sweep.backend import RayBackend
    from grokray.sweep.runner import make_plan, run_plan

    plan = make_plan(spec)
    backend = RayBackend(name=f"bench-{plan.run_id}", storage_path=spec.sweep_dir + "/_ray",
                         concurrency=spec.concurrency, retries=0, num_cpus=num_cpus,
                         trial_fn=trial_fn)
    with TreeCPU() as cpu:
        t0 = time.perf_counter()
        writer = run_plan(plan, backend)
        dt = time.perf_counter() - t0
    sweep.cpu, sweep.by_kind = cpu.seconds, cpu.by_kind
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
        c_ref = reference.cpu

        t0 = time.perf_counter()
        RayBackend(name="init", storage_path=root, num_cpus=args.num_cpus).connect()
        t_init = time.perf_counter() - t0
        t_sweep = sweep(spec, args.num_cpus, fn)
        c_sweep = sweep.cpu

        kind = "trivial trials" if args.trivial else f"run_trial, {args.steps} steps each"
        print(f"{n} trials x {s} seeds ({kind}), {args.concurrency} at a time "
              f"on {args.num_cpus} CPUs (ray {ray.__version__})")
        print(f"  load average          {os.getloadavg()[0]:.1f} (1 min, at the end)")
        print(f"  in one process        {t_ref:7.2f} s  ({t_ref / n:.3f} s per trial), "
              f"CPU {c_ref:.2f} s")
        print(f"  ray.init              {t_init:7.2f} s  (once per sweep)")
        print(f"  sweep (Tune)          {t_sweep:7.2f} s, CPU {c_sweep:.2f} s (all processes)")
        over = t_sweep - t_ref
        print(f"  overhead per trial    {over / n:7.3f} s   per seed {over / (n * s):.3f} s")
        print(f"  with ray.init         {(over + t_init) / n:7.3f} s   per seed "
              f"{(over + t_init) / (n * s):.3f} s")
        print(f"  CPU overhead          {(c_sweep - c_ref) / n:7.3f} CPU s per trial")
        print("  sweep CPU by process: " + ", ".join(
            f"{k} {v:.1f} s" for k, v in sorted(sweep.by_kind.items(), key=lambda kv: -kv[1])))
        if args.compare_batching:
            import grokray.sweep.backend as backend

            best: dict[str, float] = {}
            best_cpu: dict[str, float] = {}
            for r in range(2):
                for mode in ("batched", "one per trial"):
                    keep = backend.MAX_BATCH
                    backend.MAX_BATCH = keep if mode == "batched" else 1
                    try:
                        t = sweep(spec_of(n, f"c{r}{mode[0]}"), args.num_cpus, fn)
                    finally:
                        backend.MAX_BATCH = keep
                    best[mode] = min(best.get(mode, t), t)
                    best_cpu[mode] = min(best_cpu.get(mode, sweep.cpu), sweep.cpu)
            for mode, t in best.items():
                print(f"  {mode:14s} sweep {t:7.2f} s, overhead per trial "
                      f"{(t - t_ref) / n:7.3f} s, CPU {(best_cpu[mode] - c_ref) / n:.3f} s "
                      f"(best of 2; load {os.getloadavg()[0]:.1f})")
        if args.marginal:
            spec2 = spec_of(2 * n, "n2")
            t_ref2 = reference(spec2, os.path.join(root, "ref2"), fn)
            c_ref2 = reference.cpu
            t_sweep2 = sweep(spec2, args.num_cpus, fn)
            c_sweep2 = sweep.cpu
            marg = ((t_sweep2 - t_sweep) - (t_ref2 - t_ref)) / n
            marg_cpu = ((c_sweep2 - c_sweep) - (c_ref2 - c_ref)) / n
            print(f"  {2 * n} trials: in one process {t_ref2:.2f} s, sweep {t_sweep2:.2f} s")
            print(f"  marginal overhead     {marg:7.3f} s per trial, {marg / s:.3f} s per seed "
                  f"(no fixed costs); CPU {marg_cpu:.3f} s per trial")
        ray.shutdown()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
