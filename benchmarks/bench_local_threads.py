"""Tiny trials under `grokray sweep --local` on the thread rule (grokray/threads.py: a trial of
`resources.cpu` 1 trains on one torch thread) against the in-process executor as it ran before the
rule, at torch's default of a thread per core: the smoke sweep's grid (sweeps/smoke.yaml: Z11, S3,
D4 x MLP, FORGE x 2 seeds), at a smaller step budget, both sides run through `LocalExecutor` in
this process, interleaved, wall and process CPU seconds per round, medians and their ratio.

    python benchmarks/bench_local_threads.py               # 100 steps, 3 rounds (minutes)
    python benchmarks/bench_local_threads.py --steps 300 --rounds 5

"Before" is `LocalExecutor(cpu=N)` with N torch's default count in this process (what the
in-process executor trains on without the rule); "after" is `cpu: 1`, the spec's default.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch
import yaml

from grokray.shipped import SWEEP, resolve
from grokray.sweep.executors.local import LocalExecutor
from grokray.sweep.plan import make_plan
from grokray.sweep.spec import load_spec
from grokray.sweep.writer import run_plan


def _spec(tmp: Path, name: str, steps: int):
    d = yaml.safe_load(Path(resolve("smoke", SWEEP)).read_text())
    d["out"], d["name"], d["steps"] = str(tmp), name, steps
    p = tmp / f"{name}.yaml"
    p.write_text(yaml.safe_dump(d))
    return load_spec(p)


def _round(tmp: Path, name: str, steps: int, cpu: float) -> tuple[float, float]:
    """One fresh sweep of the grid in process: (wall s, process CPU s)."""
    plan = make_plan(_spec(tmp, name, steps))
    t0, c0 = time.perf_counter(), time.process_time()
    run_plan(plan, LocalExecutor(cpu=cpu))
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    default = torch.get_num_threads()
    sides = {f"before ({default} threads)": float(default), "after (1 thread)": 1.0}
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in sides}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        _round(tmp, "warmup", 20, 1.0)  # imports, group tables, first-call set-up
        for r in range(args.rounds):
            for i, (side, cpu) in enumerate(sides.items()):
                times[side].append(_round(tmp, f"s{r}_{i}", args.steps, cpu))
    print(f"smoke grid (6 trials, 2 seeds), {args.steps} steps, {args.rounds} rounds, "
          f"medians; torch {torch.__version__}")
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in times.items()}
    for side, (wall, cpu) in med.items():
        print(f"  {side:<22} wall {wall:7.2f} s   CPU {cpu:7.2f} s")
    (bw, bc), (aw, ac) = med.values()
    print(f"  before / after: wall {bw / aw:.2f}x, CPU {bc / ac:.2f}x")


if __name__ == "__main__":
    main()
