"""The Parquet schema (version 4): the contract between `grokray` and `analysis`.

Dependency-free on purpose (no torch, no ray at import): `analysis/` imports the column lists
from here. `trial_frame` and `curve_frame` turn a `TrialResult` into the two tables; the store
(`grokray.sweep.store`) writes them.
"""

from __future__ import annotations

import functools
import platform
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    from grokray.result import TrialResult

SCHEMA_VERSION = 4
"""4: provenance adds ray_node_id and cuda_visible_devices (identity as in 3); 3: config_hash
and config_json cover the effective config (canonical group/op names, only the sections and
fields the arch reads); 2: the same, by whole sections (the shared `model` section entire);
1: every section, names as written. Readers accept all; the sweep store gives older rows their
current identity from config_json (docs/sweeps.md). A version grows by optional columns without
a bump (readers treat a missing optional column as absent): curves gained `weight_norm` and
`weight_norm_<group>`, trials `grok_step_lo`, `eval_schedule`, `evals_per_decade`,
`continued_from`, `continued_from_step`, `checkpoint_step` and `checkpoint_every`; snapshots rows
`state/<name>` (training state in an end snapshot, grokray.optim.state)."""
IDENTITY_VERSION = 3
"""the oldest version whose config_hash is today's identity (older rows are re-identified)"""
TRAINING_SEMANTICS = 1
"""the training-semantics version: bumped by any change of the code that moves a trial's float64
numbers (a trainer fix, a model change); the pins (tests/fixtures/pins/semantics.json) record the
curves each version gives, and tests/unit/test_pins.py fails when the curves move without it.
Written in the `training_semantics` column; a row of another version (or another torch) is not
the same trial for the service's reuse (grokray.service.reuse)"""
"""the oldest version whose config_hash is today's identity (older rows are re-identified)"""

STATUSES = ("grokked", "not_grokked", "diverged", "failed")
"""a seed's outcome (the `status` column)"""
ID_COLUMNS = ["config_hash", "seed", "status", "run_id"]
"""the row identity (config_hash, seed) and what the store needs to resume"""
TRIAL_REQUIRED_COLUMNS = ("schema_version", "config_hash", "seed", "status", "grok_step")
"""columns a trials file must have to be read"""
CURVE_READ_REQUIRED_COLUMNS = ("schema_version", "config_hash", "seed", "step")
"""columns a curves file must have to be read"""

IDENTITY_COLUMNS = ["schema_version", "sweep", "run_id", "config_hash", "seed", "data_seed"]
FINAL_COLUMNS = ["final_train_acc", "final_val_acc", "final_train_loss", "final_val_loss"]
"""float64 outcome columns, null (NaN) where a seed has none (a failed trial)"""
OUTCOME_COLUMNS = [
    "status", "error", "grok_step", "memorize_step", "ungrok_step", "steps_run",
    *FINAL_COLUMNS, "n_params", "wall_s",
]
PROVENANCE_COLUMNS = [
    "grokray_version", "git_commit", "torch_version", "ray_version", "python_version",
    "device", "hostname", "ray_node_id", "cuda_visible_devices", "started_at", "finished_at",
]
OPTIONAL_PROVENANCE_COLUMNS = ["training_semantics", "device_kind", "reused_from"]
"""provenance columns older files lack: `training_semantics` (TRAINING_SEMANTICS of the code that
trained the row), `device_kind` (what kind of device trained it: `cuda:<GPU name>`, or
`cpu:<machine>:<torch's CPU capability>:t<threads>`, as grokray.trialrun.device_kind says; null
when unknown) and `reused_from` (the sweep dir whose row this one was copied from by the sweep
service instead of training it again; null: trained for this dir)"""
OPTIONAL_OUTCOME_COLUMNS = ["grok_step_lo", "continued_from", "continued_from_step",
                            "checkpoint_step"]
