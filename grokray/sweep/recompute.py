"""`grokray recompute OUT --metric NAME [--where ...]` (`grokray.recompute`): a registered metric
at every snapshot of a sweep, without training again.

For each selected (config, seed) of the sweep dir OUT (or of every sweep dir under OUT, a
ledger root), the model is rebuilt from each of its snapshots (grokray.snapshots.read.Snapshot;
as `grokray.load_model` rebuilds it) and the metric (grokray.metrics.registry) computed on it,
in this process, on the CPU. The values go to files of their own,

    OUT/<sweep>/recomputed/<metric>/<config_hash>-<recompute_id>.parquet

one per (config, metric) per run, one row per (seed, snapshot step): the curves' key columns
(`run_id` is the trial's run, whose snapshot was read), `metric`, `metric_version`,
`recompute_id`, and the values named as curve columns (`metric_eff_modes`). They are written
through the store's atomic writer (whole or not at all) under the sweep dir's writer lock, and
never rewritten. A (config, seed, step) whose row exists at the metric's current version, for
the trial's current run, is not computed again (read once the lock is held): a second call
computes only what is missing, and an interrupted call loses nothing it finished (each config's
file is written when the config is done; on Ctrl-C, or when a metric raises, the values of the
current one finished so far are written first).

Readers (`grokray analyze`, `grokray.load`: grokray_analysis.load) put the values beside the online
curves (grokray.reader.merge_recomputed: an online value wins where it exists, they agree);
`repair` drops rows whose trial run is gone and duplicate rows, `status --repair` quarantines
an unreadable file (grokray.sweep.store).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np
import pandas as pd
import torch

from grokray import reader
from grokray.config import TrialConfig
from grokray.errors import GrokrayError, error_line
from grokray.families import get_family
from grokray.metrics.registry import get_metric
from grokray.schema import (
    RECOMPUTED,
    RECOMPUTED_KEY_COLUMNS,
    RECOMPUTED_REQUIRED_COLUMNS,
    SCHEMA_VERSION,
    SNAPSHOT_COLUMNS,
)
from grokray.snapshots.read import SeedSnapshots, Snapshot
from grokray.sweep import store
from grokray.sweep.lock import WriterLock
from grokray.sweep.progress import CountDisplay

__all__ = ["Filter", "Summary", "parse_where", "recompute", "select_trials", "sweep_dirs"]

TRIALS, SNAPSHOTS = "trials", "snapshots"


# ----------------------------------------------------------------------------- --where


@dataclass(frozen=True)
class Filter:
    """One `--where` condition: column `key` (not) in `values`."""

    key: str
    values: tuple[str, ...]
    negate: bool = False

    def __str__(self) -> str:
        return f"{self.key}{'!=' if self.negate else '='}{','.join(self.values)}"


WHERE_HELP = ("KEY=VALUE or KEY!=VALUE, a trials column (group, arch, arm, config_hash, seed, "
              "status, sweep, model_d, ...); VALUE may list alternatives: seed=0,1")


def parse_where(items: Sequence[str] | None) -> list[Filter]:
    """`--where` items as filters (ANDed); GrokrayError (one line) on a malformed one."""
    out = []
    for item in items or ():
        neg = "!=" in item
        key, sep, value = item.partition("!=" if neg else "=")
        key = key.strip()
        values = tuple(v.strip() for v in value.split(","))
        if not sep or not key or not all(values) or any(c in key for c in "=!<> "):
            raise GrokrayError(f"bad --where {item!r}: expected KEY=VALUE or KEY!=VALUE "
                               "(values comma-separated), e.g. group=S4, arch!=mlp, seed=0,1")
        out.append(Filter(key, values, neg))
    return out


def select_trials(trials: pd.DataFrame, filters: Sequence[Filter]) -> pd.DataFrame:
    """The rows matching every filter: a value equals a cell as text, or as a number in a
    numeric column. GrokrayError (one line) naming an unknown column or an empty selection."""
    df = trials
    for f in filters:
        if f.key not in df.columns:
            common = [c for c in ("sweep", "group", "arch", "arm", "config_hash", "seed",
                                  "status") if c in df.columns]
            raise GrokrayError(f"--where {f}: no trials column {f.key!r}; e.g. "
                               f"{', '.join(common)} (any column of the trials table)")
        col = df[f.key]
        mask = pd.Series(False, index=df.index)
        for v in f.values:
            mask |= col.astype(str) == v
            num = pd.to_numeric(pd.Series([v]), errors="coerce").iloc[0]
            if not np.isnan(num) and pd.api.types.is_numeric_dtype(col):
                mask |= col.astype(float) == float(num)
        df = df[~mask if f.negate else mask]
    if df.empty and len(filters):
        raise GrokrayError(f"no trials match --where {' '.join(map(str, filters))} "
                           f"({len(trials)} seed rows in all)")
    return df


# ----------------------------------------------------------------------------- the dirs


def sweep_dirs(out: str) -> list[str]:
    """OUT itself when it is a sweep dir (it has trials/), else the sweep dirs directly under
    it (a ledger root). GrokrayError (one line) when there is none."""
    try:
        loc = reader.Location.of(out)
        if not loc.is_dir():
            raise GrokrayError(f"no such directory: {out}; give a sweep dir (OUT/<sweep>) or "
                               "a dir of sweep dirs")
        if loc.is_dir(TRIALS):
            return [out]
        subs = loc.subdirs()
    except (OSError, ValueError) as exc:
        raise GrokrayError(f"cannot open {out}: {' '.join(str(exc).split())[:200]}") from None
    found = [reader.join_uri(out, s) for s in subs if loc.is_dir(s, TRIALS)]
    if not found:
        raise GrokrayError(f"{out} is not a sweep dir (no trials/) and holds none; give "
                           "OUT/<sweep> of a sweep that ran, or the output root of several")
    return found


# ----------------------------------------------------------------------------- a snapshot


# ----------------------------------------------------------------------------- the plan


@dataclass
class _Job:
    """One config of one sweep dir: the seeds and steps still to compute, per metric."""

    sweep_dir: str
    sweep: str
    config_hash: str
    config_json: str
    seeds: dict[int, str]
    """seed -> its trial's run_id"""
    todo: dict[str, dict[int, list[int]]]
    """metric -> seed -> steps missing"""
    files: list[str]
    """the snapshots files holding its rows"""

    @property
    def n(self) -> int:
        """(metric, seed, step) values to compute."""
        return sum(len(v) for t in self.todo.values() for v in t.values())


