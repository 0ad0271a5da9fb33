"""`grokray reproduce --scale cpu|paper|decisive --out DIR`: run every sweep of the reproduction
ledger at one scale, then write the ledger (DIR/ledger.md, DIR/ledger.json: the CPU column and
the paper-scale and decisive columns beside it, each from what is on disk).

Each sweep is an ordinary sweep into DIR/<sweep name> (resume by row identity, one writer per
dir, like `grokray sweep`), so a second call runs only what is missing: an interrupted ledger
continues where it stopped. The sweeps are those the ledger's claims read
(grokray_analysis.ledger.CLAIMS) at that scale (`Claim.at`: cpu, sweeps/cpu/; paper,
sweeps/paper/; decisive, sweeps/decisive/, the second CPU tier: the experiments that decide the
CPU ledger's disagreements; the shipped files, grokray/shipped.py), in claim order. One Ray
session serves every sweep: an embedded local Ray, or the cluster at --address. Ctrl-C (or
SIGTERM) stops the sweep running, then the ledger is written from what is on disk and the
command exits 130 (143).

Progress: each trial's line (or the live panel) names the sweep (k of N), the ledger's elapsed
time and the wall time the cost model (grokray/cost) expects for the sweeps after it; the dry
run prints each sweep's estimate and their sum. Every sweep run appends its wall time, the CPU
seconds of its trials, the load average and the model's estimate of the same work to
DIR/reproduce_times.json.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from grokray import shipped
from grokray.commands.sweep import (
    add_pack_argument,
    command_line,
    pack_setting,
    print_event,
)
from grokray.errors import GrokrayError
from grokray.sweep.describe import describe
from grokray.sweep.interrupt import on_signals

SCALES = ("cpu", "paper", "decisive")
"""the ledger's scales (grokray_analysis.ledger.claims.SCALES, whose spec dirs they name)"""
TIMES = "reproduce_times.json"
"""the per-sweep wall and CPU times of every reproduce run, under OUT"""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "reproduce",
        help="run the reproduction ledger's sweeps, then write the ledger",
        description="Run every sweep the reproduction ledger reads (resumable: only missing "
                    "rows run), then write OUT/ledger.md and OUT/ledger.json.",
    )
    p.add_argument("--scale", choices=SCALES, default="cpu",
                   help="which sweeps (cpu: sweeps/cpu/*.yaml, sized for a 2-core CPU; "
                        "paper: sweeps/paper/*.yaml, the papers' budgets, seeds and groups, "
                        "sized for GPUs; decisive: sweeps/decisive/*.yaml, the second CPU tier, "
                        "the experiments that decide the CPU ledger's disagreements)")
    p.add_argument("--out", default="results/ledger", help="output root (default results/ledger)")
    p.add_argument("--only", nargs="+", metavar="SWEEP",
                   help="run only these sweeps (names or spec stems, e.g. scaling_cpu rfm)")
    p.add_argument("--dry-run", action="store_true",
                   help="print each sweep's plan (done / to run) and the cost model's estimate "
                        "(CPU, wall, GPU hours); run nothing, write nothing")
    p.add_argument("--address", default=None,
                   help="Ray cluster to join ('auto' on a cluster node; also RAY_ADDRESS); "
                        "default: an embedded local Ray")
    p.add_argument("--local", action="store_true",
                   help="run trials one by one in this process, without Ray")
    p.add_argument("--num-cpus", type=int, default=None,
                   help="CPUs of the embedded local Ray (default: all)")
    p.add_argument("--plain", action="store_true", help="plain line output even on a terminal")
    add_pack_argument(p)
    p.set_defaults(func=main)


def ledger_specs(scale: str) -> list[str]:
    """Spec paths (under sweeps/, as the claims name them; grokray.shipped.path_of finds the
    file) of the ledger's sweeps at `scale`, in claim order: the `spec` of each claim of
    analysis/ledger/claims.yaml at that scale."""
    # lazy: loads pandas, kept out of `grokray --help`
    from grokray_analysis.ledger import CLAIMS

    return list(dict.fromkeys(c.at(scale).spec for c in CLAIMS if c.at(scale).spec))


def model_estimates(specs: list[Any], n_cpus: int | None = None) -> list[Any]:  # noqa: ANN401
    """The cost model's estimate (grokray.cost.sweep.SweepCost) of what each sweep has left, in
    one Ray session: only the first pays the session's start."""
    # lazy: loads torch and pandas, kept out of `grokray --help`
    from grokray.cost.sweep import START_S, estimate_plan
    from grokray.sweep.plan import make_plan

    return [estimate_plan(make_plan(s, build=False), start_s=START_S if k == 0 else 0.0,
                          n_cpus=n_cpus) for k, s in enumerate(specs)]


