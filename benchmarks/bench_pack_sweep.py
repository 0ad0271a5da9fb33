"""Whole sweeps through `grokray sweep`, `--pack auto` vs `--pack off`: the same grid, the same
seeds, on this machine, one after the other (the order alternates from cell to cell so that both
modes share the machine's noise).

    python benchmarks/bench_pack_sweep.py                       # 8 cells, about 10 min quiet
    python benchmarks/bench_pack_sweep.py --scale 0.3           # a quick look (fewer steps)
    python benchmarks/bench_pack_sweep.py --archs mlp --groups D4 --scale 2
    python benchmarks/bench_pack_sweep.py --modes auto 6 off    # any --pack values

A cell is one (arch, group): a sweep of 12 configs (lr 3 x weight decay 2 x, for FORGE,
lambda_alg 2, for the MLP, Grokfast EMA alpha 2) x `--seeds` seeds, `metrics.patience` 0 (no
early stop, so both modes do the same seed-steps), float32, on an embedded local Ray of
`--num-cpus` CPUs (concurrency = that), each sweep a fresh `grokray sweep SPEC --plain` process
into its own output dir. Reported per cell and mode: seed-steps (from the trials table's
steps_run), sweep wall (the command's, Ray's start included), trial CPU (the sum of the `cpu`
figures of the progress lines: each trial's process CPU, a pack's shared by seed-steps), seed-
steps/s on wall and on trial CPU, the ratios to `off`, and the share of (config, seed) with the
same status and grok step as under `off` (with how many grokked). `--json FILE` keeps it all.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time

LRS, WDS = (3e-3, 1e-2, 3e-2), (0.1, 1.0)
FOURTH = {"mlp": ("grokfast.alpha", (0.9, 0.98)), "forge": ("forge.lambda_alg", (0.01, 0.03))}
STEPS = {("mlp", "S3"): 600, ("mlp", "D4"): 600, ("mlp", "S4"): 300, ("mlp", "Z97"): 60,
         ("forge", "S3"): 400, ("forge", "D4"): 300, ("forge", "S4"): 80, ("forge", "Z97"): 40}
"""steps per cell at --scale 1 (about 10 minutes for all eight on a quiet 2-core machine)"""
CPU_LINE = re.compile(r"\(([\d.]+)s, cpu ([\d.]+)s\)")


def spec_text(arch: str, group: str, steps: int, seeds: int, cpus: int) -> str:
    """The sweep spec of one cell (YAML)."""
    key, values = FOURTH[arch]
    config = {"arch": arch, "group": group, "device": "cpu", "dtype": "float32",
              "metrics": {"patience": 0}}
    if arch == "mlp":
        config["grokfast"] = {"filter": "ema"}
    spec = {"name": f"pack_{arch}_{group}", "out": "results", "config": config,
            "axes": {"optim.lr": list(LRS), "optim.weight_decay": list(WDS), key: list(values)},
            "seeds": seeds, "steps": steps, "eval_every": max(10, steps // 10),
            "resources": {"cpu": 1, "gpu": 0}, "concurrency": cpus, "retries": 1}
    return json.dumps(spec)  # JSON is YAML


def run_sweep(spec: str, out: str, pack: str, cpus: int) -> dict:
    """One `grokray sweep` process: its wall, the trial CPU of its progress lines, its rows."""
    import pandas as pd

    from grokray.sweep import store

    cmd = [os.path.join(os.path.dirname(sys.executable), "grokray"), "sweep", spec, "--out", out,
           "--plain", "--no-summary", "--num-cpus", str(cpus), "--pack", pack]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"bench_pack_sweep: {' '.join(cmd)} exited {proc.returncode}:\n"
                         f"{proc.stderr[-2000:]}")
    cpu = sum(float(m.group(2)) for m in CPU_LINE.finditer(proc.stderr))
    name = os.path.basename(spec).removesuffix(".yaml")
    df = store.read_trials(os.path.join(out, name))
    rows = {(h, int(s)): (st, None if pd.isna(g) else int(g)) for h, s, st, g in
            zip(df["config_hash"], df["seed"], df["status"], df["grok_step"], strict=True)}
    return {"wall_s": wall, "trial_cpu_s": cpu, "seed_steps": int(df["steps_run"].sum()),
            "rows": rows, "failed": int((df["status"] == "failed").sum())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--archs", nargs="+", default=["mlp", "forge"])
    ap.add_argument("--groups", nargs="+", default=["S3", "D4", "S4", "Z97"])
    ap.add_argument("--modes", nargs="+", default=["auto", "off"],
                    help="--pack values; the first is compared with the last (default auto off)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--scale", type=float, default=1.0, help="x the steps of every cell")
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--json", default=None, help="also write every figure to this file")
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()}", flush=True)
    print("arch  group steps  mode  seed-steps  wall s  trial CPU s  steps/s wall  steps/s CPU"
          "  x wall  x CPU  same status+grok step", flush=True)
    report, ref_mode = [], args.modes[-1]
    with tempfile.TemporaryDirectory(prefix="bench_pack_sweep_") as tmp:
        cells = list(itertools.product(args.archs, args.groups))
        for n, (arch, group) in enumerate(cells):
            steps = max(10, round(STEPS.get((arch, group), 100) * args.scale))
            spec = os.path.join(tmp, f"pack_{arch}_{group}.yaml")
            with open(spec, "w") as f:
                f.write(spec_text(arch, group, steps, args.seeds, args.num_cpus))
            modes = args.modes if n % 2 == 0 else args.modes[::-1]
            got = {m: run_sweep(spec, os.path.join(tmp, f"out_{m}"), m, args.num_cpus)
                   for m in modes}
            ref = got[ref_mode]
            for m in args.modes:
                r = got[m]
                same = sum(r["rows"].get(k) == v for k, v in ref["rows"].items())
                grokked = sum(st == "grokked" for st, _ in r["rows"].values())
                rec = {"arch": arch, "group": group, "steps": steps, "pack": m,
                       "seed_steps": r["seed_steps"], "wall_s": round(r["wall_s"], 2),
                       "trial_cpu_s": round(r["trial_cpu_s"], 2),
                       "rate_wall": r["seed_steps"] / r["wall_s"],
                       "rate_cpu": r["seed_steps"] / max(1e-9, r["trial_cpu_s"]),
                       "x_wall": ref["wall_s"] / r["wall_s"],
                       "x_cpu": ref["trial_cpu_s"] / max(1e-9, r["trial_cpu_s"]),
                       "same": same, "n": len(ref["rows"]), "grokked": grokked,
                       "failed": r["failed"]}
                report.append(rec)
                failed = f", {r['failed']} failed" if r["failed"] else ""
                print(f"{arch:5} {group:5} {steps:5} {m:>5} {rec['seed_steps']:>11,} "
                      f"{rec['wall_s']:>7.1f} {rec['trial_cpu_s']:>12.1f} "
                      f"{rec['rate_wall']:>13,.0f} {rec['rate_cpu']:>12,.0f} "
                      f"{rec['x_wall']:>6.2f}x {rec['x_cpu']:>5.2f}x  {same}/{rec['n']} "
                      f"({grokked} grokked{failed})",
                      flush=True)
    print(f"load average at end: {os.getloadavg()}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"load_end": os.getloadavg(), "cells": report}, f, indent=1)


if __name__ == "__main__":
    main()