@dataclass
class Summary:
    """What a `recompute` did."""

    recompute_id: str
    metrics: list[str]
    dirs: list[str]
    computed: int = 0
    """(metric, seed, step) values computed now"""
    already: int = 0
    """values found on disk at the metric's version (not computed again)"""
    configs: int = 0
    seeds: int = 0
    files: list[str] = field(default_factory=list)
    """the files written"""
    skipped: dict[str, int] = field(default_factory=dict)
    """seeds left out, by reason"""
    wall_s: float = 0.0

    def line(self) -> str:
        """One line for the terminal."""
        skip = "".join(f", {v} seed(s) skipped: {k}" for k, v in self.skipped.items() if v)
        return (f"recompute {', '.join(self.metrics)}: {self.computed} value(s) computed, "
                f"{self.already} already on disk, over {self.configs} config(s), {self.seeds} "
                f"seed(s) in {len(self.dirs)} sweep dir(s); {len(self.files)} file(s) written "
                f"(run {self.recompute_id}) in {self.wall_s:.1f} s{skip}")


def _read_trials(sweep_dir: str) -> pd.DataFrame:
    t = reader.read_dir(sweep_dir, TRIALS, required=("config_hash", "seed", "status", "run_id"))
    if t.damaged:
        raise GrokrayError(reader.problems_error(sweep_dir, t.damaged))
    df, _, _ = reader.dedupe(t.frame.drop(columns="file"))
    if df.empty:
        return df
    df = df.copy()
    df["seed"] = pd.to_numeric(df["seed"]).astype("int64")
    df["_dir"] = sweep_dir
    return df


def _snapshot_index(sweep_dir: str) -> pd.DataFrame:
    t = reader.read_dir(sweep_dir, SNAPSHOTS, columns=["config_hash", "seed", "run_id", "step"],
                       required=("config_hash", "seed", "step"))
    if t.damaged:
        raise GrokrayError(reader.problems_error(sweep_dir, t.damaged))
    df = t.frame.drop_duplicates()  # one row per (config, seed, run, step, file)
    if len(df):
        df = df.assign(seed=pd.to_numeric(df["seed"]).astype("int64"),
                       step=pd.to_numeric(df["step"]).astype("int64"))
    return df