"""outcome columns older files lack: `grok_step_lo`, the eval before `grok_step` (the grok
happened in (grok_step_lo, grok_step]; null when censored or grokked at the first eval);
`continued_from` and `continued_from_step`, the config_hash of the smaller-budget run a row was
continued from and the step it picked up from (null: trained from step 0; grokray.sweep.continuing:
the steps trained for this row are steps_run - continued_from_step); `checkpoint_step`, the
step of the checkpoint the run that wrote the row was restored from (null: a run never cut;
grokray.checkpoint)"""
EXTRA_CONFIG_COLUMNS = ["group_order", "arm"]
CONFIG_JSON_COLUMN = "config_json"
NULLABLE_INT_COLUMNS = ["grok_step", "grok_step_lo", "memorize_step", "ungrok_step",
                        "continued_from_step", "checkpoint_step"]

CURVE_KEY_COLUMNS = [
    "schema_version", "sweep", "run_id", "config_hash", "seed", "group", "arch", "arm", "step",
]
CURVE_REQUIRED_COLUMNS = CURVE_KEY_COLUMNS + ["train_loss", "train_acc", "val_loss", "val_acc"]
AXIOM_COLUMNS: dict[str, str] = {"assoc": "loss_assoc", "ident": "loss_ident", "inv": "loss_inv"}
"""FORGE's algebra losses in the curves table: short name of each axiom -> its column"""
WEIGHT_NORM = "weight_norm"
"""the seed's total L2 weight norm (grokray.metrics.norms)"""
CURVE_OPTIONAL_COLUMNS = [*AXIOM_COLUMNS.values(), "lambda_alg", "lr", WEIGHT_NORM]
WEIGHT_NORM_PREFIX = "weight_norm_"
"""a parameter group's L2 norm per seed (`weight_norm_E`; grokray.metrics.norms)"""
METRIC_PREFIX = "metric_"

# config fields whose flattened column would clash with an identity column: the identity wins
# (`data_seed` in the trials table is the split seed actually used; the config's setting, which
# may be null, is in config_json)
_SHADOWED = ("data_seed",)


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def _git_commit() -> str | None:
    root = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and len(commit) == 40 else None


def provenance(device: str) -> dict[str, Any]:
    """Provenance columns known at write time (versions, commit); the trial's own (hostname,
    ray_node_id, cuda_visible_devices, times) come from its result."""
    from grokray import __version__

    torch_mod = sys.modules.get("torch")
    ray_mod = sys.modules.get("ray")
    return {
        "grokray_version": __version__,
        "git_commit": _git_commit(),
        "torch_version": getattr(torch_mod, "__version__", None) or _version("torch"),
        "ray_version": getattr(ray_mod, "__version__", None) if ray_mod else None,
        "python_version": platform.python_version(),
        "device": device,
    }


def _utc(ts: Any) -> pd.Timestamp:
    t = pd.Timestamp(ts)
    return t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")


def trial_frame(result: TrialResult, sweep: str, run_id: str) -> pd.DataFrame:
    """One row per seed of `result`, with every column of the trials table."""
    cfg = result.config
    chash = cfg.config_hash()
    flat = {k: v for k, v in cfg.flat().items() if k not in _SHADOWED}
    prov = provenance(result.device)
    cjson = cfg.canonical_json()
    rows = []
    for s in result.seeds:
        row: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION, "sweep": sweep, "run_id": run_id,
            "config_hash": chash, "seed": int(s.seed), "data_seed": int(s.data_seed),
        }
        row.update(flat)
        row["group_order"] = int(result.group_order)
        row["arm"] = cfg.arm
        row.update({
            "status": s.status, "error": s.error,
            "grok_step": s.grok_step, "grok_step_lo": s.grok_step_lo,
            "memorize_step": s.memorize_step,
            "ungrok_step": s.ungrok_step, "steps_run": int(s.steps_run),
            "final_train_acc": _f(s.final.get("final_train_acc")),
            "final_val_acc": _f(s.final.get("final_val_acc")),
            "final_train_loss": _f(s.final.get("final_train_loss")),
            "final_val_loss": _f(s.final.get("final_val_loss")),
            "n_params": int(result.n_params), "wall_s": float(result.wall_s),
            "continued_from": s.continued_from, "continued_from_step": s.continued_from_step,
            "checkpoint_step": s.checkpoint_step,
        })
        for name, v in sorted(s.metrics.items()):
            row[f"{METRIC_PREFIX}{name}"] = _f(v)
        row.update(prov)
        row["hostname"] = result.hostname  # where the trial ran (None: a lost trial's row)
        row["ray_node_id"] = result.node_id
        row["cuda_visible_devices"] = result.cuda_visible_devices
        row["training_semantics"] = TRAINING_SEMANTICS
        row["device_kind"] = result.device_kind
        row["reused_from"] = None
        row["started_at"] = _utc(result.started_at)
        row["finished_at"] = _utc(result.finished_at)
        row[CONFIG_JSON_COLUMN] = cjson
        rows.append(row)
    df = pd.DataFrame(rows)
    for c in NULLABLE_INT_COLUMNS:
        df[c] = df[c].astype("Int64")
    for c in FINAL_COLUMNS + [c for c in df.columns if c.startswith(METRIC_PREFIX)]:
        df[c] = df[c].astype("float64")  # all null (a failed trial's rows): still float64
    for c in ("error", "git_commit", "ray_version", "ray_node_id", "cuda_visible_devices",
              "continued_from", "device_kind", "reused_from"):
        df[c] = df[c].astype("string")
    return df


