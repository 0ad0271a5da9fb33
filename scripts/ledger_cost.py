"""CPU cost per step of every trial of the CPU ledger's sweeps, from short probes.

    python scripts/ledger_cost.py [--steps 100] [--only scaling_cpu ...] > costs.jsonl

Each trial config of each ledger sweep (grokray reproduce's list) runs in this process with its
seeds, one torch thread (as a Ray trial with cpu 1), for --steps optimizer steps (RFM: its own
iterations), evaluations at the spec's cadence. One JSON line per trial: CPU seconds of the probe
(time.process_time), seed-steps run, CPU per trial-step with all seeds active. Multiply by the
steps a real run takes (grok step + patience, or the budget when censored) for its cost.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time


def main() -> int:
    import torch

    from grokray import shipped
    from grokray.commands.reproduce import ledger_specs
    from grokray.sweep.spec import load_spec
    from grokray.trial import run_trial

    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--only", nargs="*")
    args = ap.parse_args()
    torch.set_num_threads(1)
    for rel in ledger_specs("cpu"):
        spec = load_spec(shipped.path_of(rel))
        if args.only and spec.name not in args.only:
            continue
        for cfg in spec.trials():
            probe = cfg if cfg.arch == "rfm" else dataclasses.replace(
                cfg, steps=min(cfg.steps, args.steps))
            t0, c0 = time.perf_counter(), time.process_time()
            res = run_trial(probe)
            cpu, wall = time.process_time() - c0, time.perf_counter() - t0
            rows = res.seed_rows()
            run = [int(r.get("steps_run") or 0) for r in rows]
            print(json.dumps({
                "sweep": spec.name, "hash": cfg.config_hash(), "arch": cfg.arch,
                "arm": rows[0].get("arm") if rows else None, "group": cfg.group,
                "op": cfg.op, "budget": cfg.steps, "probe_steps": probe.steps,
                "seeds": len(cfg.seeds), "steps_run": run,
                "status": [r.get("status") for r in rows], "cpu_s": round(cpu, 2),
                "wall_s": round(wall, 2),
                "cpu_per_step": round(cpu / max(1, max(run)), 5),
                "label": {k: str(v) for k, v in zip(spec.swept_keys,
                          _values(cfg, spec.swept_keys), strict=True)},
            }), flush=True)
    return 0


def _values(cfg, keys):  # noqa: ANN001, ANN202
    from grokray.config import get_key

    return [get_key(cfg, k) for k in keys]


if __name__ == "__main__":
    sys.exit(main())