def _done(sweep_dir: str, metric: str, version: int) -> set[tuple[str, int, str, int]]:
    t = reader.read_dir(sweep_dir, f"{RECOMPUTED}/{metric}",
                       columns=list(RECOMPUTED_REQUIRED_COLUMNS),
                       required=RECOMPUTED_REQUIRED_COLUMNS)
    if t.damaged:
        raise GrokrayError(reader.problems_error(sweep_dir, t.damaged))
    df = t.frame
    df = df[pd.to_numeric(df["metric_version"]) == version]
    return set(zip(df["config_hash"], df["seed"].astype(int), df["run_id"],
                   df["step"].astype(int), strict=True))


def _plan(dirs: list[str], metrics: list[Any], filters: list[Filter], skip_missing: bool,
          summary: Summary) -> list[_Job]:
    """The jobs computing `metrics` over the trials of `dirs` that `filters` select: the seeds
    with snapshots (GrokrayError naming those without, unless `skip_missing`, or when none has
    any); what is skipped goes to `summary`."""
    trials = pd.concat([_read_trials(d) for d in dirs], ignore_index=True, sort=False)
    if trials.empty:
        raise GrokrayError(f"no trials rows in {', '.join(dirs)}")
    trials = select_trials(trials, filters)
    index = {d: _snapshot_index(d) for d in dirs}
    if all(ix.empty for ix in index.values()):
        where = dirs[0] if len(dirs) == 1 else f"any sweep dir under {os.path.dirname(dirs[0])}"
        raise GrokrayError(f"no snapshots in {where}: its sweeps ran with snapshots off, or "
                           "before grokray kept them; run the sweep again with --force to keep "
                           "them")
    has: dict[tuple[str, str, int, str], list[int]] = {}
    for d, ix in index.items():
        for (h, s, r), g in ix.groupby(["config_hash", "seed", "run_id"]):
            has[(d, h, int(s), r)] = sorted(set(g["step"].astype(int)))
    missing, skipped_model, skipped_failed = [], 0, 0
    chosen = []
    for row in trials.to_dict("records"):
        k = (row["_dir"], row["config_hash"], int(row["seed"]), row["run_id"])
        if k in has:
            chosen.append(row)
            continue
        if row["status"] == "failed":
            skipped_failed += 1
        elif get_family(str(row["arch"])).model is None:
            skipped_model += 1
        else:
            missing.append(row)
    if missing and not skip_missing:
        r = missing[0]
        n_cfg = len({(m["_dir"], m["config_hash"]) for m in missing})
        raise GrokrayError(
            f"{len(missing)} selected seed(s) of {n_cfg} config(s) have no snapshots, e.g. "
            f"{r.get('sweep', '')} {r['config_hash']} seed {r['seed']} ({r.get('arm')} "
            f"{r.get('group')}): "
            "they ran with snapshots off or before grokray kept them; run their sweep again "
            "with --force to keep them, leave them out with --where, or pass --skip-missing")
    if not chosen:
        raise GrokrayError(f"none of the {len(trials)} selected seed(s) has snapshots "
                           f"({skipped_model} of a family that keeps none, {skipped_failed} "
                           "failed); nothing to recompute")
    summary.skipped = {"no snapshots": len(missing),
                       "family keeps no model snapshots": skipped_model,
                       "failed without snapshots": skipped_failed}
    return _jobs(chosen, has, index, metrics, summary)