def model_record(c: Any) -> dict[str, Any]:  # noqa: ANN401 - SweepCost
    """The estimate's figures beside a sweep's measured times in reproduce_times.json."""
    return {"model_cpu_s_upper": round(c.cpu_s_upper, 1),
            "model_cpu_s_expected": round(c.cpu_s_expected, 1),
            "model_wall_s_upper": round(c.wall_s_upper, 1),
            "model_wall_s_expected": round(c.wall_s_expected, 1),
            "model_expected_from_rows": c.from_rows, "host_sgemm_gflops": round(c.host_gflops, 1)}


def load_avg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


class LedgerProgress:
    """The ledger-level line under each sweep's progress: sweep k of N, elapsed, estimate."""

    def __init__(self, n: int, estimates: list[Any]):
        self.n, self.k, self.name = n, 0, ""
        self.estimates = estimates
        """the cost model's SweepCost of each sweep"""
        self.t0 = time.monotonic()

    def at(self, k: int, name: str) -> None:
        self.k, self.name = k, name

    def line(self) -> str:
        # lazy: loads torch, kept out of `grokray --help`
        from grokray.sweep.progress import fmt_seconds

        left = sum(e.wall_s_expected for e in self.estimates[self.k:])  # the sweeps after it
        after = f"; after this sweep ~{left / 60:.1f} min (cost model)"
        return (f"ledger sweep {self.k}/{self.n} {self.name}; ledger elapsed "
                f"{fmt_seconds(time.monotonic() - self.t0)}{after}")


def main(args: argparse.Namespace) -> int:
    # lazy: loads torch and pandas, kept out of `grokray --help`
    from grokray.sweep.spec import load_spec

    if args.local and args.address:
        raise GrokrayError("--local runs in this process; drop --address (or --local)")
    pack_setting(args)  # a bad --pack: one line, exit 2, before any work
    specs = [dataclasses.replace(load_spec(_spec_file(rel)), out=args.out)
             for rel in ledger_specs(args.scale)]
    if args.only:
        known = {s.name for s in specs} | {Path(s.path).stem for s in specs}
        bad = [x for x in args.only if x not in known]
        if bad:
            raise GrokrayError(f"unknown ledger sweep(s) {', '.join(bad)}; valid: "
                               + ", ".join(s.name for s in specs))
        specs = [s for s in specs if s.name in args.only or Path(s.path).stem in args.only]
    if args.dry_run:
        return _dry_run(specs, args.num_cpus)

    # lazy: loads torch and pandas, kept out of `grokray --help`
    from grokray.sweep import store

    for spec in specs:  # the output location, before any work (one line, exit 2)
        store.check_writable(spec.sweep_dir)
    progress = LedgerProgress(len(specs), model_estimates(specs, args.num_cpus))
    timings: list[dict[str, Any]] = []
    stopped, code = "", 0
    # lazy: loads torch and pandas, kept out of `grokray --help`
    from grokray.sweep.session import RaySession

    signals = on_signals()
    # one Ray for every sweep (joined or embedded), with its warm workers; none with --local
    session = None if args.local or not specs else RaySession(args.address, args.num_cpus)
    try:
        with signals, session or contextlib.nullcontext():
            signals.install()  # after Ray's start, which sets handlers of its own
            for k, spec in enumerate(specs, 1):
                progress.at(k, spec.name)
                rec = _run_sweep(spec, session, args, progress)
                if rec is not None:
                    timings.append(rec)
    except KeyboardInterrupt as exc:  # the running sweep recorded itself; its trials are kept
        code = exc.exit_code if isinstance(exc, Stopped) else signals.exit_code
        stopped = (f"interrupted during {progress.name or 'the start'}: run the same command "
                   "to resume (finished trials are on disk)")
    return _finish(args, timings, stopped, code)


