"""`grokray specs`: the sweep specs and run configs shipped with grokray (grokray/shipped.py),
each with its one-line description and what the cost model (grokray/cost) expects it to take
on this host; `grokray specs copy NAME [DEST]` copies one out to edit.

A sweep's figure is the whole sweep as if nothing were on disk (CPU hours on this host, and the
wall time on the slots this machine gives it, one Ray start included); a run config's is its one
trial, all seeds together in one process. `grokray sweep NAME` and `grokray run NAME` run a
shipped file by its name.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from grokray import shipped
from grokray.cost import table as cost_table
from grokray.cost.host import host_gflops
from grokray.cost.model import has_model, trial_cost
from grokray.errors import GrokrayError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "specs",
        help="list the shipped sweep specs and run configs (copy one out with `specs copy`)",
        description="List the sweep specs (for `grokray sweep NAME`) and run configs (for "
                    "`grokray run NAME`) shipped with grokray, each with its description and "
                    "the cost model's expected time on this host.",
    )
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.add_argument("--num-cpus", type=int, default=None,
                   help="price the sweeps for this many CPUs (default: this machine's)")
    sub = p.add_subparsers(dest="specs_command", metavar="copy")
    c = sub.add_parser("copy", help="copy a shipped spec or run config out, to edit it",
                       description="Copy a shipped file (a name from `grokray specs`) to DEST "
                                   "(a directory, default the current one, or a .yaml path).")
    c.add_argument("name", metavar="NAME", help="e.g. smoke, cpu/scaling, run/mlp_z97")
    c.add_argument("dest", metavar="DEST", nargs="?", default=".",
                   help="directory or .yaml file to write (default: .)")
    c.add_argument("--force", action="store_true", help="overwrite DEST's file")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    if getattr(args, "specs_command", None) == "copy":
        return copy(args.name, args.dest, force=args.force)
    return list_specs(json_out=args.json, n_cpus=args.num_cpus)


def copy(name: str, dest: str, *, force: bool = False) -> int:
    entry = shipped.find(name)
    if entry is None:
        raise GrokrayError(f"{name}: no shipped spec or run config of that name; valid: "
                           + ", ".join(e.name for e in shipped.entries()))
    target = Path(dest)
    if target.suffix not in (".yaml", ".yml"):
        target = target / entry.path.name
    if target.exists() and not force:
        raise GrokrayError(f"{target} exists; give another DEST, or --force to overwrite it")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(entry.path, target)
    except OSError as exc:
        raise GrokrayError(f"cannot write {target}: {exc.strerror or exc}") from None
    cmd = "sweep" if entry.kind == shipped.SWEEP else "run"
    print(f"copied {entry.name} to {target}; edit it, then: grokray {cmd} {target}")
    return 0


def list_specs(*, json_out: bool, n_cpus: int | None) -> int:
    rows = [_row(e, n_cpus) for e in shipped.entries()]
    if json_out:

        print(json.dumps(rows, indent=1))
        return 0

    rate, source = host_gflops()
    for kind, title, cmd in ((shipped.SWEEP, "sweep specs", "grokray sweep NAME"),
                             (shipped.RUN, "run configs", "grokray run NAME")):
        mine = [r for r in rows if r["kind"] == kind]
        print(f"{title} ({cmd}; `grokray specs copy NAME` to edit one):")
        width = max(len(r["name"]) for r in mine)
        for r in mine:
            print(f"  {r['name']:<{width}}  {_cost_text(r):<22}  {r['description']}")
        print()
    print(f"expected time: the cost model on this host (sgemm {rate:.0f} GFLOP/s, {source}); a "
          "sweep's on the slots this machine gives it; `grokray sweep NAME --dry-run` details "
          "one")
    return 0


def _cost_text(r: dict[str, Any]) -> str:
    s = r["expected_wall_s"]
    if s is None:
        return "no cost model"
    t = f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.1f} min" if s >= 60 else f"{s:.0f} s"
    return f"~{t}" + (f" on {r['slots']} slots" if r.get("slots", 1) > 1 else "")


def _row(entry: Any, n_cpus: int | None) -> dict[str, Any]:  # noqa: ANN401 - Shipped
    row = {"name": entry.name, "kind": entry.kind, "description": entry.description(),
           "path": str(entry.path)}
    if entry.kind == shipped.SWEEP:
        cost = sweep_cost(entry.path, n_cpus)
        row.update(trials=cost.trials, slots=cost.slots,
                   expected_wall_s=round(cost.wall_s_expected, 1) if cost.trials else None,
                   expected_cpu_s=round(cost.cpu_s_expected, 1) if cost.trials else None)
    else:
        cpu = run_cost(entry.path)
        row.update(trials=1, slots=1, expected_wall_s=None if cpu is None else round(cpu, 1),
                   expected_cpu_s=None if cpu is None else round(cpu, 1))
    return row


def sweep_cost(path: Path, n_cpus: int | None = None) -> Any:  # noqa: ANN401 - SweepCost
    """The cost model's estimate of a whole sweep, as if none of it were on disk."""
    # lazy: loads pandas, kept out of `grokray --help`
    import pandas as pd

    # lazy: loads torch and pandas, kept out of `grokray --help`
    from grokray.cost.sweep import estimate_plan
    from grokray.sweep.plan import Plan
    from grokray.sweep.spec import load_spec

    spec = load_spec(path)
    n_search = spec.search.num_samples if spec.search is not None else 0
    plan = Plan(spec=spec, run_id="", todo=[], n_trials=n_search or spec.n_points,
                n_seeds=len(spec.seeds), done_rows=0, failed_rows=0, counted=True,
                n_search_new=n_search)
    return estimate_plan(plan, n_cpus=n_cpus, trials_df=pd.DataFrame())


def run_cost(path: Path) -> float | None:
    """The cost model's expected seconds of a run config's trial on this host (None: its
    family has no cost model)."""
    # lazy: loads torch and pandas, kept out of `grokray --help`
    from grokray.config import load_yaml
    from grokray.cost.steps import expected_steps

    cfg = load_yaml(str(path))
    if not has_model(cfg):
        return None
    ref = float(cost_table.load()["reference_host"]["sgemm_gflops"])
    steps, _ = expected_steps(cfg, None)
    return trial_cost(cfg, steps).cpu_s * ref / host_gflops()[0]


if __name__ == "__main__":  # pragma: no cover
    from grokray.cli import main as cli_main

    sys.exit(cli_main(["specs", *sys.argv[1:]]))
