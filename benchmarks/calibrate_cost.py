"""Calibrate the cost model (grokray/cost/): time `run_trial` per step over a small grid of
shapes, fit the per-kind coefficients, write grokray/cost/table.json.

    python benchmarks/calibrate_cost.py [--quick] [--repeats 2] [--out grokray/cost/table.json]
    python benchmarks/calibrate_cost.py --only forge hamiltonian   # re-probe these kinds only
    python benchmarks/calibrate_cost.py --refit     # refit the stored probes (work.py changed)

Each probe runs one config through `grokray.trial.run_trial` in this process at one torch thread
(as a ledger trial on a `cpu: 1` worker), never stopping early (patience 0), and reads process
CPU seconds at every evaluation (the progress callback, every K / 5 steps): the step cost is the
least-squares slope of CPU seconds over steps (evaluations included), the set-up its intercept.
RFM and the Hamiltonian trials report no progress: they run twice (K and 2K steps, or RFM
iterations) and the step cost is the difference / K. FORGE is probed with its algebra losses on
all the way (`forge`) and off (`forge_late`); a metric's cost is the same probe with and without
it, per seed and evaluation. Each probe is the fastest of --repeats runs (a loaded machine's CPU
seconds vary by up to 1.5x between runs). The host's sgemm rate (grokray/cost/host.py) is
measured and stored beside the coefficients: estimates on another host are scaled by the ratio
of the rates.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from typing import Any

LEDGER = {"train_frac": 0.5, "device": "cpu"}
GROUPS = ["S3", "D4", "A4", "F21", "S4", "Heis3", "A5", "Z97", "S5"]


def grid(quick: bool) -> list[tuple[str, dict[str, Any], int]]:
    """(kind, config, K) of every probe."""
    groups = ["S3", "S4", "A5", "Z97"] if quick else GROUPS
    seeds = [1, 3]
    out: list[tuple[str, dict[str, Any], int]] = []

    def grp(g: str) -> dict[str, Any]:
        return {"group": g, "op": "add"} if g.startswith("Z") else {"group": g}

    for g in groups:
        for S in seeds:
            base = {**LEDGER, **grp(g), "seeds": list(range(S))}
            out.append(("mlp", {**base, "arch": "mlp", "model.matched_budget": True}, 100))
            out.append(("forge", {**base, "arch": "forge",
                                  "forge.lambda_schedule": "constant"}, 50))
            if g in ("S3", "S4", "A5", "Z97", "S5"):
                out.append(("forge_late", {**base, "arch": "forge",
                                           "forge.lambda_schedule": "off"}, 100))
    for d, R in ((8, 8), (12, 24), (16, 64), (32, 32)):  # the capacity grid's shapes
        out.append(("forge", {**LEDGER, "group": "S4", "arch": "forge", "seeds": [0, 1],
                              "model.d": d, "model.rank": R}, 100))
    tr = {**LEDGER, "arch": "transformer", "transformer.d_model": 64, "transformer.d_mlp": 256,
          "metrics.patience": 0}
    for S in seeds:
        out.append(("transformer", {**tr, "group": "Z59", "op": "add", "seeds": list(range(S))},
                    100))
    out.append(("transformer", {**tr, "group": "S5", "train_frac": 0.4, "seeds": [0, 1, 2]}, 50))
    out.append(("transformer", {**LEDGER, "arch": "transformer", "group": "Z97", "op": "add",
                                "seeds": [0]}, 50))
    for p, S in (("Z31", 1), ("Z31", 2), ("Z61", 1), ("Z61", 2)):
        out.append(("rfm", {"arch": "rfm", "group": p, "op": "add", "train_frac": 0.5,
                            "device": "cpu", "seeds": list(range(S)), "eval_every": 1,
                            "rfm.kernel": "gaussian", "rfm.bandwidth": 2.5}, 4))
    ham = {"arch": "hamiltonian", "group": "Z2", "device": "cpu", "eval_every": 250,
           "optim.weight_decay": 0.0, "hamiltonian.rollout_steps": 1000}
    for system, step, S in (("harmonic", "mlp", 1), ("pendulum", "mlp", 3), ("kepler", "dad", 1),
                            ("harmonic", "dad", 3)):
        out.append(("hamiltonian", {**ham, "hamiltonian.system": system,
                                    "hamiltonian.step": step, "seeds": list(range(S))}, 500))
    return out


METRIC_PROBES = [  # (metric, config, K, costly): the metric on at every eval vs off
    ("spectrum", {**LEDGER, "group": "Z31", "op": "add", "train_frac": 0.7, "arch": "mlp",
                  "seeds": [0, 1], "eval_every": 5}, 20, False),
    ("nfa", {**LEDGER, "group": "Z31", "op": "add", "train_frac": 0.7, "arch": "mlp",
             "seeds": [0, 1], "eval_every": 5}, 20, True),
    ("wedderburn", {**LEDGER, "group": "S4", "arch": "forge", "seeds": [0, 1],
                    "eval_every": 5}, 20, False),
]


def cpu_of(cfg: dict[str, Any], steps: int, marks: list | None = None) -> float:
    """Process CPU seconds of run_trial(cfg) at `steps` (RFM: iterations); `marks` receives
    (step, CPU seconds so far) at every evaluation."""
    from grokray.config import TrialConfig
    from grokray.trial import run_trial

    d = {"metrics.patience": 0, **cfg}
    if d.get("arch") == "rfm":
        d["rfm.iters"], d["steps"] = steps, steps
    else:
        d["steps"] = steps
    c = TrialConfig.from_dict(d)
    t0 = time.process_time()
    res = run_trial(c, None if marks is None else
                    lambda p: marks.append((p.step, time.process_time() - t0)))
    dt = time.process_time() - t0
    bad = [s.error for s in res.seeds if s.status == "failed"]
    if bad:
        raise RuntimeError(f"probe failed: {bad[0]}")
    return dt


_WARM: set[str] = set()


def probe(kind: str, cfg: dict[str, Any], K: int, repeats: int = 1) -> dict[str, Any]:
    """The fastest of `repeats` measurements of one probe."""
    return min((_probe(kind, cfg, K) for _ in range(repeats)), key=lambda p: p["step_s"])


def features(p: dict[str, Any]) -> dict[str, Any]:
    """A stored probe with its multiply-adds counted again (by the current work.py)."""
    from grokray.config import TrialConfig
    from grokray.cost.work import step_macs

    c = TrialConfig.from_dict({**LEDGER, **p["config"]})
    return {**p, "macs_m": round(step_macs(c, p["kind"]), 4)}


def _probe(kind: str, cfg: dict[str, Any], K: int) -> dict[str, Any]:
    import numpy as np

    from grokray.config import TrialConfig
    from grokray.cost.work import shape, step_macs

    if kind not in _WARM:  # the first trial of a family in a process pays its lazy imports
        cpu_of(cfg, 2)
        _WARM.add(kind)
    if kind in ("rfm", "hamiltonian"):
        t1, t2 = cpu_of(cfg, K), cpu_of(cfg, 2 * K)
        step, setup = max((t2 - t1) / K, 1e-6), t1 - K * max((t2 - t1) / K, 0.0)
    else:
        marks: list[tuple[int, float]] = []
        cpu_of({**cfg, "eval_every": max(1, K // 5)}, K, marks)
        x, y = np.array(marks, float).T
        step, setup = np.polyfit(x, y, 1)
    c = TrialConfig.from_dict({**cfg, "steps": K})
    s = shape(c)
    return {"kind": kind, "group": c.group, "op": c.op, "seeds": len(c.seeds),
            "macs_m": round(step_macs(c, kind), 4), "pairs": s.pairs, "K": K,
            "step_s": round(float(step), 6), "setup_s": round(max(float(setup), 0.0), 4),
            "config": {k: v for k, v in cfg.items() if k not in LEDGER}}


def metric_probe(name: str, cfg: dict[str, Any], K: int, costly: bool) -> dict[str, Any]:
    from grokray.config import TrialConfig
    from grokray.cost.work import shape

    key = "metrics.costly" if costly else "metrics.cheap"
    extra = {key: [name], "metrics.costly_every": 1}
    t_off, t_on = cpu_of(cfg, K), cpu_of({**cfg, **extra}, K)
    c = TrialConfig.from_dict({**cfg, "steps": K})
    evals = K // c.eval_every + 1
    pairs = min(shape(c).pairs, 2 * c.metrics.eval_max_pairs)
    per = max(t_on - t_off, 0.0) / (evals * len(c.seeds)) / (pairs / 1e6)
    return {"metric": name, "group": c.group, "seeds": len(c.seeds), "evals": evals,
            "pairs": pairs, "s_per_seed_eval_per_mpairs": round(per, 5)}


def main(argv: list[str] | None = None) -> int:
    import torch

    from grokray.cost.host import SHAPE, host_key, measure_gflops
    from grokray.cost.table import PATH, fit

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="four groups only")
    ap.add_argument("--repeats", type=int, default=2, help="runs per probe (the fastest counts)")
    ap.add_argument("--only", nargs="+", metavar="KIND",
                    help="probe only these kinds; the stored table's other probes are kept")
    ap.add_argument("--refit", action="store_true",
                    help="no probes: count the stored probes' multiply-adds again and refit")
    ap.add_argument("--out", default=str(PATH))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    old = json.loads(open(args.out).read()) if (args.only or args.refit) else None
    if args.refit:
        old["kinds"] = fit([features(p) for p in old["probes"]])
        old["probes"] = [features(p) for p in old["probes"]]
        old["refit"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        return _write(args.out, old, f"refit {len(old['probes'])} stored probes")
    rates = [measure_gflops()]
    probes = [p for p in old["probes"] if p["kind"] not in args.only] if old else []
    for kind, cfg, K in grid(args.quick):
        if args.only and kind not in args.only:
            continue
        probes.append(probe(kind, cfg, K, args.repeats))
        print(json.dumps(probes[-1]), file=sys.stderr, flush=True)
    metrics = [] if not old else old["metric_probes"]
    for name, cfg, K, costly in [] if old else METRIC_PROBES:
        metrics.append(metric_probe(name, cfg, K, costly))
        print(json.dumps(metrics[-1]), file=sys.stderr, flush=True)
    rates.append(measure_gflops())
    if old:  # the kept probes were measured at the stored rate: keep it, say what was added
        rates = [old["reference_host"]["sgemm_gflops"]] * 2
    cmd = " ".join(["python benchmarks/calibrate_cost.py", *(argv or sys.argv[1:])])
    table = {
        "about": "grokray cost model calibration (grokray/cost/table.py): per kind, CPU s per "
                 "step a + S (b + c M), set-up s0 + s1 pairs/1e6; metrics: s per seed and eval "
                 "per million pairs; all at the reference host's sgemm rate",
        "command": cmd if not old else f"{old['command']}; then {cmd}",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds") if not old else
        f"{old['date']}; then {datetime.now(timezone.utc).isoformat(timespec='seconds')}",
        "reference_host": {"sgemm_gflops": round(max(rates), 2), "sgemm_shape": list(SHAPE),
                           "host": host_key(), "threads": 1, "clock": "process CPU"},
        "kinds": fit(probes),
        "metrics": {m["metric"]: m["s_per_seed_eval_per_mpairs"] for m in metrics},
        "gpu": {"calibrated": False, "nominal_tflops": 20.0, "step_floor_s": 0.002,
                "about": "uncalibrated: FLOPs (2 x multiply-adds, all seeds) at a nominal "
                         "rate, plus a per-step floor of kernel launches; no device has "
                         "measured it"},
        "probes": probes, "metric_probes": metrics,
    }
    return _write(args.out, table, f"{len(probes)} probes, sgemm {max(rates):.1f} GFLOP/s "
                  f"(start {rates[0]:.1f}, end {rates[1]:.1f})")


def _write(path: str, table: dict[str, Any], what: str) -> int:
    with open(path, "w") as f:
        json.dump(table, f, indent=1)
        f.write("\n")
    print(f"wrote {path}: {what}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
