"""`grokray recompute --metric spectrum` over a CPU-ledger sweep against rerunning that sweep with
spectrum online (target: >= 10x faster).

    python benchmarks/bench_recompute.py                                 # nonabelian_cpu
    python benchmarks/bench_recompute.py --spec sweeps/cpu/fourier_sign.yaml --rounds 2

In one process, one torch thread: the sweep (`grokray sweep SPEC --local`, its spec with
`metrics.cheap: [spectrum]` added, into a temporary dir) is run and timed: this is what getting
spectrum by rerunning costs. Then `grokray recompute DIR --metric spectrum` over what it wrote
(every snapshot of every seed) is timed `--rounds` times (its recomputed/ dir removed before
each; best of). Printed: process CPU and wall seconds of each, their ratios, the values
computed, the largest difference from the online spectrum at the same steps, and the load
average at the start and the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml

from grokray.cli import main as grokray

ROOT = Path(__file__).resolve().parents[1]


def _timed(fn):
    c, w = time.process_time(), time.perf_counter()
    out = fn()
    return time.process_time() - c, time.perf_counter() - w, out


def _spec_with_spectrum(spec: Path, out: Path) -> Path:
    d = yaml.safe_load(spec.read_text())
    metrics = d.setdefault("config", {}).setdefault("metrics", {})
    cheap = list(metrics.get("cheap", []))
    metrics["cheap"] = cheap + ["spectrum"] * ("spectrum" not in cheap)
    d["out"] = str(out)
    path = out / spec.name
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    return path


def _max_diff(sweep_dir: Path) -> tuple[int, float]:
    key = ["config_hash", "seed", "step"]
    online = pd.concat(pd.read_parquet(p) for p in (sweep_dir / "curves").glob("*.parquet"))
    rec = pd.concat(pd.read_parquet(p) for p in
                    (sweep_dir / "recomputed" / "spectrum").glob("*.parquet"))
    j = rec.merge(online, on=key, suffixes=("_rec", "_onl"))
    cols = ["metric_eff_modes", "metric_n_key_modes", "metric_top_mode", "metric_top_mode_frac"]
    diff = max(float(np.nanmax(np.abs(j[f"{c}_rec"] - j[f"{c}_onl"]))) for c in cols)
    return len(rec), diff


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=str(ROOT / "sweeps" / "cpu" / "nonabelian.yaml"),
                    help="a CPU-ledger sweep spec (default sweeps/cpu/nonabelian.yaml)")
    ap.add_argument("--rounds", type=int, default=3, help="recompute runs (best of)")
    ap.add_argument("--keep", metavar="DIR", help="write the sweep here and keep it")
    args = ap.parse_args()
    torch.set_num_threads(1)
    load0 = os.getloadavg()
    tmp = Path(args.keep or tempfile.mkdtemp(prefix="bench-recompute-"))
    tmp.mkdir(parents=True, exist_ok=True)
    spec = _spec_with_spectrum(Path(args.spec), tmp)
    name = yaml.safe_load(spec.read_text())["name"]
    sweep_dir = tmp / name
    if sweep_dir.exists():
        shutil.rmtree(sweep_dir)
    cpu_s, wall_s, rc = _timed(lambda: grokray(["sweep", str(spec), "--local", "--plain",
                                                 "--no-summary"]))
    assert rc == 0, f"the sweep exited {rc}"
    snaps = pd.concat(pd.read_parquet(p, columns=["config_hash", "seed", "step"])
                      for p in (sweep_dir / "snapshots").glob("*.parquet")).drop_duplicates()
    runs = []
    for _ in range(args.rounds):
        shutil.rmtree(sweep_dir / "recomputed", ignore_errors=True)
        c, w, rc = _timed(lambda: grokray(["recompute", str(sweep_dir), "--metric", "spectrum",
                                           "--plain"]))
        assert rc == 0, f"recompute exited {rc}"
        runs.append((c, w))
    n, diff = _max_diff(sweep_dir)
    rc_cpu, rc_wall = min(c for c, _ in runs), min(w for _, w in runs)
    load1 = os.getloadavg()
    print(f"\nsweep {name} ({args.spec}): {len(snaps)} snapshots of "
          f"{snaps[['config_hash', 'seed']].drop_duplicates().shape[0]} seeds")
    print(f"{'':34s} {'CPU s':>8s} {'wall s':>8s}")
    print(f"{'sweep, spectrum online':34s} {cpu_s:8.2f} {wall_s:8.2f}")
    print(f"{'recompute --metric spectrum':34s} {rc_cpu:8.2f} {rc_wall:8.2f}   (best of "
          f"{args.rounds}: " + ", ".join(f"{c:.2f}/{w:.2f}" for c, w in runs) + ")")
    print(f"{'ratio (sweep / recompute)':34s} {cpu_s / rc_cpu:8.1f} {wall_s / rc_wall:8.1f}")
    print(f"values: {n} snapshots recomputed; largest |recomputed - online| of the spectrum "
          f"columns {diff:.2e}")
    print(f"load average (1, 5, 15 min): start {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}, "
          f"end {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
