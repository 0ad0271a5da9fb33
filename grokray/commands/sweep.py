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


def pack_summary(plan, pack: int | None, n_cpus: int | None) -> dict:  # noqa: ANN001 - Plan
    """What `--pack` makes of the plan's configs: the size, the packs of several configs and
    the configs left alone (counted from the axes when the grid was counted, not built)."""
    # lazy: loads torch and pandas, kept out of `grokray --help`
    from grokray.sweep.executors.packing import auto_limit, pack_size, packs, size_of
    from grokray.sweep.pack_count import counted_pack_sizes

    spec = plan.spec
    slots = max(1, int((n_cpus or os.cpu_count() or 1) // (spec.cpu or 1)))
    if spec.search is not None:
        return {"pack": "off (a search runs one config per trial)"}
    if not plan.counted:
        size = pack_size(plan.todo, slots, pack, spec.gpu > 0)
        sizes = [len(g) for g in packs(plan.todo, slots, pack, spec.gpu)]
    else:  # sized by the base config's shape (an axis of shapes is not packed by this count)
        size = size_of(plan.n_trials, len(spec.seeds), slots, pack, spec.gpu > 0)
        if pack is None:
            size = max(1, min(size, auto_limit(spec.gpu)(spec.base)))
        sizes = counted_pack_sizes(spec, size)
    return {"pack": "auto" if pack is None else pack, "pack_size": size,
            "packs": sum(k > 1 for k in sizes), "packed_configs": sum(k for k in sizes if k > 1),
            "unpacked_configs": sum(k == 1 for k in sizes)}


def plan_summary(plan) -> dict:  # noqa: ANN001 - Plan (kept lazy)
    """The dry-run figures as plain values (what `--dry-run --json` prints)."""
    spec = plan.spec
    out: dict = {
        "sweep": spec.name, "spec": spec.path, "sweep_dir": spec.sweep_dir,
        "axes": [{"keys": list(ax.keys), "n": len(ax),
                  "values": [list(row) if len(row) > 1 else row[0] for row in ax.rows]}
                 for ax in spec.axes],
        "search": None, "grid_points": spec.n_points, "trials": plan.n_trials,
        "seeds": spec.seeds, "seed_runs": plan.n_trials * plan.n_seeds,
        "done_seed_runs": plan.done_rows, "failed_seed_runs": plan.failed_rows,
        "todo_trials": plan.n_todo_trials, "todo_seed_runs": plan.todo_seeds,
        "todo_seed_steps": plan.todo_seed_steps,
        "resources": {"cpu": spec.cpu, "gpu": spec.gpu}, "concurrency": spec.concurrency,
        "retries": spec.retries, "counted_not_built": plan.counted,
    }
    cont = plan.continuations
    if cont is not None:  # runs censored at a smaller steps (grokray.sweep.continuing)
        out["continued_seed_runs"], out["copied_seed_runs"] = cont.continued, cont.copied
        out["not_continued"] = dict(cont.refused)
    out["auto_shapes"] = auto_shapes(spec)
    if spec.search is not None:
        s = spec.search
        out["search"] = {"metric": s.metric, "mode": s.mode, "num_samples": s.num_samples,
                         "seed": s.seed, "space": {k: str(d) for k, d in s.space.items()}}
    out["axis_labels"] = [ax.label for ax in spec.axes]
    return out


AUTO_SHOWN_MAX = 5000
"""a dry run lists the resolved `auto` shapes of every config up to this many grid points (else
of the base config alone)"""


def auto_shapes(spec) -> list[dict]:  # noqa: ANN001 - SweepSpec (kept lazy)
    """The numbers `model.d` / `model.rank: auto` resolve to, per distinct shape: {"d", "rank",
    "configs", "groups"}, over the configs whose family reads them (FORGE, the matched MLP)."""
    # lazy: loads torch, kept out of `grokray --help`
    from grokray import families as registry

    big = spec.search is not None or spec.n_points > AUTO_SHOWN_MAX
    shapes: dict[tuple[int, int], dict] = {}
    for cfg in [spec.base] if big else spec.trials():
        reads = registry.get_family(cfg.arch).reads(cfg)
        if not cfg.auto_fields or not {"model.d", "model.rank"} & set(reads):
            continue
        entry = shapes.setdefault((cfg.model.d, cfg.model.rank),
                                  {"d": cfg.model.d, "rank": cfg.model.rank, "configs": 0,
                                   "groups": []})
        entry["configs"] += 1
        if cfg.group not in entry["groups"]:
            entry["groups"].append(cfg.group)
    return list(shapes.values())


def _auto_text(spec) -> str | None:  # noqa: ANN001 - SweepSpec (kept lazy)
    shapes = auto_shapes(spec)
    if not shapes:
        return None
    parts = [f"d {s['d']} R {s['rank']} ({s['configs']} configs: {', '.join(s['groups'][:8])}"
             + (", ..." if len(s["groups"]) > 8 else "") + ")" for s in shapes]
    return "model.d/model.rank auto, resolved per group: " + "; ".join(parts)


def describe(plan) -> str:  # noqa: ANN001 - Plan (kept lazy)
    """The dry-run text."""
    spec = plan.spec
    lines = [f"sweep {spec.name}: {spec.path} -> {spec.sweep_dir}"]
    if spec.search is not None:
        lines.append("search: " + spec.search.describe())
    elif spec.axes:
        for ax in spec.axes:
            text = ", ".join(str(ax.shown(row)) for row in ax.rows[:20]) + \
                (", ..." if len(ax) > 20 else "")
            lines.append(f"axis {ax.label} ({len(ax)}): {text}")
    else:
        lines.append("axes: none (a single config)")
    auto = _auto_text(spec)
    if auto:
        lines.append(auto)
    total_rows = plan.n_trials * plan.n_seeds
    merged = "" if plan.counted or spec.search is not None or not spec.merged else \
        f" ({spec.merged} grid points had the identity of another and run once)"
    lines.append(f"trials: {plan.n_trials:,} configs x {plan.n_seeds} seeds = {total_rows:,} "
                 f"seed-runs; seeds {_seeds_text(spec.seeds)}{merged}")
    lines.append(f"done: {plan.done_rows:,}/{total_rows:,} seed-runs on disk "
                 f"({plan.failed_rows} failed)")
    lines.append(f"to run: {plan.n_todo_trials:,} trials, {plan.todo_seeds:,} seed-runs, "
                 f"{plan.todo_seed_steps:,} seed-steps; resources per trial cpu {spec.cpu:g} "
                 f"gpu {spec.gpu:g}, concurrency {spec.concurrency or 'auto'}, "
                 f"retries {spec.retries}")
    if plan.continuations is not None:  # runs censored at a smaller steps (docs/snapshots.md)
        lines += plan.continuations.lines()
    return "\n".join(lines)


def _seeds_text(seeds: list[int]) -> str:
    if seeds == list(range(len(seeds))) and len(seeds) > 3:
        return f"0..{len(seeds) - 1}"
    return str(seeds)


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
