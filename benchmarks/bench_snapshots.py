"""What snapshots cost: a trial's process CPU time with snapshots off and on, and their bytes.

    python benchmarks/bench_snapshots.py                 # three CPU-ledger trials, 2 rounds
    python benchmarks/bench_snapshots.py --rounds 3

Each config (CPU-ledger sizes: nonabelian_cpu's A4 FORGE and matched MLP, capacity_cpu's
largest FORGE on S4) is trained with `snapshots: off` and with the default snapshots, in
alternating order, one torch thread; printed per config: the best process CPU seconds of each
(the trial's own work: other processes' load does not count), their ratio, the snapshots'
Parquet bytes, and the driver's CPU seconds to build and write that file (`write_frames`).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from grokray.config import TrialConfig
from grokray.schema import curve_frame, snapshot_frame, trial_frame
from grokray.sweep import store
from grokray.trial import run_trial

CONFIGS = {
    "A4 forge (nonabelian_cpu)": {"group": "A4", "arch": "forge", "steps": 5000,
                                  "eval_every": 50, "seeds": [0, 1, 2], "train_frac": 0.5},
    "A4 mlp matched (nonabelian_cpu)": {"group": "A4", "arch": "mlp", "steps": 5000,
                                        "eval_every": 50, "seeds": [0, 1, 2], "train_frac": 0.5,
                                        "model.matched_budget": True},
    "S4 forge R64 d32 (capacity_cpu)": {"group": "S4", "arch": "forge", "steps": 4000,
                                        "eval_every": 50, "seeds": [0, 1], "train_frac": 0.5,
                                        "model.rank": 64, "model.d": 32},
}


def _cpu(cfg: TrialConfig):
    t = time.process_time()
    r = run_trial(cfg)
    return time.process_time() - t, r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2, help="alternating off/on rounds (best of)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"{'config':34s} {'off s':>7s} {'on s':>7s} {'on/off':>7s} {'snap kB':>8s} "
          f"{'write s':>8s}  statuses")
    for name, d in CONFIGS.items():
        base = TrialConfig.from_dict({**d, "device": "cpu"})
        off, on = [], []
        for k in range(args.rounds):
            order = [("off", base.with_overrides({"snapshots": "off"})), ("on", base)]
            for label, cfg in (order if k % 2 == 0 else order[::-1]):
                s, r = _cpu(cfg)
                (off if label == "off" else on).append(s)
                if label == "on":
                    kept = r
        with tempfile.TemporaryDirectory() as tmp:
            frames = (trial_frame(kept, "b", "r"), curve_frame(kept, "b", "r"))
            t = time.process_time()
            snaps = snapshot_frame(kept, "b", "r")
            store.write_frames(tmp, *frames, config_hash="h", run_id="r", snapshots=snaps)
            write_s = time.process_time() - t
            nbytes = sum(p.stat().st_size for p in Path(tmp, "snapshots").iterdir())
        print(f"{name:34s} {min(off):7.2f} {min(on):7.2f} {min(on) / min(off):7.3f} "
              f"{nbytes / 1e3:8.1f} {write_s:8.3f}  "
              + ",".join(f"{s.status}@{s.steps_run}" for s in kept.seeds))


if __name__ == "__main__":
    main()
