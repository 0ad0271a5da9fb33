"""`grokray reproduce --scale cpu --out DIR`: run every sweep of the reproduction ledger, then
write the ledger (DIR/ledger.md, DIR/ledger.json).

Each sweep is an ordinary sweep into DIR/<sweep name>: a second call runs only what is missing
(resume by row identity, like `grokray sweep`), so an interrupted ledger continues where it
stopped. The sweeps are those the ledger's claims read (analysis.ledger.CLAIMS), in claim order.
"""

from __future__ import annotations

import argparse
import sys
import time

SCALES = {"cpu": "sweeps/cpu"}


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "reproduce",
        help="run the reproduction ledger's sweeps, then write the ledger",
        description="Run every sweep the reproduction ledger reads (resumable: only missing "
                    "rows run), then write OUT/ledger.md and OUT/ledger.json.",
    )
    p.add_argument("--scale", choices=tuple(SCALES), default="cpu",
                   help="which sweeps (cpu: sweeps/cpu/*.yaml, sized for a 2-core CPU)")
    p.add_argument("--out", default="results/ledger", help="output root (default results/ledger)")
    p.add_argument("--only", nargs="+", metavar="SWEEP",
                   help="run only these sweeps (names or spec stems, e.g. scaling_cpu rfm)")
    p.add_argument("--dry-run", action="store_true",
                   help="print each sweep's plan (done / to run); run nothing, write nothing")
    p.add_argument("--local", action="store_true",
                   help="run trials one by one in this process, without Ray")
    p.add_argument("--num-cpus", type=int, default=None,
                   help="CPUs of the embedded local Ray (default: all)")
    p.add_argument("--plain", action="store_true", help="plain line output even on a terminal")
    p.set_defaults(func=main)


def ledger_specs(scale: str) -> list[str]:
    """Spec paths (relative to the repository root) of the ledger's sweeps, in claim order."""
    from analysis.ledger import CLAIMS

    out: list[str] = []
    for c in CLAIMS:
        if c.spec and c.spec not in out and c.spec.startswith(SCALES[scale] + "/"):
            out.append(c.spec)
    return out


def main(args: argparse.Namespace) -> int:
    import dataclasses
    from pathlib import Path

    from analysis.ledger import ledger, ledger_table, repo_root, write_ledger
    from analysis.tables import render
    from grokray.commands.sweep import _backend, describe
    from grokray.errors import GrokrayError
    from grokray.sweep.runner import make_plan, run_plan
    from grokray.sweep.spec import load_spec

    root = repo_root()
    specs = []
    for rel in ledger_specs(args.scale):
        spec = dataclasses.replace(load_spec(str(root / rel)), out=args.out)
        specs.append(spec)
    if args.only:
        known = {s.name for s in specs} | {Path(s.path).stem for s in specs}
        bad = [x for x in args.only if x not in known]
        if bad:
            raise GrokrayError(f"unknown ledger sweep(s) {', '.join(bad)}; valid: "
                               + ", ".join(s.name for s in specs))
        specs = [s for s in specs if s.name in args.only or Path(s.path).stem in args.only]
    timings: list[tuple[str, float]] = []
    stopped = ""
    for spec in specs:
        plan = make_plan(spec)
        print(describe(plan), flush=True)
        if args.dry_run or not plan.n_todo_trials:
            continue
        t0 = time.perf_counter()
        backend = _backend(argparse.Namespace(local=args.local, address=None,
                                              num_cpus=args.num_cpus), plan)
        from grokray.sweep.progress import Display

        display = Display(plan.n_todo_trials, plan.todo_seed_steps, title=spec.name,
                          live=False if args.plain else None)
        try:
            with display:
                writer = run_plan(plan, backend, display)
        finally:
            if hasattr(backend, "shutdown"):
                backend.shutdown()
        dt = time.perf_counter() - t0
        timings.append((spec.name, dt))
        failed = sum(o.error is not None for o in writer.outcomes)
        print(f"sweep {spec.name}: {len(writer.outcomes)} trials in {dt:.0f} s; {failed} failed",
              flush=True)
        left = make_plan(spec).n_todo_trials
        if left:  # interrupted (Ctrl-C ends a Ray Tune run quietly): run no further sweep
            stopped = (f"sweep {spec.name} stopped with {left} trials left; run the same "
                       "command again to resume")
            print(stopped, flush=True)
            break
    if args.dry_run:
        return 0
    if timings:
        total = sum(t for _, t in timings)
        print("wall time: " + ", ".join(f"{n} {t:.0f} s" for n, t in timings)
              + f"; total {total / 60:.1f} min", flush=True)
    L = ledger(args.out, scale=args.scale)
    sys.stdout.write(render([ledger_table(L)], "md"))
    md, js = write_ledger(L)
    print(f"wrote {md} and {js}", flush=True)
    if stopped:
        print(f"grokray reproduce: {stopped}", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    from grokray.cli import main as cli_main

    sys.exit(cli_main(["reproduce", *sys.argv[1:]]))
