"""What continuing censored runs costs: the S4 capacity grid (sweeps/cpu/capacity.yaml) at a
smaller budget, then at a larger one continuing its censored runs, against the larger budget
trained from step 0; seed-steps trained (from the trials tables) and process CPU seconds.

    python benchmarks/bench_continue.py              # 4 small cells, 1,000 -> 2,500 steps
    python benchmarks/bench_continue.py --steps 4000 10000 --cells 8x8 16x8

The grid's own FORGE config has `forge.lambda_schedule: linear` over the whole budget, so its
lambda_alg(t) depends on `steps` and continuation is refused (printed first, from the plan); the
measured variant sets `forge.lambda_schedule: constant` (everything else as in the spec). Cells
are `RxD` (model.rank x model.d); the default ones (R*d 64-192, below the grid's transition) are
censored at both budgets. In-process (LocalExecutor), one torch thread.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch
import yaml

from grokray.sweep.executors.local import LocalExecutor
from grokray.sweep.plan import make_plan
from grokray.sweep.spec import load_spec
from grokray.sweep.writer import run_plan

SPEC = Path(__file__).resolve().parent.parent / "sweeps" / "cpu" / "capacity.yaml"


def _spec(tmp: Path, out: str, steps: int, cells: list[tuple[int, int]], schedule: str | None):
    d = yaml.safe_load(SPEC.read_text())
    d["out"], d["steps"], d["name"] = str(tmp / out), steps, "capacity_cpu"
    d.pop("axes")
    d["zip"] = [{"model.rank": [c[0] for c in cells], "model.d": [c[1] for c in cells]}]
    if schedule:
        d["config"]["forge"] = {"lambda_schedule": schedule}
    p = tmp / f"{out}-{steps}.yaml"
    p.write_text(yaml.safe_dump(d))
    return load_spec(p)


def _run(spec) -> tuple[float, int, object]:
    plan = make_plan(spec)
    c0 = time.process_time()
    run_plan(plan, LocalExecutor())
    cpu = time.process_time() - c0
    t = pd.concat(pd.read_parquet(p) for p in Path(spec.sweep_dir, "trials").glob("*.parquet"))
    t = t[t["run_id"] == plan.run_id]
    start = t["continued_from_step"].fillna(0).astype(int) if "continued_from_step" in t else 0
    return cpu, int((t["steps_run"] - start).sum()), plan


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, nargs=2, default=[1000, 2500])
    ap.add_argument("--cells", nargs="+", default=["8x8", "8x12", "16x8", "16x12"])
    args = ap.parse_args()
    torch.set_num_threads(1)
    cells = [tuple(int(x) for x in c.split("x")) for c in args.cells]
    small, large = args.steps
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        _run(_spec(tmp, "spec", small, cells[:1], None))  # the spec's own schedule: refused
        plan = make_plan(_spec(tmp, "spec", large, cells[:1], None))
        print("as specified (lambda_schedule linear):", *plan.continuations.lines(), sep="\n  ")
        cpu_a, steps_a, _ = _run(_spec(tmp, "a", small, cells, "constant"))
        cpu_c, steps_c, plan = _run(_spec(tmp, "a", large, cells, "constant"))
        cpu_b, steps_b, _ = _run(_spec(tmp, "b", large, cells, "constant"))
        t = pd.concat(pd.read_parquet(p) for p in (tmp / "a" / "capacity_cpu" / "trials")
                      .glob("*.parquet"))
    print(*plan.continuations.lines(), sep="\n")
    print(f"cells {' '.join(args.cells)} x 2 seeds, lambda_schedule constant:")
    print(f"  {small:,} steps from 0:           {steps_a:>9,} seed-steps  {cpu_a:7.1f} s CPU")
    print(f"  {large:,} continued from {small:,}: {steps_c:>9,} seed-steps  {cpu_c:7.1f} s CPU")
    print(f"  {large:,} steps from 0:           {steps_b:>9,} seed-steps  {cpu_b:7.1f} s CPU")
    print(f"  continued / from 0: steps {steps_c / steps_b:.3f}, CPU {cpu_c / cpu_b:.3f} "
          f"(missing-steps share {(large - small) / large:.3f})")
    print(t.groupby("steps")["status"].value_counts().to_string())


if __name__ == "__main__":
    main()
