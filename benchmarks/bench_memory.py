"""Peak resident memory of an A7 trial (6.35 million pairs) on CPU with the default mini-batching.

    python benchmarks/bench_memory.py                      # MLP, S=1, 2 steps
    python benchmarks/bench_memory.py --arch forge --seeds 2 --steps 3
    python benchmarks/bench_memory.py --group S6           # a smaller group, same code path
    python benchmarks/bench_memory.py --train-logit-budget 1e12   # before: one logits tensor

A fresh Python process builds the task, then runs `run_trial` for a few optimizer steps with the
default config (mini-batches of optim.max_full_batch pairs, eval on metrics.eval_max_pairs
sampled pairs per split), and reports ru_maxrss (peak RSS of the process) next to the RSS
after imports and after building the task. Target: within 8 GiB.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time
import torch
torch.set_num_threads(int(sys.argv[5]))
from grokray.config import TrialConfig
from grokray.tasks import make_task
import grokray.models.chunks as chunks
from grokray.trial import run_trial
if int(sys.argv[6]) > 0:
    chunks.TRAIN_LOGIT_BUDGET = chunks.CPU_CHUNK_BUDGET = int(sys.argv[6])

def rss_gib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 2**20
    return float("nan")

group, arch, S, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
after_import = rss_gib()
t0 = time.perf_counter()
task = make_task(group)
after_task = rss_gib()
cfg = TrialConfig.from_dict({"group": group, "arch": arch, "steps": steps, "eval_every": steps,
                             "seeds": list(range(S)), "device": "cpu"})
t1 = time.perf_counter()
r = run_trial(cfg)
t2 = time.perf_counter()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
print(json.dumps({"group": group, "pairs": len(task), "arch": arch, "seeds": S, "steps": steps,
                  "status": [s.status for s in r.seeds], "error": r.seeds[0].error,
                  "rss_after_import_gib": after_import, "rss_after_task_gib": after_task,
                  "peak_rss_gib": peak, "task_s": t1 - t0, "trial_s": t2 - t1}))
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--group", default="A7")
    ap.add_argument("--arch", default="mlp")
    ap.add_argument("--seeds", type=int, default=1, help="S, seeds trained together")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--limit-gib", type=float, default=8.0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--train-logit-budget", type=float, default=0,
                    help="override the trainer's logits chunk budgets (0: keep; 1e12: none)")
    args = ap.parse_args(argv)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, args.group, args.arch, str(args.seeds), str(args.steps),
         str(args.threads), str(int(args.train_logit_budget))], capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stderr[-3000:], file=sys.stderr)
        return 1
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["within_limit"] = out["peak_rss_gib"] <= args.limit_gib
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{out['group']} ({out['pairs']:,} pairs), {out['arch']}, S={out['seeds']}, "
              f"{out['steps']} steps: status {out['status']}")
        print(f"  RSS after imports {out['rss_after_import_gib']:.2f} GiB, after task "
              f"{out['rss_after_task_gib']:.2f} GiB, peak {out['peak_rss_gib']:.2f} GiB "
              f"(limit {args.limit_gib:g} GiB: {'ok' if out['within_limit'] else 'OVER'})")
        print(f"  task build {out['task_s']:.1f} s, trial {out['trial_s']:.1f} s")
    return 0 if out["within_limit"] else 1


if __name__ == "__main__":
    sys.exit(main())
