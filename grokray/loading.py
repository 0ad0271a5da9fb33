"""A sweep for a notebook: `grokray.load(OUT)` (its tables), `grokray.load_snapshots(OUT)` (the
kept parameters) and `grokray.load_model(OUT, config_hash, seed, step)` (a trained model rebuilt).

`load_model` rebuilds a single-seed model of the trial's family from its stored config and one
snapshot (grokray.snapshots); the model answers the family's usual views (`logits`,
`embeddings`, `activations`, `hooks`), on the task and split the seed trained on. The example is
in docs/snapshots.md.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import pandas as pd

from grokray.errors import GrokrayError

__all__ = ["LoadedModel", "load", "load_model", "load_snapshots"]


def load(out: str | os.PathLike) -> Any:
    """The sweep's trials and curves (`.trials`, `.curves`: DataFrames;
    grokray_analysis.load.Sweep)."""
    from grokray_analysis.load import load as load_sweep

    return load_sweep(out)


def load_snapshots(out: str | os.PathLike, config_hash: str | None = None,
              seed: int | None = None) -> pd.DataFrame:
    """The snapshots table (one row per config, seed, step, tensor), optionally of one config
    and seed; `grokray.snapshots.to_tensor(row)` shapes a row's values."""
    from grokray import files
    from grokray.sweep.store import SNAPSHOTS

    t = files.read_dir(os.fspath(out), SNAPSHOTS, required=("config_hash", "seed", "step"))
    if t.damaged:
        raise GrokrayError(files.problems_error(os.fspath(out), t.damaged))
    df = t.frame.drop(columns="file") if "file" in t.frame else t.frame
    if config_hash is not None and len(df):
        df = df[df["config_hash"] == config_hash]
    if seed is not None and len(df):
        df = df[df["seed"] == int(seed)]
    return df.reset_index(drop=True)


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
    import torch

    from grokray.config import TrialConfig
    from grokray.models.registry import get_family
    from grokray.snapshots import to_tensor
    from grokray.sweep.store import read_trials
    from grokray.tasks import make_task, split

    out = os.fspath(out)
    trials = read_trials(out, columns=["config_hash", "seed", "config_json"])
    row = trials[(trials["config_hash"] == config_hash) & (trials["seed"] == int(seed))]
    if row.empty:
        raise GrokrayError(f"no trial {config_hash} seed {seed} in {out}; its trials table lists "
                           f"{trials['config_hash'].nunique()} config(s), e.g. "
                           f"{', '.join(trials['config_hash'].unique()[:3])}")
    cfg = TrialConfig.from_dict(json.loads(row["config_json"].iloc[0]))
    cfg = cfg.with_overrides({"seeds": [int(seed)], "device": "cpu"})
    fam = get_family(cfg.arch)
    if fam.model is None:
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
    dtype = {"float32": torch.float32, "float64": torch.float64}[cfg.dtype]
    model = fam.model(cfg, task.n_in, task.n_out, [int(seed)], torch.device("cpu"), dtype)
    kept = {r["tensor"]: r for _, r in at.iterrows()}
    missing = [k for k in model.params if k not in kept]
    if missing:
        raise GrokrayError(f"the snapshot keeps only {', '.join(kept)}; a model needs every "
                           f"parameter (missing {', '.join(missing)}): snapshots.tensors empty")
    with torch.no_grad():
        for name, p in model.params.items():
            p.copy_(torch.from_numpy(to_tensor(kept[name]))[None])
    tr, va = split(task, cfg.train_frac, cfg.seed_data_seed(int(seed)))
    return LoadedModel(model=model, config=cfg, task=task, train=tr, val=va, step=int(step),
                       tags=str(at["tags"].iloc[0]))
