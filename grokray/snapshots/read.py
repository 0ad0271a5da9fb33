"""Snapshots read back: `load_snapshots(OUT)` (the table), `load_model(OUT, config_hash, seed,
step)` (a trained model rebuilt, for a notebook; `grokray.load_model`), and `Snapshot`, one
seed's snapshot at one step as a metric computed at snapshots receives it (`grokray recompute`:
grokray.sweep.recompute; the metrics: grokray.metrics.registry).

A model is rebuilt as a single-seed model of the trial's family from its stored config and one
snapshot; it answers the family's usual views (`logits`, `embeddings`, `activations`, `hooks`),
on the task and split the seed trained on. The example is in docs/snapshots.md.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
import torch

from grokray import reader
from grokray.config import TrialConfig
from grokray.errors import GrokrayError, SchemaError
from grokray.families import get_family
from grokray.metrics.mechanism import MetricInputs
from grokray.models.chunks import LOGIT_BUDGET, chunk_pairs
from grokray.schema import ID_COLUMNS
from grokray.snapshots.record import to_tensor
from grokray.tasks import Task, make_task, pred_table, split

__all__ = ["LoadedModel", "SeedSnapshots", "Snapshot", "load_model", "load_snapshots"]

TRIALS, SNAPSHOTS = "trials", "snapshots"


def load_snapshots(out: str | os.PathLike, config_hash: str | None = None,
                   seed: int | None = None) -> pd.DataFrame:
    """The snapshots table (one row per config, seed, step, tensor), optionally of one config
    and seed; `grokray.snapshots.to_tensor(row)` shapes a row's values."""
    t = reader.read_dir(os.fspath(out), SNAPSHOTS, required=("config_hash", "seed", "step"))
    if t.damaged:
        raise GrokrayError(reader.problems_error(os.fspath(out), t.damaged))
    df = t.frame.drop(columns="file") if "file" in t.frame else t.frame
    if config_hash is not None and len(df):
        df = df[df["config_hash"] == config_hash]
    if seed is not None and len(df):
        df = df[df["seed"] == int(seed)]
    return df.reset_index(drop=True)


def one_seed_model(cfg: TrialConfig, task: Task) -> Any:  # noqa: ANN401 - Model
    """A fresh model of `cfg`'s family holding its one seed (`cfg.seeds`), on the CPU, in the
    trial's dtype."""
    dtype = {"float32": torch.float32, "float64": torch.float64}[cfg.dtype]
    return get_family(cfg.arch).model(cfg, task.n_in, task.n_out, list(cfg.seeds),
                                      torch.device("cpu"), dtype)


def set_params(model: Any, tensors: dict[str, np.ndarray]) -> None:  # noqa: ANN401 - Model
    """Copy a snapshot's tensors (each parameter's, unbatched) into a one-seed model."""
    with torch.no_grad():
        for name, p in model.params.items():
            p.copy_(torch.from_numpy(np.ascontiguousarray(tensors[name]))[None])


@dataclass
class LoadedModel:
    """A model rebuilt from a snapshot, with what it was trained on."""

    model: Any
    """the family's model (grokray.models.protocol.Model) holding one seed: tensors [1, ...]"""
    config: Any
    """its TrialConfig (seeds: the one seed)"""
    task: Any
    """the task (grokray.tasks.Task: a, b, y over every pair)"""
    train: Any
    """indices into the task of the seed's train pairs (LongTensor)"""
    val: Any
    """indices of its validation pairs"""
    step: int
    """the snapshot's step"""
    tags: str
    """why it was taken: log, init, memorize, grok, end (comma-joined)"""