def curve_frame(result: TrialResult, sweep: str, run_id: str) -> pd.DataFrame:
    """One row per (seed, eval step) of `result`, keyed like the trials table."""
    cfg = result.config
    c = result.curves.copy()
    if c.empty:
        c = pd.DataFrame(columns=["seed", "step", "train_loss", "train_acc", "val_loss",
                                  "val_acc"])
    key = {
        "schema_version": SCHEMA_VERSION, "sweep": sweep, "run_id": run_id,
        "config_hash": cfg.config_hash(), "group": cfg.group, "arch": cfg.arch, "arm": cfg.arm,
    }
    for k, v in key.items():
        c[k] = v
    c["seed"] = c["seed"].astype("int64")
    c["step"] = c["step"].astype("int64")
    rest = [x for x in c.columns if x not in CURVE_REQUIRED_COLUMNS]
    return c[CURVE_REQUIRED_COLUMNS + rest].reset_index(drop=True)


SNAPSHOT_COLUMNS = ["schema_version", "sweep", "run_id", "config_hash", "seed", "step", "tags",
                    "tensor", "shape", "dtype", "values"]
"""the snapshots table (grokray.snapshots): one row per (config, seed, step, tensor)"""


RECOMPUTED = "recomputed"
"""`grokray recompute`'s tables: `OUT/<sweep>/recomputed/<metric>/<config_hash>-<recompute_id>
.parquet`, one row per (config, seed, step) of a snapshot (grokray.sweep.recompute)"""
RECOMPUTED_KEY_COLUMNS = [
    "schema_version", "sweep", "run_id", "config_hash", "seed", "group", "arch", "arm", "step",
    "metric", "metric_version", "recompute_id",
]
"""the key columns of a recomputed table: the curves' keys (`run_id`: the trial's run, whose
snapshot it read), the metric's name and version, and the recompute run's id; every other
column is a value, named as its curve column (`metric_eff_modes`, `loss_assoc`)"""
RECOMPUTED_REQUIRED_COLUMNS = ("schema_version", "config_hash", "seed", "run_id", "step",
                               "metric", "metric_version", "recompute_id")
"""columns a recomputed file must have to be read"""


def snapshot_frame(result: TrialResult, sweep: str, run_id: str) -> pd.DataFrame:
    """One row per (seed, step, tensor) of `result`'s snapshots, keyed like the curves."""
    key = {"schema_version": SCHEMA_VERSION, "sweep": sweep, "run_id": run_id,
           "config_hash": result.config.config_hash()}
    rows = [{**key, **r} for r in result.snapshots]
    return pd.DataFrame(rows, columns=SNAPSHOT_COLUMNS)


def _f(v: Any) -> float | None:
    return None if v is None else float(v)