def _run_sweep(spec: Any, session: Any, args: argparse.Namespace,  # noqa: ANN401
               progress: LedgerProgress) -> dict[str, Any] | None:
    """Run one sweep's missing trials through the sweep driver (under its writer lock); its
    timing record (None when it had nothing to run). A stopped sweep records itself, then
    raises KeyboardInterrupt with the stop's exit code (`exit_code`)."""
    # lazy: loads torch and pandas, kept out of `grokray --help`
    from grokray.sweep.driver import SweepDriver
    from grokray.sweep.events import SweepStarted
    from grokray.sweep.progress import DisplaySubscriber

    rec: dict[str, Any] = {}
    t0 = [time.perf_counter()]

    def started(event: Any) -> None:  # noqa: ANN401 - a SweepEvent
        if isinstance(event, SweepStarted) and event.plan.n_todo_trials:
            rec.update({
                "sweep": spec.name, "spec": _spec_name(spec.path),
                "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "load_start": load_avg(), "trials_todo": event.plan.n_todo_trials,
                **model_record(progress.estimates[progress.k - 1]),
            })
            t0[0] = time.perf_counter()

    driver = SweepDriver(spec, pack=pack_setting(args), holder=command_line("reproduce"))
    driver.subscribe(print_event)
    driver.subscribe(started)
    driver.subscribe(DisplaySubscriber(plain=args.plain, context=progress.line))
    outcome = driver.run(session)
    if outcome.state == "nothing_to_run":
        print(f"sweep {spec.name}: nothing to run, every (config, seed) has a row", flush=True)
        return None
    stopped = outcome.state == "stopped"
    _record(rec, outcome.written, time.perf_counter() - t0[0], interrupted=stopped)
    _append_times(args.out, rec)
    if stopped:
        raise Stopped(outcome.exit_code)
    print(f"sweep {spec.name}: {rec['trials']} trials in {rec['wall_s']:.0f} s wall, "
          f"{rec['trial_cpu_s']:.0f} CPU s in trials (longest trial {rec['max_trial_cpu_s']:.0f} "
          f"CPU s); {outcome.failed} failed; load {rec['load_start']} -> {rec['load_end']}",
          flush=True)
    return rec


class Stopped(KeyboardInterrupt):
    """A sweep of the ledger was stopped (a signal its driver handled): the ledger stops too."""

    def __init__(self, exit_code: int):
        super().__init__(exit_code)
        self.exit_code = exit_code


def _spec_file(rel: str) -> str:
    """A ledger spec's file: the shipped one its claims name, else `rel` itself as a path."""
    entry = shipped.find(rel)
    return str(entry.path) if entry is not None else rel


def _spec_name(path: str) -> str:
    """A shipped spec as the claims name it (sweeps/cpu/scaling.yaml), another as given."""
    root = shipped.root().resolve()
    p = Path(path).resolve()
    return f"{shipped.FOLDER}/{p.relative_to(root).as_posix()}" if p.is_relative_to(root) \
        else path


def _record(rec: dict[str, Any], written: list[Any], wall: float, *,  # noqa: ANN401
            interrupted: bool) -> None:
    cpu = [getattr(o, "cpu_s", 0.0) for o in written]
    rec.update(wall_s=round(wall, 1), trials=len(written),
               failed=sum(o.error is not None for o in written),
               trial_cpu_s=round(sum(cpu), 1), max_trial_cpu_s=round(max(cpu, default=0.0), 1),
               load_end=load_avg(), interrupted=interrupted)


def _append_times(out: str, rec: dict[str, Any]) -> None:
    p = Path(out) / TIMES
    try:
        old = json.loads(p.read_text()) if p.exists() else []
    except (OSError, ValueError):
        old = []
    old.append(rec)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(old, indent=1) + "\n")


def _dry_run(specs: list[Any], n_cpus: int | None) -> int:  # noqa: ANN401
    # lazy: loads torch and pandas, kept out of `grokray --help`
    from grokray.cost.sweep import cost_text
    from grokray.sweep.plan import make_plan

    costs = model_estimates(specs, n_cpus)
    for spec, cost in zip(specs, costs, strict=True):
        print(describe(make_plan(spec, build=False)) + "\n" + cost_text(cost), flush=True)
    up, ex, cpu, gup, gex = (sum(getattr(c, k) for c in costs) for k in (
        "wall_s_upper", "wall_s_expected", "cpu_s_expected", "gpu_s_upper", "gpu_s_expected"))
    print(f"estimated wall time left (cost model, one Ray session): {ex / 60:.1f} min expected, "
          f"{up / 60:.1f} min upper bound; {cpu / 3600:.2f} CPU h expected; GPU {gup / 3600:.2f} "
          f"h upper, {gex / 3600:.2f} h expected (uncalibrated)", flush=True)
    return 0


def _finish(args: argparse.Namespace, timings: list[dict[str, Any]], stopped: str,
            code: int) -> int:
    # lazy: loads pandas, kept out of `grokray --help`
    from grokray_analysis.ledger import ledger, ledger_table, write_ledger
    from grokray_analysis.tables import render

    ran = [t for t in timings if "wall_s" in t]
    if ran:
        total = sum(t["wall_s"] for t in ran)
        print("wall time: " + ", ".join(f"{t['sweep']} {t['wall_s'] / 60:.1f} min"
                                        for t in ran)
              + f"; total {total / 60:.1f} min (times also in {Path(args.out) / TIMES})",
              flush=True)
    L = ledger(args.out)
    sys.stdout.write(render([ledger_table(L)], "md"))
    md, js = write_ledger(L)
    print(f"wrote {md} and {js}", flush=True)
    if stopped:
        print(f"grokray reproduce: {stopped}", file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":  # pragma: no cover
    from grokray.cli import main as cli_main

    sys.exit(cli_main(["reproduce", *sys.argv[1:]]))
