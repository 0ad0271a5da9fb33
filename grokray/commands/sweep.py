"""`grokray sweep SPEC`: run a sweep spec on Ray (or in process), results to Parquet, through
the sweep driver (grokray.sweep.driver); and the plan's description and `--pack`, which
`grokray reproduce` and `grokray slurm` share."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

from grokray import shipped
from grokray.commands.status import render_status
from grokray.errors import GrokrayError
from grokray.slurm.deadline import from_env
from grokray.sweep.describe import describe, pack_summary, plan_summary


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "sweep",
        help="run a sweep spec (a file, or a shipped name: grokray specs) on Ray; resumes "
             "where it stopped",
        description="Run every trial of a sweep spec that has no row yet in OUT/<sweep>/; "
                    "each finished trial is written to Parquet at once.",
    )
    p.add_argument("spec", help="sweep spec YAML file, or the name of a shipped one (e.g. smoke, "
                                "cpu/scaling; `grokray specs` lists them)")
    p.add_argument("--dry-run", action="store_true",
                   help="print trials, seeds, axes, what is done, the work left and its estimated "
                        "CPU, wall and GPU hours (grokray/cost); run nothing")
    p.add_argument("--json", action="store_true",
                   help="with --dry-run: print the plan as one JSON object on stdout")
    p.add_argument("--out", help="output root (overrides the spec's out)")
    p.add_argument("--address", default=None,
                   help="Ray cluster to join ('auto' on a cluster node; also RAY_ADDRESS); "
                        "default: an embedded local Ray")
    p.add_argument("--num-cpus", type=int, default=None,
                   help="CPUs of the embedded local Ray (default: all)")
    p.add_argument("--num-gpus", type=float, default=None,
                   help="GPUs of the embedded local Ray (default: those CUDA shows); logical "
                        "ones may be declared where there are none, to schedule resources.gpu")
    p.add_argument("--local", action="store_true",
                   help="run trials one by one in this process, without Ray (debugging)")
    p.add_argument("--rerun-failed", action="store_true", help="run failed rows again")
    p.add_argument("--force", action="store_true",
                   help="run everything again into a new run id (older rows are replaced)")
    p.add_argument("--summary", action=argparse.BooleanOptionalAction, default=True,
                   help="print the status table when done (default: on)")
    p.add_argument("--plain", action="store_true", help="plain line output even on a terminal")
    add_pack_argument(p)
    p.set_defaults(func=main)


def add_pack_argument(p: argparse.ArgumentParser) -> None:
    """`--pack off|auto|N` (grokray sweep, grokray reproduce)."""
    p.add_argument("--pack", default="off", metavar="off|auto|N",
                   help="train configs of one shape as one stack of members (docs/sweeps.md, "
                        "config-packed trials): off (default), auto (sized to keep every worker "
                        "busy; on CPU no pack for arithmetic-bound shapes, on a GPU none over "
                        "the memory estimate), or N configs per pack; grids only, also on Ray "
                        "Tune (searches run unpacked)")


def pack_setting(args: argparse.Namespace) -> int | None:
    """`--pack` as configs per pack (1: off, None: auto); GrokrayError naming the valid values."""
    # lazy: loads torch and pandas, kept out of `grokray --help`
    from grokray.sweep.executors.packing import parse_pack

    try:
        return parse_pack(getattr(args, "pack", "off"))
    except ValueError as exc:
        raise GrokrayError(str(exc)) from None


def main(args: argparse.Namespace) -> int:
    # lazy: loads torch and pandas, kept out of `grokray --help`
    from grokray.sweep import store
    from grokray.sweep.spec import load_spec

    spec = load_spec(shipped.resolve(args.spec, shipped.SWEEP))
    if args.out:
        spec = dataclasses.replace(spec, out=args.out)
    if args.force and args.rerun_failed:
        raise GrokrayError("--force already reruns everything; drop --rerun-failed")
    if args.json and not args.dry_run:
        raise GrokrayError("--json goes with --dry-run (a running sweep prints progress lines)")
    if args.local and spec.search is not None:
        raise GrokrayError("a search runs on Ray only (Optuna through Ray Tune); drop --local")
    pack_setting(args)  # a bad --pack: one line, exit 2, before any work
    # the output location, before any work: one line and exit 2 when it cannot be written
    store.check_writable(spec.sweep_dir, create=not args.dry_run)
    if args.dry_run:
        return _dry_run(spec, args)
    return _run(spec, args)


def command_line(name: str) -> str:
    """`grokray NAME ARGS...` as this process was called (the lock names its holder)."""
    argv = sys.argv[2:] if sys.argv[1:2] == [name] else sys.argv[1:]
    return f"grokray {name} " + " ".join(argv)


def print_event(event) -> None:  # noqa: ANN001 - grokray.sweep.events.SweepEvent (kept lazy)
    """The CLI's subscriber to the sweep driver: the plan's description when it is made, and
    each notice (a warning or a stop's report on stderr)."""
    # lazy: loads torch and pandas, kept out of `grokray --help`
    from grokray.sweep.events import Notice, SweepStarted

    if isinstance(event, SweepStarted):
        print(describe(event.plan), flush=True)
    elif isinstance(event, Notice):
        print(event.line, file=sys.stderr if event.err else sys.stdout, flush=True)


def _dry_run(spec, args: argparse.Namespace) -> int:  # noqa: ANN001 - SweepSpec
    # lazy: loads torch and pandas, kept out of `grokray --help`
    from grokray.cost.sweep import cost_json, cost_text, estimate_plan
    from grokray.sweep.plan import make_plan

    plan = make_plan(spec, rerun_failed=args.rerun_failed, force=args.force, build=False)
    cost = estimate_plan(plan, n_cpus=args.num_cpus)
    pack = pack_setting(args)
    packs = pack_summary(plan, pack, args.num_cpus) if pack != 1 else {}
    if args.json:

        print(json.dumps({**plan_summary(plan), **cost_json(cost), **packs}), flush=True)
    else:
        text = describe(plan) + "\n" + cost_text(cost)
        if packs.get("pack_size"):
            text += (f"\npack {packs['pack']}: {packs['packs']:,} packs of up to "
                     f"{packs['pack_size']} configs ({packs['packed_configs']:,} configs), "
                     f"{packs['unpacked_configs']:,} configs alone")
        elif packs:
            text += f"\npack: {packs['pack']}"
        print(text, flush=True)
    return 0


def _run(spec, args: argparse.Namespace) -> int:  # noqa: ANN001 - SweepSpec
    # lazy: loads torch and pandas, kept out of `grokray --help`
    from grokray.sweep.driver import SweepDriver
    from grokray.sweep.progress import DisplaySubscriber
    from grokray.sweep.session import RaySession

    driver = SweepDriver(spec, rerun_failed=args.rerun_failed, force=args.force,
                         pack=pack_setting(args), policy=slurm_deadline(),
                         holder=command_line("sweep"))
    driver.subscribe(print_event)
    driver.subscribe(DisplaySubscriber(plain=args.plain))
    session = None if args.local else RaySession(args.address, args.num_cpus, args.num_gpus)
    outcome = driver.run(session)
    for line in outcome.messages:
        print(line, file=sys.stderr, flush=True)
    if outcome.state == "nothing_to_run":
        print("nothing to run: every (config, seed) has a row", flush=True)
    elif outcome.state == "done":
        logs = f"; Ray's logs: {outcome.logs_dir}" if outcome.logs_dir else ""
        print(f"sweep {spec.name}: {len(outcome.written)} trials written to {spec.sweep_dir} "
              f"(run {outcome.plan.run_id}); {outcome.failed} failed{logs}", flush=True)
    else:  # stopped, or trials left for the Slurm job's next allocation
        return outcome.exit_code
    _best(spec)
    if args.summary:
        _summary(spec.sweep_dir)
    return outcome.exit_code


def slurm_deadline():  # noqa: ANN201 - grokray.slurm.deadline.Deadline | None
    """The time limit of the Slurm job this driver runs in (None outside one)."""
    if not os.environ.get("SLURM_JOB_ID"):
        return None

    return from_env()


def _best(spec) -> None:  # noqa: ANN001 - SweepSpec
    """A search's best config (values, objective, how censored seeds counted)."""
    if spec.search is not None:
        # lazy: loads pandas, kept out of `grokray --help`
        from grokray.sweep.best import best_line

        print(best_line(spec.sweep_dir, spec), flush=True)


def _summary(sweep_dir: str) -> int:
    print(render_status(sweep_dir), flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    from grokray.cli import main as cli_main

    sys.exit(cli_main(["sweep", *sys.argv[1:]]))
