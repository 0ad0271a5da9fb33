"""`grokray slurm SPEC`: write an sbatch script beside the sweep that runs it on Ray over a
Slurm allocation, submit it, and say how to follow it (grokray/slurm/, docs/cluster.md)."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from grokray.commands.sweep import add_pack_argument, pack_setting
from grokray.errors import GrokrayError
from grokray.slurm.costs import fit, fit_text
from grokray.slurm.script import JobOptions, render
from grokray.slurm.submit import sbatch_path, submit
from grokray.slurm.timefmt import parse_time
from grokray.sweep.describe import describe

NODE_LOCAL = ("/tmp", "/var/tmp", "/dev/shm", "/run")
"""paths that are each node's own on a cluster (a compute node does not see the login node's)"""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "slurm",
        help="run a sweep on a Slurm allocation through Ray (writes and submits an sbatch "
             "script)",
        description="Write a readable sbatch script beside the sweep (a Ray head on the first "
                    "node, workers on the others, then `grokray sweep SPEC --address ...`), "
                    "submit it, and print the job id. Time limits requeue the job, which "
                    "resumes the sweep.",
    )
    p.add_argument("spec", help="sweep spec YAML")
    p.add_argument("--nodes", type=int, default=1, help="nodes (default 1)")
    p.add_argument("--gpus-per-node", type=int, default=0, metavar="G",
                   help="GPUs per node (--gres=gpu:G; default 0)")
    p.add_argument("--cpus-per-node", type=int, default=None, metavar="C",
                   help="CPUs per node (--cpus-per-task; default: Slurm's default)")
    p.add_argument("--mem", default=None, help="memory per node (sbatch --mem, e.g. 32G)")
    p.add_argument("--time", default="01:00:00", metavar="HH:MM:SS",
                   help="time limit of one allocation (default 01:00:00; Slurm's forms: "
                        "MM, HH:MM:SS, D-HH:MM:SS)")
    p.add_argument("--partition", default=None)
    p.add_argument("--account", default=None)
    p.add_argument("--qos", default=None)
    p.add_argument("--out", default=None,
                   help="output root on a filesystem every node shares (overrides the spec's "
                        "out)")
    p.add_argument("--sbatch-arg", action="append", default=[], metavar="ARG",
                   help="another #SBATCH line, e.g. --sbatch-arg=--constraint=a100 (repeat)")
    p.add_argument("--max-requeues", type=int, default=3, metavar="K",
                   help="requeues after a time limit (default 3: at most 4 allocations)")
    p.add_argument("--signal-lead", type=int, default=None, metavar="S",
                   help="seconds before the time limit at which the sweep is told to stop "
                        f"(default {DEFAULT_LEAD_S}, or half of a --time shorter than "
                        f"{2 * DEFAULT_LEAD_S} s; Slurm may send it up to 60 s early)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the script and the cost model's time against the allocation; "
                        "submit nothing (needs no sbatch)")
    add_pack_argument(p)
    p.set_defaults(func=main)


DEFAULT_LEAD_S = 120
"""seconds before the time limit at which the sweep is told to stop, where --time allows"""
MIN_LEAD_S = 10
"""the shortest lead: the driver's stop needs a few seconds"""
MIN_RUN_S = 30
"""seconds of the limit that must remain before the lead"""