def load_model(out: str | os.PathLike, config_hash: str, seed: int,
               step: int | str = "end") -> LoadedModel:
    """The model of trial `config_hash`, seed `seed`, at snapshot `step` (a step, or a tag:
    `end` (default), `grok`, `memorize`, `init`), on the CPU."""
    out = os.fspath(out)
    t = reader.read_dir(out, TRIALS, columns=["config_hash", "seed", "config_json"],
                       required=ID_COLUMNS)
    if t.damaged:
        raise SchemaError(reader.problems_error(out, t.damaged))
    trials = t.frame
    row = trials[(trials["config_hash"] == config_hash) & (trials["seed"] == int(seed))]
    if row.empty:
        raise GrokrayError(f"no trial {config_hash} seed {seed} in {out}; its trials table lists "
                           f"{trials['config_hash'].nunique()} config(s), e.g. "
                           f"{', '.join(trials['config_hash'].unique()[:3])}")
    cfg = TrialConfig.from_dict(json.loads(row["config_json"].iloc[0]))
    cfg = cfg.with_overrides({"seeds": [int(seed)], "device": "cpu"})
    if get_family(cfg.arch).model is None:
        raise GrokrayError(f"arch {cfg.arch} has no gradient-trained model to rebuild; read its "
                           "kept tensors with grokray.load_snapshots(OUT)")
    snap = load_snapshots(out, config_hash, seed)
    if snap.empty:
        raise GrokrayError(f"no snapshots of {config_hash} seed {seed} in {out} (it ran with "
                           "snapshots off, or before grokray kept them); run the sweep again "
                           "with --force to keep them")
    steps = sorted(set(snap["step"]))
    if isinstance(step, str):
        tagged = snap[snap["tags"].str.split(",").map(lambda t: step in t)]
        if tagged.empty:
            raise GrokrayError(f"no snapshot tagged {step!r} of {config_hash} seed {seed}; "
                               f"valid: a step of {steps} or a tag of "
                               f"{sorted({t for x in snap['tags'] for t in x.split(',')})}")
        step = int(tagged["step"].iloc[0])
    at = snap[snap["step"] == int(step)]
    if at.empty:
        raise GrokrayError(f"no snapshot of {config_hash} seed {seed} at step {step}; "
                           f"valid: {steps}")
    task = make_task(cfg.group, cfg.op)
    model = one_seed_model(cfg, task)
    kept = {r["tensor"]: r for _, r in at.iterrows()}
    missing = [k for k in model.params if k not in kept]
    if missing:
        raise GrokrayError(f"the snapshot keeps only {', '.join(kept)}; a model needs every "
                           f"parameter (missing {', '.join(missing)}): snapshots.tensors empty")
    set_params(model, {k: to_tensor(kept[k]) for k in model.params})
    tr, va = split(task, cfg.train_frac, cfg.seed_data_seed(int(seed)))
    return LoadedModel(model=model, config=cfg, task=task, train=tr, val=va, step=int(step),
                       tags=str(at["tags"].iloc[0]))


class SeedSnapshots:
    """One (config, seed) of a sweep: its config, task, split, snapshot tensors by step (the
    rows `frame` of the snapshots table), and one model that each snapshot's parameters are
    copied into in turn. `tasks` caches tasks by (group, op) across seeds."""

    def __init__(self, cfg: Any, config_hash: str, seed: int, run_id: str, sweep: str,
                 frame: pd.DataFrame, tasks: dict) -> None:
        self.cfg = cfg.with_overrides({"seeds": [int(seed)], "device": "cpu"})
        self.config_hash, self.seed, self.run_id = config_hash, int(seed), run_id
        self.sweep = sweep
        self.family = get_family(self.cfg.arch)
        key = (self.cfg.group, self.cfg.op)
        if key not in tasks:
            tasks[key] = make_task(*key)
        self.task = tasks[key]
        self.train, self.val = split(self.task, self.cfg.train_frac,
                                     self.cfg.seed_data_seed(self.seed))
        self.tensors: dict[int, dict[str, np.ndarray]] = {}
        self.tags: dict[int, str] = {}
        for step, rows in frame.groupby("step", sort=True):
            self.tensors[int(step)] = {r["tensor"]: to_tensor(r) for _, r in rows.iterrows()}
            self.tags[int(step)] = str(rows["tags"].iloc[0])
        self.steps = sorted(self.tensors)
        self._model: Any = None
        self._loaded: int | None = None
        self._views: dict[int, Snapshot] = {}

    def model_at(self, step: int, own: bool) -> Any:
        """The model with the parameters of `step` (None: the family has no model): the
        shared one (`own` False: reloaded for each step in turn), or a model of its own."""
        if self.family.model is None:
            return None
        if own or self._model is None:
            m = one_seed_model(self.cfg, self.task)
            if not own:
                self._model = m
        else:
            m = self._model
        if own or self._loaded != step:
            kept = self.tensors[step]
            missing = [k for k in m.params if k not in kept]
            if missing:
                raise GrokrayError(
                    f"{self.sweep} {self.config_hash} seed {self.seed} step {step}: the "
                    f"snapshot keeps only {', '.join(kept)}, a model needs every parameter "
                    f"(missing {', '.join(missing)}); a metric that reads those tensors can "
                    "use snap.tensors without snap.model")
            set_params(m, kept)
            if not own:
                self._loaded = step
        return m

    def view(self, step: int) -> Snapshot:
        """The snapshot at `step` for `Snapshot.at` (a model of its own, kept)."""
        if step not in self._views:
            self._views[step] = Snapshot(self, step, own=True)
        return self._views[step]


