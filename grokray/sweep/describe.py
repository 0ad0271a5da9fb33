"""What a sweep plan will do, for people and programs: `describe` (the dry run's and a run's
first lines), `plan_summary` (the figures `grokray sweep --dry-run --json` prints),
`pack_summary` (what `--pack` makes of the configs) and `auto_shapes` (what `model.d` /
`model.rank: auto` resolve to). Read by `grokray sweep`, `grokray reproduce` and `grokray
slurm`; torch and pandas load inside the functions."""

from __future__ import annotations

import os


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
