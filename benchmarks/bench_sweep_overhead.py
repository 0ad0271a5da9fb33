"""Sweep overhead: many tiny trials through the sweep vs the same trials in one process.

    python benchmarks/bench_sweep_overhead.py                # 40 trials x 2 seeds, 2 at a time
    python benchmarks/bench_sweep_overhead.py --trivial --trials 120 --marginal
    python benchmarks/bench_sweep_overhead.py --tune         # on Ray Tune (searches, clusters)
    python benchmarks/bench_sweep_overhead.py --trivial --compare-batching

Both sides run the same `run_trial` calls on tiny configs (Z5, MLP, a few steps) and write the
same Parquet files. The reference runs them in a loop in this process; the sweep runs them
through `grokray.sweep` (plan, the executor `grokray sweep` gets on an embedded Ray: warm trial
workers, or Ray Tune with --tune; the one writer). Two sweeps of the same trials run in one Ray
session, as the sweeps of `grokray reproduce` do: the first starts its worker processes, the
second finds them warm (on Tune every sweep starts its own). Printed for each: its wall time
split into the time to the first trial (worker processes starting and importing torch and
grokray; Tune's set-up), the trials (first trial start to last trial end, in the workers) and
the time after the last trial (the last Parquet writes, Tune's clean-up); overhead per trial
and per seed, with and without `ray.init` (once per Ray session); with --marginal the cost of
one more trial (sweeps of N and 2N trials, both warm), which excludes every fixed cost; with
--compare-batching, sweeps with tiny configs batched (the default, executors.calls.tiny_calls) and
with one config per call alternate in the same Ray session (twice each), so load hits both
alike. Overhead = sweep wall time - reference wall time (trials 2 at a time on 2 CPUs against
one at a time in the reference, so it can come out negative).

CPU seconds are printed beside the wall times: this process's, plus (for the sweep) those of
every process under it (Ray's GCS, raylet, workers and trial actors, sampled every 0.5 s so
that an actor that exits is counted up to its last sample). On a shared, loaded machine the
wall time measures mostly the load; CPU seconds measure the work each side asks for. The load
average is printed at the start and at the end.
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


class Stamped:
    """A trial function that appends its start and end times (time.time()) to a file, so that
    the driver can split a sweep's wall time (workers on this machine write the same file)."""

    def __init__(self, fn, path: str) -> None:
        self.fn, self.path = fn, path

    def __call__(self, cfg):
        t0 = time.time()
        try:
            return self.fn(cfg)
        finally:
            with open(self.path, "a") as f:
                f.write(f"{t0!r} {time.time()!r}\n")

    def span(self) -> tuple[float, float]:
        """(first trial start, last trial end) since the file was last cleared."""
        rows = [tuple(map(float, ln.split())) for ln in open(self.path) if ln.strip()]
        return min(r[0] for r in rows), max(r[1] for r in rows)

    def clear(self) -> None:
        open(self.path, "w").close()


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
                "DashboardAgent", "RuntimeEnvAgent", "ImplicitFunc", "_Worker", "IDLE",
                "default_worker"):
        if key in cmd:
            return {"ImplicitFunc": "trial actors", "_Worker": "warm workers",
                    "IDLE": "idle workers",
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


def sweep(spec, session, trial_fn, tune: bool = False) -> float:
    """One sweep of `spec` with the executor `grokray reproduce` gives each of its sweeps (warm
    workers kept for the Ray session), or on Ray Tune (`tune`). Sets sweep.cpu, .by_kind and
    .parts (seconds to the first trial, of trials, after the last trial)."""
    from grokray.sweep.executors.tune import TuneExecutor
    from grokray.sweep.executors.warm import WarmExecutor
    from grokray.sweep.plan import make_plan
    from grokray.sweep.writer import run_plan

    plan = make_plan(spec)
    if tune:
        executor = TuneExecutor(session, name=f"bench-{plan.run_id}",
                                storage_path=spec.sweep_dir + "/_ray",
                                concurrency=spec.concurrency, retries=0, trial_fn=trial_fn)
    else:
        executor = WarmExecutor(session, concurrency=spec.concurrency, retries=0,
                                trial_fn=trial_fn)
    trial_fn.clear()
    with TreeCPU() as cpu:
        t0, w0 = time.perf_counter(), time.time()
        writer = run_plan(plan, executor)
        dt = time.perf_counter() - t0
    first, last = trial_fn.span()
    sweep.cpu, sweep.by_kind = cpu.seconds, cpu.by_kind
    sweep.parts = (first - w0, last - first, w0 + dt - last)
    assert len(writer.outcomes) == len(spec.trials())
    assert not any(o.error for o in writer.outcomes), writer.outcomes[0].error
    return dt


def report(label: str, n: int, s: int, t: float, t_ref: float, t_init: float, cpu: float,
           c_ref: float, parts: tuple[float, float, float], by_kind: dict[str, float]) -> None:
    over = t - t_ref
    print(f"  {label:22s}{t:7.2f} s, CPU {cpu:.2f} s (all processes)")
    print(f"    to the first trial  {parts[0]:7.2f} s   (workers start and import; Tune's set-up)")
    print(f"    trials              {parts[1]:7.2f} s   (first trial start to last trial end)")
    print(f"    after the last one  {parts[2]:7.2f} s   (last writes; Tune's clean-up)")
    print(f"    overhead per trial  {over / n:7.3f} s   per seed {over / (n * s):.3f} s; "
          f"with ray.init {(over + t_init) / n:.3f} s; CPU {(cpu - c_ref) / n:.3f} s")
    print("    CPU by process: " + ", ".join(
        f"{k} {v:.1f} s" for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1]) if v >= 0.05))


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
                    help="alternate batched and one-config-per-call sweeps")
    ap.add_argument("--tune", action="store_true",
                    help="run the sweeps on Ray Tune (what searches and joined clusters use); "
                         "default: warm trial workers, what a grid on the embedded Ray uses")
    args = ap.parse_args()

    import ray

    from grokray.sweep.session import RaySession
    from grokray.sweep.spec import parse_spec

    root = tempfile.mkdtemp(prefix="bench_sweep_")
    try:
        def spec_of(n: int, name: str):
            return parse_spec(tiny_spec_text(n, args.seeds, args.steps, args.concurrency, root,
                                             name), f"{name}.yaml")

        n, s = args.trials, args.seeds
        import torch

        torch.set_num_threads(1)  # as in a trial worker with cpu 1 (Ray sets OMP_NUM_THREADS)
        if args.trivial:
            base = trivial_trial
        else:
            from grokray.trial import run_trial as base
        fn = Stamped(base, os.path.join(root, "stamps.txt"))
        fn.clear()
        load0 = os.getloadavg()[0]
        spec = spec_of(n, "n")
        reference(spec_of(2, "warm"), os.path.join(root, "warm"), fn)  # imports, first-call costs
        t_ref = reference(spec, os.path.join(root, "ref"), fn)
        c_ref = reference.cpu

        t0 = time.perf_counter()
        with RaySession(num_cpus=args.num_cpus) as session:  # one Ray for every sweep
            t_init = time.perf_counter() - t0
            runs = []
            for k in range(2):
                t = sweep(spec_of(n, f"n{k}"), session, fn, args.tune)
                runs.append((t, sweep.cpu, sweep.parts, sweep.by_kind))

            kind = "trivial trials" if args.trivial else f"run_trial, {args.steps} steps each"
            how = "Ray Tune" if args.tune else "warm workers"
            print(f"{n} trials x {s} seeds ({kind}), {args.concurrency} at a time "
                  f"on {args.num_cpus} CPUs, {how} (ray {ray.__version__})")
            print(f"  load average          {load0:.1f} at the start, {os.getloadavg()[0]:.1f} "
                  "at the end (1 min)")
            print(f"  in one process        {t_ref:7.2f} s  ({t_ref / n:.3f} s per trial), "
                  f"CPU {c_ref:.2f} s")
            print(f"  ray.init              {t_init:7.2f} s  (once per Ray session)")
            for label, (t, c, parts, by_kind) in zip(
                    ("first sweep (cold)", "second sweep (session)"), runs, strict=True):
                report(label, n, s, t, t_ref, t_init, c, c_ref, parts, by_kind)
            t_sweep, c_sweep = runs[1][0], runs[1][1]
            if args.compare_batching:
                import grokray.sweep.executors.calls as calls

                best: dict[str, float] = {}
                best_cpu: dict[str, float] = {}
                for r in range(2):
                    for mode in ("batched", "one per call"):
                        keep = calls.MAX_TINY
                        calls.MAX_TINY = keep if mode == "batched" else 1
                        try:
                            t = sweep(spec_of(n, f"c{r}{mode[0]}"), session, fn, args.tune)
                        finally:
                            calls.MAX_TINY = keep
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
                t_sweep2 = sweep(spec2, session, fn, args.tune)
                c_sweep2 = sweep.cpu
                marg = ((t_sweep2 - t_sweep) - (t_ref2 - t_ref)) / n
                marg_cpu = ((c_sweep2 - c_sweep) - (c_ref2 - c_ref)) / n
                print(f"  {2 * n} trials: in one process {t_ref2:.2f} s, sweep {t_sweep2:.2f} s "
                      f"(against the second sweep of {n})")
                print(f"  marginal overhead     {marg:7.3f} s per trial, {marg / s:.3f} s "
                      f"per seed (no fixed costs); CPU {marg_cpu:.3f} s per trial; load "
                      f"{os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