class Snapshot:
    """One seed's snapshot at one step, as a metric function sees it. The model, logits and
    inputs are built on first use."""

    def __init__(self, seed_data: SeedSnapshots, step: int, own: bool = False) -> None:
        self._s, self._own = seed_data, own
        self.config = seed_data.cfg
        """the trial's TrialConfig (seeds: this one seed; device: cpu)"""
        self.config_hash: str = seed_data.config_hash
        self.seed: int = seed_data.seed
        self.step: int = int(step)
        """the snapshot's step"""
        self.tags: str = seed_data.tags[self.step]
        """why it was taken: log, init, memorize, grok, end (comma-joined)"""
        self.tensors: dict[str, np.ndarray] = seed_data.tensors[self.step]
        """the kept tensors by name, shaped (numpy; the trial's dtype)"""
        self.task = seed_data.task
        """the task (grokray.tasks.Task: a, b, y over every pair, n_in, n_out, group, modulus)"""
        self.train = seed_data.train
        """indices into the task of the seed's train pairs (LongTensor, sorted)"""
        self.val = seed_data.val
        """indices of its validation pairs"""
        self.steps: list[int] = seed_data.steps
        """every snapshot step of this seed"""

    def at(self, step: int | str) -> Snapshot:
        """The same seed's snapshot at another step, or tag: `end`, `grok`, `memorize`,
        `init`, or `last` (its last snapshot, the end unless it diverged)."""
        s = self._s
        if isinstance(step, str):
            if step == "last":
                return s.view(s.steps[-1])
            hit = [t for t in s.steps if step in s.tags[t].split(",")]
            if not hit:
                raise GrokrayError(f"{s.config_hash} seed {s.seed} has no snapshot tagged "
                                   f"{step!r}")
            return s.view(hit[0])
        if int(step) not in s.tensors:
            raise GrokrayError(f"{s.config_hash} seed {s.seed} has no snapshot at step {step}; "
                               f"valid: {s.steps}")
        return s.view(int(step))

    @cached_property
    def model(self) -> Any:
        """The family's model holding this seed (tensors [1, ...], CPU, the trial's dtype;
        grokray.models.protocol.Model), or None for a family without one (RFM)."""
        return self._s.model_at(self.step, self._own)

    @cached_property
    def logits(self) -> Any:
        """[N, n_out] logits of every task pair (chunked as the trainer evaluates)."""
        m, task = self.model, self.task
        if m is None:
            raise GrokrayError(f"arch {self.config.arch} has no model to take logits of")
        chunk = chunk_pairs(LOGIT_BUDGET, task.n_out, 1, m.pair_floats)
        with torch.no_grad():
            parts = [m.logits(task.a[i:i + chunk], task.b[i:i + chunk])[0]
                     for i in range(0, len(task), chunk)]
        return torch.cat(parts, 0)

    @cached_property
    def inputs(self) -> Any:
        """The trainer's metric inputs at this step (grokray.metrics.mechanism.MetricInputs,
        one seed): the embedding, the predicted table (every pair evaluated, as online when
        the task has at most metrics.eval_max_pairs pairs), the model's views, the train
        pairs."""
        m, task = self.model, self.task
        table = None
        if len(task) <= self.config.metrics.eval_max_pairs:
            table = pred_table(task, self.logits.argmax(-1)[None])
        tr = self.train
        return MetricInputs(group=task.group, E=m.embedding(), pred_table=table,
                            hooks=m.hooks(), pairs=(task.a[tr][None], task.b[tr][None]),
                            n_seeds=1)