def default_lead(time_s: int) -> int:
    """The --signal-lead a --time of `time_s` seconds gets: DEFAULT_LEAD_S, or half the limit
    when that is shorter (a 2-minute job stops 60 s before its end), at least MIN_LEAD_S."""
    return max(MIN_LEAD_S, min(DEFAULT_LEAD_S, time_s // 2, time_s - MIN_RUN_S))


def _check_numbers(args: argparse.Namespace, time_s: int) -> None:
    if args.nodes < 1:
        raise GrokrayError(f"--nodes {args.nodes}: at least 1")
    if args.gpus_per_node < 0:
        raise GrokrayError(f"--gpus-per-node {args.gpus_per_node}: 0 or more")
    if args.cpus_per_node is not None and args.cpus_per_node < 1:
        raise GrokrayError(f"--cpus-per-node {args.cpus_per_node}: at least 1")
    if args.max_requeues < 0:
        raise GrokrayError(f"--max-requeues {args.max_requeues}: 0 or more")
    if time_s < MIN_LEAD_S + MIN_RUN_S:
        raise GrokrayError(f"--time {args.time} ({time_s} s) leaves no time to run: at least "
                           f"{MIN_LEAD_S + MIN_RUN_S} s (e.g. --time 00:05:00)")
    if args.signal_lead is None:
        args.signal_lead = default_lead(time_s)
    if not MIN_LEAD_S <= args.signal_lead <= time_s - MIN_RUN_S:
        raise GrokrayError(
            f"--signal-lead {args.signal_lead} does not fit --time {args.time} ({time_s} s): "
            f"pass a lead of {MIN_LEAD_S} to {time_s - MIN_RUN_S} s (e.g. --signal-lead "
            f"{default_lead(time_s)}), or a --time of at least "
            f"{max(args.signal_lead, MIN_LEAD_S) + MIN_RUN_S} s")
    for a in args.sbatch_arg:
        if not a.startswith("-") or "\n" in a:
            raise GrokrayError(f"--sbatch-arg {a!r}: one sbatch option, e.g. "
                               "--sbatch-arg=--constraint=a100")


def node_local(path: str) -> bool:
    """Whether `path` lies on a node-local filesystem (/tmp, /dev/shm, $TMPDIR, ...)."""
    if "://" in path:
        return False
    p = os.path.realpath(path)
    roots = list(NODE_LOCAL)
    if os.environ.get("TMPDIR"):
        roots.append(os.path.realpath(os.environ["TMPDIR"]))
    return any(p == r or p.startswith(r.rstrip("/") + "/") for r in roots)


def main(args: argparse.Namespace) -> int:
    # lazy: loads torch and pandas, kept out of `grokray --help`
    from grokray.sweep import store
    from grokray.sweep.spec import load_spec

    time_s = parse_time(args.time)
    _check_numbers(args, time_s)
    pack_setting(args)
    sbatch = None if args.dry_run else sbatch_path()  # before anything is written
    spec = load_spec(args.spec)
    out = args.out or spec.out
    if "://" not in out:
        out = os.path.abspath(out)
    spec = dataclasses.replace(spec, out=out)
    store.check_writable(spec.sweep_dir, create=not args.dry_run)
    prefix = sys.prefix
    spec_path = os.path.abspath(args.spec)
    for what, path in (("the Python environment", prefix), ("the spec", spec_path),
                       ("--out", out)):
        if node_local(path):
            print(f"grokray slurm: warning: {what} {path} is on a node-local path; the compute "
                  "nodes may not see it (use a shared filesystem)", file=sys.stderr)
    workdir = os.getcwd()
    slurm_dir = os.path.join(spec.sweep_dir if "://" not in spec.sweep_dir
                             else os.path.join(workdir, spec.name), "slurm")
    opts = JobOptions(
        spec=spec_path, sweep=spec.name, out=out, sweep_dir=spec.sweep_dir,
        slurm_dir=slurm_dir, workdir=workdir, prefix=prefix,
        activate=os.path.exists(os.path.join(prefix, "bin", "activate")),
        nodes=args.nodes, gpus_per_node=args.gpus_per_node, cpus_per_node=args.cpus_per_node,
        mem=args.mem, time_s=time_s, partition=args.partition, account=args.account,
        qos=args.qos, sbatch_args=list(args.sbatch_arg), max_requeues=args.max_requeues,
        signal_s=args.signal_lead, pack=args.pack,
    )
    text = render(opts)
    if args.dry_run:
        return _dry_run(spec, opts, text)
    os.makedirs(slurm_dir, exist_ok=True)
    with open(opts.script_path, "w") as f:
        f.write(text)
    os.chmod(opts.script_path, 0o755)
    print(f"wrote {opts.script_path}\n  sbatch {opts.script_path}", flush=True)
    job = submit(opts.script_path, sbatch)
    log = opts.output_path.replace("%j", job)
    print(f"submitted Slurm job {job} (sweep {spec.name} -> {spec.sweep_dir})\n"
          f"  squeue -j {job}\n  tail -f {log}\n  grokray status {spec.sweep_dir}\n"
          f"  grokray dashboard {out}\n"
          f"  graceful stop (no requeue): scancel --batch --signal=TERM {job}", flush=True)
    return 0


def _dry_run(spec, opts, text: str) -> int:  # noqa: ANN001 - SweepSpec, JobOptions
    # lazy: loads torch and pandas, kept out of `grokray --help`
    from grokray.sweep.plan import make_plan

    plan = make_plan(spec, build=False)
    f = fit(plan, opts.nodes, opts.cpus_per_node, opts.gpus_per_node, opts.time_s,
            opts.signal_s)
    print(text, flush=True)
    print(f"# ---- dry run: nothing written, nothing submitted ({opts.script_path})\n"
          + describe(plan) + "\n"
          + fit_text(f, opts.nodes, opts.time_s, opts.signal_s, opts.max_requeues), flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    from grokray.cli import main as cli_main

    sys.exit(cli_main(["slurm", *sys.argv[1:]]))
