"""`grokray sweep SPEC`: run a sweep spec on Ray Tune (or in process), results to Parquet."""

from __future__ import annotations

import argparse
import sys


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "sweep",
        help="run a sweep spec (sweeps/*.yaml) on Ray; resumes where it stopped",
        description="Run every trial of a sweep spec that has no row yet in OUT/<sweep>/; "
                    "each finished trial is written to Parquet at once.",
    )
    p.add_argument("spec", help="sweep spec YAML (e.g. sweeps/smoke.yaml)")
    p.add_argument("--dry-run", action="store_true",
                   help="print trials, seeds, axes, what is done and the work left; run nothing")
    p.add_argument("--out", help="output root (overrides the spec's out)")
    p.add_argument("--address", default=None,
                   help="Ray cluster to join ('auto' on a cluster node; also RAY_ADDRESS); "
                        "default: an embedded local Ray")
    p.add_argument("--num-cpus", type=int, default=None,
                   help="CPUs of the embedded local Ray (default: all)")
    p.add_argument("--local", action="store_true",
                   help="run trials one by one in this process, without Ray (debugging)")
    p.add_argument("--rerun-failed", action="store_true", help="run failed rows again")
    p.add_argument("--force", action="store_true",
                   help="run everything again into a new run id (older rows are replaced)")
    p.add_argument("--summary", action=argparse.BooleanOptionalAction, default=True,
                   help="print the status table when done (default: on)")
    p.add_argument("--plain", action="store_true", help="plain line output even on a terminal")
    p.set_defaults(func=main)


def describe(plan) -> str:  # noqa: ANN001 - Plan (kept lazy)
    """The dry-run text."""
    from grokray.sweep.spec import axis_label

    spec = plan.spec
    lines = [f"sweep {spec.name}: {spec.path} -> {spec.sweep_dir}"]
    if spec.search is not None:
        s = spec.search
        lines.append(f"search: optuna, {s.metric} ({s.mode}), {s.num_samples} samples over "
                     + ", ".join(f"{k} ~ {d}{a}" for k, (d, a) in s.space.items()))
    elif spec.axes:
        for keys, vals in zip(spec.axes, spec.values, strict=True):
            shown = [v[0] if len(v) == 1 else v for v in vals]
            lines.append(f"axis {axis_label(keys)} ({len(vals)}): "
                         + ", ".join(str(v) for v in shown))
    else:
        lines.append("axes: none (a single config)")
    total_rows = plan.n_trials * plan.n_seeds
    lines.append(f"trials: {plan.n_trials} configs x {plan.n_seeds} seeds = {total_rows} "
                 f"seed-runs; seeds {spec.seeds}")
    lines.append(f"done: {plan.done_rows}/{total_rows} seed-runs on disk "
                 f"({plan.failed_rows} failed)")
    lines.append(f"to run: {plan.n_todo_trials} trials, {plan.todo_seeds} seed-runs, "
                 f"{plan.todo_seed_steps:,} seed-steps; resources per trial cpu {spec.cpu:g} "
                 f"gpu {spec.gpu:g}, concurrency {spec.concurrency or 'auto'}, "
                 f"retries {spec.retries}")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    import dataclasses

    from grokray.sweep.runner import make_plan, run_plan
    from grokray.sweep.spec import load_spec

    spec = load_spec(args.spec)
    if args.out:
        spec = dataclasses.replace(spec, out=args.out)
    if args.force and args.rerun_failed:
        from grokray.errors import GrokrayError

        raise GrokrayError("--force already reruns everything; drop --rerun-failed")
    plan = make_plan(spec, rerun_failed=args.rerun_failed, force=args.force)
    print(describe(plan), flush=True)
    if args.dry_run:
        return 0
    if not plan.n_todo_trials:
        print("nothing to run: every (config, seed) has a row", flush=True)
        return _summary(spec.sweep_dir) if args.summary else 0

    _check_out(spec.sweep_dir)
    backend = _backend(args, plan)
    from grokray.sweep.progress import Display

    display = Display(plan.n_todo_trials, plan.todo_seed_steps, title=spec.name,
                      live=False if args.plain else None)
    logs = ""
    try:
        with display:
            writer = run_plan(plan, backend, display)
    finally:
        if not args.local:
            logs = _ray_logs_dir()  # asked while still connected: Ray's temp dir may be anywhere
        if hasattr(backend, "shutdown"):
            backend.shutdown()
    failed = sum(o.error is not None for o in writer.outcomes)
    logs = f"; Ray's logs: {logs}" if logs else ""
    print(f"sweep {spec.name}: {len(writer.outcomes)} trials written to {spec.sweep_dir} "
          f"(run {plan.run_id}); {failed} failed{logs}", flush=True)
    if args.summary:
        _summary(spec.sweep_dir)
    return 0


def _backend(args: argparse.Namespace, plan):  # noqa: ANN001, ANN202
    spec = plan.spec
    if args.local:
        from grokray.errors import GrokrayError
        from grokray.sweep.backend import LocalBackend

        if spec.search is not None:
            raise GrokrayError("a search runs on Ray only; drop --local")
        return LocalBackend()
    from grokray.sweep.backend import RayBackend

    storage = spec.sweep_dir + "/_ray"
    if "://" not in storage:
        import os

        storage = os.path.abspath(storage)
    return RayBackend(
        name=f"{spec.name}-{plan.run_id}", storage_path=storage, cpu=spec.cpu, gpu=spec.gpu,
        concurrency=spec.concurrency, retries=spec.retries, address=args.address,
        num_cpus=args.num_cpus, search=spec.search, prior=plan.prior,
        num_samples=plan.n_search_new,
    )


def _check_out(sweep_dir: str) -> None:
    """Before any trial runs: the results directory can be made and written from here."""
    from grokray.errors import GrokrayError
    from grokray.sweep.store import Location

    try:
        loc = Location.of(sweep_dir)
        loc.write_bytes_atomic(loc.join(".write_check"), lambda out: out.write(b"ok"))
        loc.fs.delete_file(loc.join(".write_check"))
    except (OSError, ValueError) as exc:  # pyarrow: OSError subclasses; a bad URI: ArrowInvalid
        raise GrokrayError(
            f"cannot write results to {sweep_dir} ({exc}); --out takes a writable directory "
            "(on a cluster one every node mounts at that path) or an object store URI such as "
            "s3://bucket/dir") from None


def _ray_logs_dir() -> str:
    """This Ray session's log directory on this node (the head, for a job), or "" if unknown."""
    import os

    import ray

    if not ray.is_initialized():
        return ""
    ctx = ray.get_runtime_context()
    return os.path.join(ctx.get_temp_dir(), ctx.get_session_name(), "logs")


def _summary(sweep_dir: str) -> int:
    from grokray.commands.status import render_status

    print(render_status(sweep_dir), flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    from grokray.cli import main as cli_main

    sys.exit(cli_main(["sweep", *sys.argv[1:]]))