def _jobs(chosen: list[dict[str, Any]], has: dict[tuple[str, str, int, str], list[int]],
          index: dict[str, pd.DataFrame], metrics: list[Any], summary: Summary) -> list[_Job]:
    """One job per config of the `chosen` trials rows, with the (metric, seed, step) values
    not on disk at the metric's version (`has`: the snapshot steps of each trial run)."""
    dirs = list(index)
    done = {(d, m.name): _done(d, m.name, m.version) for d in dirs for m in metrics}
    snap_files: dict[tuple[str, str], list[str]] = {}
    for d, ix in index.items():
        for h, g in ix.groupby("config_hash"):
            snap_files[(d, h)] = sorted(set(g["file"]))
    jobs: dict[tuple[str, str], _Job] = {}
    seeds = set()
    for row in chosen:
        d = row["_dir"]
        h, s, r = row["config_hash"], int(row["seed"]), row["run_id"]
        steps = has[(d, h, s, r)]
        job = jobs.get((d, h))
        if job is None:
            sweep = row.get("sweep")
            sweep = sweep if isinstance(sweep, str) and sweep else d.rstrip("/").rsplit("/")[-1]
            job = jobs[(d, h)] = _Job(d, sweep, h, row["config_json"],
                                      {}, {m.name: {} for m in metrics},
                                      snap_files.get((d, h), []))
        job.seeds[s] = r
        seeds.add((d, h, s))
        for m in metrics:
            todo = [t for t in steps if (h, s, r, t) not in done[(d, m.name)]]
            summary.already += len(steps) - len(todo)
            if todo:
                job.todo[m.name][s] = todo
    summary.seeds = len(seeds)
    summary.configs = len(jobs)
    return [j for j in jobs.values() if j.n]


# ----------------------------------------------------------------------------- the run


def _value(metric: str, col: str, v: Any) -> float:
    if isinstance(v, torch.Tensor):
        if v.numel() != 1:
            raise GrokrayError(f"metric {metric!r} returned {col!r} of shape "
                               f"{tuple(v.shape)}; a metric returns one number per name")
        return float(v.detach().reshape(-1)[0].cpu())
    try:
        return float(v)
    except (TypeError, ValueError):
        raise GrokrayError(f"metric {metric!r} returned {col!r} = {v!r}; a metric returns "
                           "one number per name") from None


def _run_job(job: _Job, metrics: list[Any], recompute_id: str, progress: CountDisplay,
             tasks: dict) -> dict[str, list[dict[str, Any]]]:
    """Compute `job`; returns the rows by metric. Interrupted (KeyboardInterrupt, or a metric
    that fails: GrokrayError), the exception carries the rows finished so far as `.rows`."""
    cfg = TrialConfig.from_dict(json.loads(job.config_json))
    loc = reader.Location.of(job.sweep_dir)
    want = [c for c in SNAPSHOT_COLUMNS if c not in ("schema_version", "sweep", "shape")]
    frames = [loc.read_table(loc.join(SNAPSHOTS, f), [*want, "shape"]) for f in job.files]
    snaps = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=want)
    snaps = snaps[snaps["config_hash"] == job.config_hash]
    rows: dict[str, list[dict[str, Any]]] = {m.name: [] for m in metrics}
    key = {"schema_version": SCHEMA_VERSION, "sweep": job.sweep, "config_hash": job.config_hash,
           "group": cfg.group, "arch": cfg.arch, "arm": cfg.arm, "recompute_id": recompute_id}
    try:
        for seed, run_id in sorted(job.seeds.items()):
            wanted = sorted({t for m in metrics for t in job.todo[m.name].get(seed, [])})
            if not wanted:
                continue
            mine = snaps[(snaps["seed"] == seed) & (snaps["run_id"] == run_id)]
            data = SeedSnapshots(cfg, job.config_hash, seed, run_id, job.sweep, mine, tasks)
            for step in wanted:
                snap = Snapshot(data, step)
                for m in metrics:
                    if step not in job.todo[m.name].get(seed, ()):
                        continue
                    try:
                        out = m.fn(snap)
                    except GrokrayError:
                        raise
                    except Exception as exc:  # noqa: BLE001 - a metric's own failure, said once
                        raise GrokrayError(
                            f"metric {m.name!r} failed on {job.sweep} {job.config_hash} seed "
                            f"{seed} step {step}: {error_line(exc)}; what finished is saved, "
                            "fix the metric and run the same command to resume") from exc
                    vals = {m.column(k): _value(m.name, k, v) for k, v in (out or {}).items()}
                    rows[m.name].append({**key, "run_id": run_id, "seed": seed, "step": step,
                                         "metric": m.name, "metric_version": m.version, **vals})
                    progress.step(1, f"{job.sweep} {job.config_hash} seed {seed}")
    except (KeyboardInterrupt, GrokrayError) as exc:
        exc.rows = rows  # type: ignore[attr-defined]
        raise
    return rows


