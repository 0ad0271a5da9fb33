"""Packs of groups of one order and of Grokfast filters, float32 on CPU: process CPU packed vs
each config alone, and the share of (config, seed) with the same status and grok step.

    python benchmarks/bench_pack_groups.py --arch mlp --groups D4 Q8 Z2xZ4 Z8 --steps 1500
    python benchmarks/bench_pack_groups.py --arch mlp --group Z31 --filters none ema ma

One process, one torch thread, process CPU time (a shared machine's load does not enter).
"""

from __future__ import annotations

import argparse
import time

import torch

from grokray.config import TrialConfig
from grokray.pack import pack_key, run_pack
from grokray.trial import run_trial


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="mlp")
    ap.add_argument("--groups", nargs="+", default=None, help="one config per group")
    ap.add_argument("--group", default="D4", help="the group when --filters is given")
    ap.add_argument("--filters", nargs="+", default=None, help="one config per Grokfast filter")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--wd", type=float, default=1.0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    base = {"arch": args.arch, "train_frac": 0.5, "device": "cpu", "steps": args.steps,
            "seeds": list(range(args.seeds)), "eval_every": 50, "model.matched_budget": True,
            "grokfast.window": 20, "optim.lr": args.lr, "optim.weight_decay": args.wd}
    if args.filters:
        configs = [TrialConfig.from_dict({**base, "group": args.group, "grokfast.filter": f})
                   for f in args.filters]
    else:
        configs = [TrialConfig.from_dict({**base, "group": g}) for g in args.groups or ["D4"]]
    assert len({pack_key(c) for c in configs}) == 1, "these configs do not pack"
    t0 = time.process_time()
    alone = [run_trial(c) for c in configs]
    t_alone = time.process_time() - t0
    t0 = time.process_time()
    packed = run_pack(configs)
    t_packed = time.process_time() - t0
    same = total = 0
    for p, a, c in zip(packed, alone, configs, strict=True):
        for sp, sa in zip(p.seeds, a.seeds, strict=True):
            total += 1
            same += (sp.status, sp.grok_step) == (sa.status, sa.grok_step)
        print(f"{c.group:8s} {c.grokfast.filter:5s} alone "
              f"{[(s.status, s.grok_step) for s in a.seeds]}  packed "
              f"{[(s.status, s.grok_step) for s in p.seeds]}")
    print(f"process CPU: alone {t_alone:.1f} s, packed {t_packed:.1f} s "
          f"({t_alone / t_packed:.2f}x); same status and grok step: {same}/{total}")


if __name__ == "__main__":
    main()
