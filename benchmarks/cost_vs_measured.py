"""The cost model's estimate of every CPU ledger sweep beside measured times.

    python benchmarks/cost_vs_measured.py                       # vs the ledger run (docs)
    python benchmarks/cost_vs_measured.py --times OUT/reproduce_times.json   # vs a fresh run

Without --times the measured figures are those of the whole CPU ledger run of
docs/reproduction.md ("The ledger as measured": 19.7 min of sweeps at sgemm 138.5 GFLOP/s), and
XX
estimate made before it ran (`grokray reproduce` writes both). Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

LEDGER_RUN = {  # sweep: (wall s, trial CPU s), docs/reproduction.md, "The ledger as measured"
    "nonabelian_cpu": (16, 25), "z97_ablation_cpu": (88, 164), "a5_ablation_cpu": (118, 227),
    "scaling_cpu": (351, 680), "fourier_sign_cpu": (56, 57), "axioms_cpu": (12, 14),
    "capacity_cpu": (264, 456), "hamiltonian_cpu": (35, 57), "topology_cpu": (206, 393),
    "rfm_cpu": (34, 65),
}


def _from_model(out: str) -> list[dict]:
    from grokray import shipped
    from grokray.commands.reproduce import ledger_specs, model_estimates, model_record
    from grokray.sweep.spec import load_spec

    specs = [dataclasses.replace(load_spec(shipped.path_of(rel)), out=out)
             for rel in ledger_specs("cpu")]
    recs = []
    for spec, c in zip(specs, model_estimates(specs), strict=True):
        wall, cpu = LEDGER_RUN[spec.name]
        recs.append({"sweep": spec.name, "wall_s": wall, "trial_cpu_s": cpu, **model_record(c)})
    return recs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--times", help="a reproduce_times.json (records with the model's keys)")
    ap.add_argument("--out", default="/nonexistent/ledger",
                    help="without --times: the ledger dir whose rows give expected steps")
    args = ap.parse_args(argv)
    recs = json.load(open(args.times)) if args.times else _from_model(args.out)
    print("| sweep | measured wall (s) | model wall expected / upper (s) | wall / expected | "
          "measured trial CPU (s) | model CPU expected / upper (s) | CPU / expected | "
          "expected from rows |")
    print("|---|---|---|---|---|---|---|---|")
    tot = {k: 0.0 for k in ("w", "we", "wu", "c", "ce", "cu")}
    for r in recs:
        if "model_wall_s_expected" not in r or r.get("interrupted"):
            continue  # an older record, or a sweep stopped before its end
        w, c = r["wall_s"], r["trial_cpu_s"]
        we, wu = r["model_wall_s_expected"], r["model_wall_s_upper"]
        ce, cu = r["model_cpu_s_expected"], r["model_cpu_s_upper"]
        for k, v in zip(tot, (w, we, wu, c, ce, cu), strict=True):
            tot[k] += v
        flag = "" if w <= wu and 0.5 <= w / we <= 2 else " **miss**"
        print(f"| `{r['sweep']}` | {w:.0f} | {we:.0f} / {wu:.0f} | {w / we:.2f}{flag} | {c:.0f} | "
              f"{ce:.0f} / {cu:.0f} | {c / ce:.2f} | {r['model_expected_from_rows']} |")
    t = tot
    print(f"| **total** | {t['w']:.0f} | {t['we']:.0f} / {t['wu']:.0f} | {t['w'] / t['we']:.2f} | "
          f"{t['c']:.0f} | {t['ce']:.0f} / {t['cu']:.0f} | {t['c'] / t['ce']:.2f} | |")
    host = recs[-1].get("host_sgemm_gflops") if recs else None
    print(f"\nhost sgemm rate used: {host} GFLOP/s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