def _write(job: _Job, metrics: list[Any], rows: dict[str, list[dict[str, Any]]],
           recompute_id: str) -> list[str]:
    loc = store.Location.of(job.sweep_dir)
    written = []
    for m in metrics:
        r = rows.get(m.name) or []
        if not r:
            continue
        df = pd.DataFrame(r)
        vals = [c for c in df.columns if c not in RECOMPUTED_KEY_COLUMNS]
        df = df[RECOMPUTED_KEY_COLUMNS + vals]
        for c in ("seed", "step", "metric_version", "schema_version"):
            df[c] = df[c].astype("int64")
        for c in vals:
            df[c] = df[c].astype("float64")
        path = loc.join(RECOMPUTED, m.name, store.result_file_name(job.config_hash,
                                                                   recompute_id))
        loc.write_table(path, df)
        written.append(path)
    return written


def _refresh(sweep_dir: str, jobs: list[_Job], metrics: list[Any], progress: CountDisplay) -> None:
    """Drop from `jobs` what another run wrote since they were planned (read again under the
    sweep dir's lock, so that no value is written twice)."""
    for m in metrics:
        done = _done(sweep_dir, m.name, m.version)
        for job in jobs:
            for seed, steps in list(job.todo[m.name].items()):
                left = [t for t in steps if (job.config_hash, seed, job.seeds[seed], t)
                        not in done]
                progress.less(len(steps) - len(left))
                job.todo[m.name][seed] = left


def recompute(out: str | os.PathLike, metrics: str | Iterable[str], *,
              where: Sequence[str] | Sequence[Filter] | None = None, skip_missing: bool = False,
              progress: bool | None = None, stream: TextIO | None = None,
              command: str = "") -> Summary:
    """Compute `metrics` (registered names) at every snapshot of the selected trials of the
    sweep dir `out` (or of each sweep dir under it), writing what is missing. `where`:
    `--where` strings or Filters. `progress`: True a bar, False a line per config, None a bar
    on a terminal; lines go to `stream` (stderr). Returns the Summary. GrokrayError (one line)
    on an unknown metric, a bad filter, no snapshots, a held lock, a failing metric."""
    t0 = time.monotonic()
    out = os.fspath(out)
    names = [metrics] if isinstance(metrics, str) else list(dict.fromkeys(metrics))
    if not names:
        raise GrokrayError("no metric given; --metric NAME (grokray recompute --list)")
    ms = [get_metric(n) for n in names]
    filters = [w if isinstance(w, Filter) else None for w in (where or ())]
    if any(f is None for f in filters):
        filters = parse_where([str(w) for w in where or ()])
    dirs = sweep_dirs(out)
    recompute_id = store.new_run_id()
    summary = Summary(recompute_id, names, dirs)
    jobs = _plan(dirs, ms, filters, skip_missing, summary)
    total = sum(j.n for j in jobs)
    tasks: dict = {}
    cmd = command or f"grokray recompute {out} --metric {' '.join(names)}"
    with CountDisplay(total, len(jobs), title="recompute", unit="values", live=progress,
                      stream=stream) as prog:
        for d in dirs:
            mine = [j for j in jobs if j.sweep_dir == d]
            if not mine:
                continue
            with WriterLock(d, cmd):
                _refresh(d, mine, ms, prog)
                for job in mine:
                    if not job.n:
                        continue
                    t1 = time.monotonic()
                    try:
                        rows = _run_job(job, ms, recompute_id, prog, tasks)
                    except (KeyboardInterrupt, GrokrayError) as exc:
                        got = getattr(exc, "rows", {})
                        summary.files += _write(job, ms, got, recompute_id)
                        n = sum(len(v) for v in got.values())
                        summary.computed += n
                        if isinstance(exc, KeyboardInterrupt):
                            print(f"recompute interrupted: {summary.computed} value(s) of this "
                                  f"run are saved ({n} of the config in progress); run the "
                                  "same command to compute the rest",
                                  file=stream or sys.stderr, flush=True)
                        raise
                    summary.files += _write(job, ms, rows, recompute_id)
                    summary.computed += sum(len(v) for v in rows.values())
                    prog.item_done(f"{job.sweep} {job.config_hash}: {job.n} value(s) in "
                                   f"{time.monotonic() - t1:.1f}s")
    summary.wall_s = time.monotonic() - t0
    return summary
