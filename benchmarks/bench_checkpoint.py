"""What a checkpoint costs a trial: the same trial with and without checkpoints, side by side in
one process, and each checkpoint's size.

    python benchmarks/bench_checkpoint.py                 # the CPU ledger's largest trials
    python benchmarks/bench_checkpoint.py --steps 300 --every 10 --rounds 3
    python benchmarks/bench_checkpoint.py --spec sweeps/cpu/scaling.yaml --top 1

Clock: process CPU seconds (a loaded machine moves the wall clock far more than the CPU time),
with the wall beside it.

The trials: the `--top` largest configs (parameters x seeds) of each gradient-trained family in
`--spec` (default: every spec of the CPU ledger, sweeps/cpu/), trained for `--steps` steps
(metrics.patience 0: no seed stops early) as the ledger runs them (their dtype, device cpu). Each
round runs the trial twice, alternating which goes first: without checkpoints, and with a
checkpoint every `--every` steps (asked by the hook, as the driver asks; more often than a real
trial, so that the checkpoints' cost stands above the noise), each written to a local
checkpoints/ dir through the driver's own files code (encode, atomic write, fsync, the older
state removed: everything a `--local` sweep does; on Ray the write is the driver's and the trial
pays a put to the actor instead). Reported per trial: both runs' process CPU and wall (medians of
the rounds), the time inside the checkpoints (timed around each one), the difference of the two
runs' CPU per checkpoint, the state and delta sizes, and the cost at the default `checkpoint_every`
(600 s): the time of one checkpoint over 600 s of training, the share of trial time that
checkpoints take. `--json FILE` keeps it all.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DEFAULT_EVERY_S = 600.0


class TimedFiles:
    """A checkpoint hook that writes through the driver's `Files` and times every checkpoint
    (from the trainer's call of `asked` that said yes to the end of the write)."""

    def __init__(self, root: str, every_steps: int):
        from grokray.sweep.checkpoint_store import Files

        self.files = Files(root)
        self.every, self.calls = every_steps, 0
        self.t_ask = self.c_ask = 0.0
        self.times: list[float] = []
        self.cpu: list[float] = []
        self.sizes: list[tuple[int, int]] = []

    def chain(self, config_hash, every_s=0.0):  # noqa: ANN001, ANN201, D102
        return None

    def asked(self) -> bool:  # noqa: D102
        n, self.calls = self.calls, self.calls + 1
        if n > 0 and n % self.every == 0:
            self.t_ask, self.c_ask = time.perf_counter(), time.process_time()
            return True
        return False

    def asked_at_end(self) -> bool:  # noqa: D102
        return False

    def save(self, config_hash, step, delta, state) -> None:  # noqa: ANN001, D102
        self.files.write(config_hash, step, delta, state)
        self.times.append(time.perf_counter() - self.t_ask)
        self.cpu.append(time.process_time() - self.c_ask)
        self.sizes.append((len(state), len(delta)))

    def done(self, config_hash) -> None:  # noqa: ANN001, D102
        pass


def largest(specs: list[str], top: int) -> list:
    """The `top` largest configs (parameters x seeds) of each gradient-trained family in the
    specs."""
    from grokray.checkpoint.hook import checkpoints_of
    from grokray.families import get_family
    from grokray.sweep.spec import load_spec
    from grokray.tasks import make_task

    seen, rows = set(), []
    for path in specs:
        spec = load_spec(path)
        if spec.search is not None:
            continue
        for cfg in spec.trials():
            if not checkpoints_of(cfg.arch) or cfg.config_hash() in seen:
                continue
            seen.add(cfg.config_hash())
            task = make_task(cfg.group, cfg.op)
            n = get_family(cfg.arch).model.count_params(cfg, task.n_in, task.n_out)
            rows.append((n * len(cfg.seeds), n, os.path.basename(path), cfg))
    rows.sort(key=lambda r: -r[0])
    out = []
    for arch in dict.fromkeys(r[3].arch for r in rows):
        out += [r for r in rows if r[3].arch == arch][:top]
    return out


def one(cfg, steps: int, every: int, with_ckpt: bool
        ) -> tuple[float, float, TimedFiles | None]:
    """(wall, process CPU, the hook) of one run of the trial."""
    from grokray.trial import run_trial

    hook = None
    with tempfile.TemporaryDirectory() as root:
        if with_ckpt:
            hook = TimedFiles(root, every)
        t0, c0 = time.perf_counter(), time.process_time()
        run_trial(cfg, checkpoints=hook)
        return time.perf_counter() - t0, time.process_time() - c0, hook


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", nargs="*", default=None, help="sweep specs (default sweeps/cpu/)")
    ap.add_argument("--top", type=int, default=1, help="largest configs of each family")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--every", type=int, default=2, help="steps between checkpoints")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    specs = args.spec or sorted(glob.glob("sweeps/cpu/*.yaml"))
    out = []
    for total, n, spec, cfg in largest(specs, args.top):
        cfg = cfg.with_overrides({"steps": args.steps, "metrics.patience": 0, "device": "cpu",
                                  "checkpoint_every": DEFAULT_EVERY_S,
                                  "eval_every": max(1, args.steps // 10)})
        walls: dict[bool, list[float]] = {False: [], True: []}
        cpus: dict[bool, list[float]] = {False: [], True: []}
        inside, inside_cpu, sizes, n_ck = [], [], [], 0
        for r in range(args.rounds):
            for with_ckpt in ((False, True) if r % 2 == 0 else (True, False)):
                wall, cpu, hook = one(cfg, args.steps, args.every, with_ckpt)
                walls[with_ckpt].append(wall)
                cpus[with_ckpt].append(cpu)
                if hook is not None:
                    inside += hook.times
                    inside_cpu += hook.cpu
                    sizes = hook.sizes
                    n_ck = len(hook.times)
        w0, w1 = statistics.median(walls[False]), statistics.median(walls[True])
        c0, c1 = statistics.median(cpus[False]), statistics.median(cpus[True])
        per_inside = statistics.median(inside)
        per_inside_cpu = statistics.median(inside_cpu)
        per_diff = (c1 - c0) / max(1, n_ck)
        step_s = c0 / args.steps
        state_b, delta_b = max(s for s, _ in sizes), max(d for _, d in sizes)
        row = {
            "spec": spec, "arch": cfg.arch, "group": cfg.group, "dtype": cfg.dtype,
            "seeds": len(cfg.seeds), "params_per_seed": n, "params_total": total,
            "steps": args.steps, "checkpoints": n_ck, "wall_without_s": w0,
            "wall_with_s": w1, "cpu_without_s": c0, "cpu_with_s": c1,
            "cpu_ratio_with_over_without": c1 / c0,
            "checkpoint_s_timed": per_inside, "checkpoint_cpu_s_timed": per_inside_cpu,
            "checkpoint_cpu_s_by_difference": per_diff,
            "step_s": step_s, "state_bytes": state_b, "delta_bytes_max": delta_b,
            "share_at_600s": per_inside / DEFAULT_EVERY_S,
        }
        out.append(row)
        print(f"{spec} {cfg.arch} {cfg.group} {cfg.dtype} {len(cfg.seeds)} seeds x {n:,} "
              f"params: {args.steps} steps, process CPU {c0:.2f} s without, {c1:.2f} s with "
              f"{n_ck} checkpoints (x{c1 / c0:.3f}; wall {w0:.2f} / {w1:.2f} s); one checkpoint "
              f"{per_inside * 1e3:.1f} ms wall, {per_inside_cpu * 1e3:.1f} ms CPU timed, "
              f"{per_diff * 1e3:.1f} ms CPU by difference ({per_inside / step_s:.1f} steps); "
              f"state "
              f"{state_b / 1e6:.2f} MB, delta <= {delta_b / 1e6:.2f} MB; at checkpoint_every "
              f"600 s: {100 * per_inside / DEFAULT_EVERY_S:.4f}% of trial time", flush=True)
    short = short_families()
    for (scale, arch), (cpu_s, name) in sorted(short.items()):
        print(f"no checkpoints: {arch} at {scale} scale, its longest trial {cpu_s:.0f} CPU s by "
              f"the cost model ({name}): {'below' if cpu_s < DEFAULT_EVERY_S else 'ABOVE'} the "
              f"default interval of {DEFAULT_EVERY_S:.0f} s", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"trials": out, "short_families": {f"{k[0]}/{k[1]}": v[0] for k, v in
                                                         short.items()}}, f, indent=1)


def short_families() -> dict[tuple[str, str], tuple[float, str]]:
    """The longest trial of the families without checkpoints (RFM, Hamiltonian) in the CPU and
    paper ledgers, by the cost model (grokray.cost; CPU seconds at its reference sgemm rate)."""
    from grokray.checkpoint.hook import checkpoints_of
    from grokray.cost.model import has_model, trial_cost
    from grokray.sweep.spec import load_spec

    out: dict[tuple[str, str], tuple[float, str]] = {}
    for scale in ("cpu", "paper"):
        for path in sorted(glob.glob(f"sweeps/{scale}/*.yaml")):
            spec = load_spec(path)
            if spec.search is not None:
                continue
            for cfg in spec.trials():
                if checkpoints_of(cfg.arch) or not has_model(cfg):
                    continue
                n = cfg.rfm.iters if cfg.arch == "rfm" else cfg.steps
                s = trial_cost(cfg, [n] * len(cfg.seeds)).cpu_s
                if s > out.get((scale, cfg.arch), (0.0, ""))[0]:
                    out[(scale, cfg.arch)] = (s, os.path.basename(path))
    return out


if __name__ == "__main__":
    main()
